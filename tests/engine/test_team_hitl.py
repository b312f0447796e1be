"""Teams: a member that needs a human pauses the whole team; continuing resumes the member
(under its own run_id), then the leader, from the stored team output alone."""
from __future__ import annotations

import json

import pytest

from engine import InvalidContinuation, Team, tool
from tests.fakes.openai_server import Call, Reply
from tests.engine.helpers import names
from tests.engine.test_team import MODEL, TEAM_TERMINAL, Scripted, agent, delegate, last_tool_results, team

DELETED: list[str] = []


@tool(requires_confirmation=True)
def delete_file(path: str) -> str:
    """Delete a file.

    Args:
        path: The file to delete.
    """
    DELETED.append(path)
    return f"deleted {path}"


@pytest.fixture(autouse=True)
def _reset():
    DELETED.clear()


def stored(output: dict) -> dict:
    return json.loads(json.dumps(output))


def make_team(**options) -> Team:
    # A fresh Team per call: continuing must not depend on the objects that paused.
    return team([agent("ops", tools=[delete_file]), agent("other")], **options)


def member_script(**extra):
    return Scripted(
        crew=[
            Reply(tool_calls=[delegate("ops", "delete notes/x.txt")]),
            lambda r: Reply(text="Team: " + last_tool_results(r)[0]),
        ],
        ops=[
            Reply(tool_calls=[Call("delete_file", {"path": "notes/x.txt"}, id="call_del")]),
            lambda r: Reply(text="Ops: " + last_tool_results(r)[0]),
        ],
        **extra,
    )


def test_a_member_needing_confirmation_pauses_the_team(make_ctx, openai_server):
    member_script().install(openai_server)
    run = make_team().start_run("clean up", make_ctx())
    events = list(run)

    assert [e["event"] for e in events if e["event"] in TEAM_TERMINAL] == ["TeamRunPaused"]
    assert names(events)[-3:] == ["RunPaused", "TeamToolCallCompleted", "TeamRunPaused"]  # as AgentOS streams it
    assert "RunPaused" in names(events)
    output = run.output
    assert (output["status"], run.status) == ("PAUSED", "PAUSED")
    member = output["member_responses"][0]
    assert (member["agent_id"], member["status"], member["parent_run_id"]) == ("ops", "PAUSED", "run-1")
    [req] = output["requirements"]
    assert list(req) == ["id", "created_at", "member_agent_id", "member_agent_name", "member_run_id", "tool_execution"]
    assert (req["member_agent_id"], req["member_agent_name"], req["member_run_id"]) == ("ops", "Ops", member["run_id"])
    assert req["tool_execution"]["tool_call_id"] == "call_del"
    assert req["tool_execution"]["requires_confirmation"] is True
    paused = events[-1]
    assert (paused["team_id"], paused["run_id"]) == ("crew", "run-1")
    assert paused["requirements"] == output["requirements"]
    assert [t["tool_name"] for t in paused["tools"]] == ["delete_file"]
    assert paused["content"] == output["content"] == "I have tools to execute, but I need confirmation."
    assert output["tools"][0]["result"] == "Member 'Ops' requires human input before continuing."
    assert DELETED == []


def test_continue_from_the_stored_dict_resumes_the_member_then_the_leader(make_ctx, openai_server):
    script = member_script().install(openai_server)
    first = make_team().start_run("clean up", make_ctx())
    list(first)
    paused = stored(first.output)
    member_run_id = paused["member_responses"][0]["run_id"]

    decision = {**paused["requirements"][0]["tool_execution"], "confirmed": True}
    run = make_team().continue_run(paused, [decision], ctx=make_ctx())
    events = list(run)

    assert DELETED == ["notes/x.txt"]
    assert script.seen == ["crew", "ops", "ops", "crew"]
    assert names(events)[:3] == ["TeamRunContinued", "RunContinued", "ToolCallStarted"]
    member_events = [e for e in events if e.get("agent_id") == "ops"]
    assert {(e["run_id"], e["parent_run_id"], e["nested_depth"]) for e in member_events} == {(member_run_id, "run-1", 1)}
    assert [e["event"] for e in events if e["event"] in TEAM_TERMINAL] == ["TeamRunCompleted"]
    output = run.output
    assert (output["run_id"], output["status"], output["content"]) == ("run-1", "COMPLETED", "Team: Ops: deleted notes/x.txt")
    [member] = output["member_responses"]
    assert (member["run_id"], member["status"], member["content"]) == (member_run_id, "COMPLETED", "Ops: deleted notes/x.txt")
    assert output["tools"][0]["result"] == "Ops: deleted notes/x.txt"
    # As Agno: the member's requirement went to the member and is answered in its run; the team keeps none.
    assert output["requirements"] == []
    [req] = member["requirements"]
    assert req["tool_execution"]["confirmed"] is True
    # The leader saw the member's answer in place of "requires human input".
    assert [m["content"] for m in output["messages"] if m["role"] == "tool"] == ["Ops: deleted notes/x.txt"]


