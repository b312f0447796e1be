"""The broadcast team bench.team_broadcast serves from Agno Site (AGENT_MODULES=bench.team_agents).

It mirrors the team bench/agentos_reference/app.py builds with --broadcast-team: a leader and three
members, each on a model id of its own so that bench.fake_openai can pace each one differently.
"""
from __future__ import annotations

from engine import Agent, Team

TEAM_ID = "bench-team"
LEADER_MODEL = "bench-leader"
MEMBER_MODELS = ["bench-member-1", "bench-member-2", "bench-member-3"]

# The members are the team's alone, not agents of their own (AGENT_MODULES needs the list).
AGENTS: list[Agent] = []
TEAMS = [
    Team(
        id=TEAM_ID,
        name="Bench Team",
        mode="broadcast",
        model=f"openai:{LEADER_MODEL}",
        members=[Agent(id=model, name=f"Member {n}", model=f"openai:{model}") for n, model in enumerate(MEMBER_MODELS, 1)],
    )
]
