"""Teams: member failures and timeouts, nested teams, shared session state, cancellation,
history, memories and summaries."""
from __future__ import annotations

import threading

from engine import Team, tool
from tests.fakes.openai_server import Call, Failure, Reply
from tests.engine.conftest import FakeMemoryStore
from tests.engine.helpers import names
from tests.engine.test_team import MODEL, TEAM_TERMINAL, Scripted, agent, delegate, last_tool_results, team


@tool
def remember(color: str, session_state: dict) -> str:
    """Store a colour in the session state.

    Args:
        color: The colour.
    """
    session_state["color"] = color
    session_state.setdefault("seen", []).append(color)
    return f"stored {color}"


def test_a_failing_member_is_reported_to_the_leader_as_a_tool_error(make_ctx, openai_server):
    Scripted(
        crew=[Reply(tool_calls=[delegate("a", "x")]), lambda r: Reply(text="Leader saw: " + last_tool_results(r)[0])],
        a=[Failure(401, "bad key")],
    ).install(openai_server)
    run = team([agent("a")]).start_run("hi", make_ctx())
    events = list(run)

    member = run.output["member_responses"][0]
    assert (member["status"], member["content"], member["parent_run_id"]) == ("ERROR", "bad key", "run-1")
    assert "RunError" in names(events)
    assert [e["event"] for e in events if e["event"] in TEAM_TERMINAL] == ["TeamRunCompleted"]
    call = run.output["tools"][0]
    assert (call["tool_call_error"], call["result"]) == (True, "Member A failed: bad key")
    assert names(events)[names(events).index("TeamToolCallCompleted") + 1] == "TeamToolCallError"
    assert run.output["content"] == "Leader saw: Member A failed: bad key"
    assert run.status == "COMPLETED"


def test_a_member_over_its_timeout_is_stopped_and_reported(make_ctx, openai_server):
    gate = threading.Event()
    Scripted(
        crew=[Reply(tool_calls=[delegate("slow", "x"), delegate("fast", "y")]), lambda r: Reply(text=" | ".join(last_tool_results(r)))],
        slow=[Reply(text="never finishes this", gate=gate, gate_after=1, gate_timeout=10)],
        fast=[Reply(text="quick")],
    ).install(openai_server)
    try:
        run = team([agent("slow"), agent("fast")], member_timeout=0.5).start_run("hi", make_ctx())
        events = list(run)
    finally:
        gate.set()

    slow, fast = run.output["member_responses"]
    assert (slow["status"], slow["content"]) == ("ERROR", "Member Slow did not finish within 0.5 seconds")
    assert fast["status"] == "COMPLETED"
    assert [e for e in events if e["event"] == "RunError"][0]["error_type"] == "timeout"
    assert [t["tool_call_error"] for t in run.output["tools"]] == [True, False]
    assert run.output["content"] == "Member Slow failed: Member Slow did not finish within 0.5 seconds | quick"


def test_nested_teams_relay_events_with_depth_and_parents(make_ctx, openai_server):
    Scripted(
        crew=[Reply(tool_calls=[delegate("inner", "go deeper")]), lambda r: Reply(text="outer: " + last_tool_results(r)[0])],
        inner=[Reply(tool_calls=[delegate("leaf", "leaf task")]), lambda r: Reply(text="inner: " + last_tool_results(r)[0])],
        leaf=[Reply(text="leaf answer")],
    ).install(openai_server)
    inner = Team([agent("leaf")], id="inner", name="Inner", instructions="agent:inner", model=MODEL)
    run = team([inner]).start_run("hi", make_ctx())
    events = list(run)

    output = run.output
    assert output["content"] == "outer: inner: leaf answer"
    inner_out = output["member_responses"][0]
    assert (inner_out["team_id"], inner_out["parent_run_id"], inner_out["status"]) == ("inner", "run-1", "COMPLETED")
    leaf_out = inner_out["member_responses"][0]
    assert (leaf_out["agent_id"], leaf_out["parent_run_id"]) == ("leaf", inner_out["run_id"])
    inner_events = [e for e in events if e.get("team_id") == "inner"]
    leaf_events = [e for e in events if e.get("agent_id") == "leaf"]
    assert {(e["nested_depth"], e["parent_run_id"], e["run_id"]) for e in inner_events} == {(1, "run-1", inner_out["run_id"])}
    assert {(e["nested_depth"], e["parent_run_id"], e["run_id"]) for e in leaf_events} == {(2, inner_out["run_id"], leaf_out["run_id"])}
    assert [e["event"] for e in events if e["event"] in TEAM_TERMINAL and e["team_id"] == "crew"] == ["TeamRunCompleted"]
    assert [e["event"] for e in inner_events][-1] == "TeamRunCompleted"