def test_continue_with_requirements_and_a_rejection(make_ctx, openai_server):
    member_script().install(openai_server)
    first = make_team().start_run("clean up", make_ctx())
    list(first)
    paused = stored(first.output)

    req = {**paused["requirements"][0], "confirmation": False, "confirmation_note": "not that one"}
    run = make_team().continue_run(paused, requirements=[req], ctx=make_ctx())
    list(run)

    assert DELETED == []
    assert run.output["content"] == "Team: Ops: Function call was rejected by the user: not that one"


def test_route_mode_continue_answers_with_the_member_alone(make_ctx, openai_server):
    script = member_script().install(openai_server)
    first = make_team(mode="route").start_run("clean up", make_ctx())
    list(first)
    paused = stored(first.output)

    decision = {**paused["requirements"][0]["tool_execution"], "confirmed": True}
    run = make_team(mode="route").continue_run(paused, [decision], ctx=make_ctx())
    list(run)

    assert script.seen == ["crew", "ops", "ops"]
    assert run.output["content"] == "Ops: deleted notes/x.txt"


def test_a_member_of_a_sub_team_pauses_and_resumes_through_both_teams(make_ctx, openai_server):
    script = Scripted(
        crew=[Reply(tool_calls=[delegate("inner", "clean")]), lambda r: Reply(text="outer: " + last_tool_results(r)[0])],
        inner=[Reply(tool_calls=[delegate("ops", "delete it")]), lambda r: Reply(text="inner: " + last_tool_results(r)[0])],
        ops=[Reply(tool_calls=[Call("delete_file", {"path": "a"}, id="call_a")]), lambda r: Reply(text=last_tool_results(r)[0])],
    ).install(openai_server)

    def build():
        inner = Team([agent("ops", tools=[delete_file])], id="inner", name="Inner", instructions="agent:inner", model=MODEL)
        return team([inner])

    first = build().start_run("go", make_ctx())
    list(first)
    paused = stored(first.output)
    [req] = paused["requirements"]
    inner_out = paused["member_responses"][0]
    ops_out = inner_out["member_responses"][0]
    assert (inner_out["status"], ops_out["status"]) == ("PAUSED", "PAUSED")
    assert (req["member_agent_id"], req["member_run_id"]) == ("ops", ops_out["run_id"])

    run = build().continue_run(paused, [{**req["tool_execution"], "confirmed": True}], ctx=make_ctx())
    events = list(run)

    assert DELETED == ["a"]
    assert script.seen == ["crew", "inner", "ops", "ops", "inner", "crew"]
    assert run.output["content"] == "outer: inner: deleted a"
    assert names(events)[:3] == ["TeamRunContinued", "TeamRunContinued", "RunContinued"]
    assert [e["nested_depth"] for e in events[:3]] == [0, 1, 2]
    inner_done = run.output["member_responses"][0]
    assert (inner_done["run_id"], inner_done["status"]) == (inner_out["run_id"], "COMPLETED")
    assert inner_done["member_responses"][0]["status"] == "COMPLETED"
    assert run.output["requirements"] == inner_done["requirements"] == []  # answered in the runs they were handed to


def test_bad_continuations_are_refused_before_anything_runs(make_ctx, openai_server):
    member_script().install(openai_server)
    first = make_team().start_run("clean up", make_ctx())
    list(first)
    paused = stored(first.output)

    with pytest.raises(InvalidContinuation, match="Unknown tool_call_id nope"):
        make_team().continue_run(paused, [{"tool_call_id": "nope", "confirmed": True}], ctx=make_ctx())
    with pytest.raises(InvalidContinuation, match="No decision for paused tool call call_del"):
        make_team().continue_run(paused, [], ctx=make_ctx())
    with pytest.raises(InvalidContinuation, match="set confirmed to true or false"):
        make_team().continue_run(paused, [{"tool_call_id": "call_del"}], ctx=make_ctx())
    with pytest.raises(InvalidContinuation, match="is not paused"):
        make_team().continue_run({**paused, "status": "COMPLETED"}, [], ctx=make_ctx())
    with pytest.raises(InvalidContinuation, match="belongs to team crew"):
        Team([agent("ops")], id="other").continue_run(paused, [], ctx=make_ctx())
    assert DELETED == []


def test_a_leader_tool_needing_confirmation_pauses_and_continues(make_ctx, openai_server):
    Scripted(
        crew=[Reply(tool_calls=[Call("delete_file", {"path": "b"}, id="call_b")]), lambda r: Reply(text="done " + last_tool_results(r)[0])],
    ).install(openai_server)
    first = make_team(tools=[delete_file]).start_run("go", make_ctx())
    events = list(first)
    paused = stored(first.output)
    assert events[-1]["event"] == "TeamRunPaused"
    assert "member_agent_id" not in paused["requirements"][0]

    run = make_team(tools=[delete_file]).continue_run(paused, requirements=[{**paused["requirements"][0], "confirmation": True}], ctx=make_ctx())
    list(run)
    assert run.output["content"] == "done deleted b"
    assert DELETED == ["b"]
