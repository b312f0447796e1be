"""The demo team `make run` serves (agents.demo): it loads as a code team with its two members."""
from __future__ import annotations

from agents.registry.code import code_teams_in


def test_the_demo_team_loads_with_its_members() -> None:
    teams = code_teams_in(("agents.demo",))
    assert list(teams) == ["demo-team"]
    team = teams["demo-team"].template
    assert team.mode == "coordinate" and [member.id for member in team.members] == ["demo-researcher", "demo-writer"]