def test_members_share_the_teams_session_state(make_ctx, openai_server):
    Scripted(
        crew=[Reply(tool_calls=[delegate("a", "store red")]), Reply(tool_calls=[delegate("b", "store blue")]), Reply(text="done")],
        a=[Reply(tool_calls=[Call("remember", {"color": "red"})]), Reply(text="ok")],
        b=[lambda r: Reply(text="state was " + r.messages[0]["content"].split("<session_state>\n")[1].split("\n")[0])],
    ).install(openai_server)
    crew = team([agent("a", tools=[remember]), agent("b", add_session_state_to_context=True)], session_state={"team": 1})
    run = crew.start_run("hi", make_ctx(session_state={"stored": True}))
    list(run)

    output = run.output
    assert output["session_state"] == {"team": 1, "stored": True, "color": "red", "seen": ["red"]}
    assert output["member_responses"][1]["content"] == 'state was {"team": 1, "stored": true, "color": "red", "seen": ["red"]}'
    assert output["member_responses"][0]["session_state"]["color"] == "red"


class Flag:
    def __init__(self) -> None:
        self.value = False

    def __call__(self) -> bool:
        return self.value


def test_cancelling_the_team_stops_the_member_mid_answer(make_ctx, openai_server):
    gate = threading.Event()
    script = Scripted(
        crew=[Reply(tool_calls=[delegate("a", "x")])],
        a=[Reply(text="one two three four", gate=gate, gate_after=2)],
    ).install(openai_server)
    flag = Flag()
    run = team([agent("a")]).start_run("hi", make_ctx(is_cancelled=flag))
    events = []
    for event in run:
        events.append(event)
        if event.get("agent_id") == "a" and event.get("content") == "one ":
            flag.value = True
            gate.set()

    assert names(events)[-2:] == ["TeamRunCancelled", "TeamRunCompleted"]
    assert "RunCancelled" in names(events)
    assert run.status == "CANCELLED"
    member = run.output["member_responses"][0]
    assert (member["status"], member["content"]) == ("CANCELLED", "one ")
    assert script.seen == ["crew", "a"]  # the leader was not asked again


def test_team_history_memories_and_summaries_work_as_for_agents(make_ctx, openai_server):
    store = FakeMemoryStore()
    earlier = {
        "run_id": "old", "team_id": "crew", "status": "COMPLETED",
        "messages": [{"role": "user", "content": "my name is Ann"}, {"role": "assistant", "content": "Hi Ann"}],
        "member_responses": [{"run_id": "old-a", "agent_id": "a", "status": "COMPLETED", "messages": [
            {"role": "user", "content": "earlier task"}, {"role": "assistant", "content": "earlier answer"}]}],
    }

    def leader_first(recorded):
        contents = [m.get("content") for m in recorded.messages]
        assert "my name is Ann" in contents and "Hi Ann" in contents
        return Reply(tool_calls=[delegate("a", "again")])

    def member(recorded):
        contents = [m.get("content") for m in recorded.messages]
        assert "earlier answer" in contents  # the member's own earlier run in this session
        return Reply(text="member ok")

    def memory_or_summary(recorded):
        system = str(recorded.messages[0].get("content"))
        if "Memory Manager" in system:
            return Reply(tool_calls=[Call("add_memory", {"memory": "User likes tea", "topics": ["tea"]})]) if not any(
                m["role"] == "tool" for m in recorded.messages) else Reply(text="done")
        return Reply(text='{"summary": "They talked.", "topics": ["tea"]}')

    def route(recorded):
        system = str(recorded.messages[0].get("content")) if recorded.messages else ""
        if "agent:crew\n" in system:
            return leader_first(recorded) if not any(m["role"] == "tool" for m in recorded.messages) else Reply(text="final")
        if "agent:a\n" in system:
            return member(recorded)
        return memory_or_summary(recorded)

    openai_server.push(*[route] * 10)
    crew = team([agent("a", add_history_to_context=True)], add_history_to_context=True, update_memory_on_run=True,
                enable_session_summaries=True)
    run = crew.start_run("I like tea", make_ctx(history=[earlier], memory_store=store))
    events = list(run)

    assert run.output["content"] == "final"
    assert "TeamMemoryUpdateCompleted" in names(events) and "TeamSessionSummaryCompleted" in names(events)
    assert [m["memory"] for m in store.memories.values()] == ["User likes tea"]
    assert run.memories and run.memories[0]["memory"] == "User likes tea"
    assert run.session_summary["summary"] == "They talked."
