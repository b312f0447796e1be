"""The demo team `make run` serves beside the seeded demo agent (AGENT_MODULES=agents.demo).

Teams are defined in code, so the demo's is here rather than seeded into the database like the
demo agent. Like that agent it runs on OpenAI when OPENAI_API_KEY is set, else on the offline model.
"""
from __future__ import annotations

import os

from agents.runtime import Agent, CalculatorTools, Team

MODEL = "openai:gpt-4o-mini" if os.environ.get("OPENAI_API_KEY") else "offline:demo"

AGENTS: list[Agent] = []  # the members answer through the team only

TEAMS = [
    Team(
        id="demo-team",
        name="Demo Team",
        description="A researcher and a writer: the leader hands each part of the question to the member it fits.",
        members=[
            Agent(id="demo-researcher", name="Researcher", description="Finds facts and works out numbers", model=MODEL, tools=[CalculatorTools()]),
            Agent(id="demo-writer", name="Writer", description="Writes clear, short prose", model=MODEL),
        ],
        mode="coordinate",
        model=MODEL,
        instructions="Delegate research and arithmetic to the Researcher and the final wording to the Writer, then answer.",
        add_history_to_context=True,
    ),
]
