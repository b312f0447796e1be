"""The offline demo model as a team leader: it delegates in every mode, then composes the
members' answers, so a team demo runs with no provider key."""
from __future__ import annotations

import pytest

from engine import Agent, Team, tool
from engine.models import ToolCall, ToolSpec, get_model

ECHO = "(offline demo) You said: {} This is the first message I see from you."


def offline_team(mode: str, **options) -> Team:
    members = [Agent(id="researcher", name="Researcher"), Agent(id="writer", name="Writer", description="Writes.")]
    return Team(members, id="crew", name="Crew", mode=mode, **options)


def tools_used(output: dict) -> list[tuple[str, dict]]:
    return [(t["tool_name"], t["tool_args"]) for t in output["tools"]]


@pytest.mark.parametrize("mode", ["coordinate", "route"])
def test_coordinate_and_route_delegate_to_the_first_member_with_the_users_text(make_ctx, mode):
    output = offline_team(mode).run("Find facts about owls", make_ctx())

    member_answer = ECHO.format("Find facts about owls")
    assert output["status"] == "COMPLETED"
    assert tools_used(output) == [("delegate_task_to_member", {"member_id": "researcher", "task": "Find facts about owls"})]
    assert [(m["agent_id"], m["content"]) for m in output["member_responses"]] == [("researcher", member_answer)]
    if mode == "route":
        assert output["content"] == member_answer  # the member answers the user directly
    else:
        assert output["content"] == f"(offline demo) The team answered: {member_answer}"


def test_the_member_named_in_the_users_text_gets_the_task(make_ctx):
    output = offline_team("coordinate").run("Ask the writer for a poem", make_ctx())

    assert tools_used(output) == [("delegate_task_to_member", {"member_id": "writer", "task": "Ask the writer for a poem"})]
    assert output["content"] == f"(offline demo) The team answered: {ECHO.format('Ask the writer for a poem')}"


def test_broadcast_sends_the_task_to_every_member_and_lists_their_answers(make_ctx):
    output = offline_team("broadcast").run("Say hello", make_ctx())

    answer = ECHO.format("Say hello")
    assert tools_used(output) == [("delegate_task_to_members", {"task": "Say hello"})]
    assert [m["agent_id"] for m in output["member_responses"]] == ["researcher", "writer"]
    assert output["content"] == f"(offline demo) The team answered: Agent Researcher: {answer} | Agent Writer: {answer}"


def test_tasks_mode_creates_executes_and_completes_a_task(make_ctx):
    run = offline_team("tasks").start_run("Plan a picnic for Saturday please", make_ctx())
    events = list(run)
    output = run.output

    answer = ECHO.format("Plan a picnic for Saturday please")
    assert [name for name, _ in tools_used(output)] == ["create_task", "execute_task", "mark_all_complete"]
    assert tools_used(output)[0][1] == {
        "title": "Plan a picnic for Saturday please", "description": "Plan a picnic for Saturday please", "assignee": "researcher",
    }
    assert tools_used(output)[1][1] == {"task_id": "task-1", "member_id": "researcher"}
    assert tools_used(output)[2][1] == {"summary": f"(offline demo) The team answered: {answer}"}
    assert output["content"] == f"(offline demo) The team answered: {answer}"
    assert [(t["status"], t["result"]) for t in output["tasks"]] == [("completed", answer)]
    assert [e["iteration"] for e in events if e["event"] == "TeamTaskIterationCompleted"] == [1, 2, 3]
    assert events[-1]["event"] == "TeamRunCompleted"


def test_a_nested_offline_team_delegates_down_to_its_member(make_ctx):
    inner = Team([Agent(id="writer", name="Writer")], id="inner", name="Inner", mode="route")
    output = Team([inner], id="crew", name="Crew").run("Write a line", make_ctx())

    [inner_out] = output["member_responses"]
    assert inner_out["team_id"] == "inner"
    assert inner_out["content"] == ECHO.format("Write a line")
    assert output["content"] == f"(offline demo) The team answered: {ECHO.format('Write a line')}"


@tool
def add(a: int, b: int) -> int:
    return a + b


def test_call_lines_keep_precedence_over_delegation(make_ctx):
    output = offline_team("coordinate", tools=[add]).run('/call add {"a": 2, "b": 3}', make_ctx())

    assert tools_used(output) == [("add", {"a": 2, "b": 3})]
    assert output["content"] == "Tool add returned: 5"
    assert "member_responses" not in output


def test_without_a_team_members_block_delegation_tools_are_not_called():
    spec = ToolSpec("delegate_task_to_member", "Delegate.", {"type": "object", "properties": {}})
    chunks = list(get_model("offline:demo").stream([{"role": "user", "content": "hi"}], tools=[spec]))

    assert not [c for c in chunks if isinstance(c, ToolCall)]
