"""The agent bench.compare serves from Agno Site (AGENT_MODULES=bench.agents).

It mirrors bench/agentos_reference/app.py: one OpenAI-compatible agent with three runs of history.
"""
from __future__ import annotations

try:
    from agents.runtime import Agent
except ImportError as exc:  # the runtime Agent class is still being written
    raise ImportError(
        "bench.agents needs the runtime Agent class (agents.runtime.Agent, defined in "
        f"agents/runtime/agent.py), which is not importable yet: {exc}"
    ) from exc

AGENTS = [
    Agent(
        id="bench-agent",
        name="Bench Agent",
        model="openai:gpt-4o-mini",
        add_history_to_context=True,
        num_history_runs=3,
    )
]
