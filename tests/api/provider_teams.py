"""A team on the provider path (added to AGENT_MODULES by test_teams_provider.py): an OpenAI
leader and two OpenAI members, all answered by the fake OpenAI-compatible server."""
from __future__ import annotations

from engine import Agent, Team

TEAMS = [
    Team(
        id="openai-team", name="OpenAI Team", mode="broadcast", model="openai:gpt-4o-mini", member_timeout=5,
        members=[
            Agent(id="analyst", name="Analyst", role="Analyses", model="openai:gpt-4o-mini"),
            Agent(id="critic", name="Critic", role="Criticises", model="openai:gpt-4o-mini"),
        ],
    ),
]
