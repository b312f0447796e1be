"""The agent bench.compare serves from Agno Site (AGENT_MODULES=bench.agents).

It mirrors bench/agentos_reference/app.py: one OpenAI-compatible agent with three runs of history.
"""
from __future__ import annotations

from engine import Agent

AGENTS = [
    Agent(
        id="bench-agent",
        name="Bench Agent",
        model="openai:gpt-4o-mini",
        add_history_to_context=True,
        num_history_runs=3,
    )
]
