"""Teams: route, coordinate and broadcast against the tool-calling fake OpenAI server.

Members run concurrently, so the fake server answers by who is asking: every agent's
instructions are ``agent:<id>``, and ``Scripted`` keeps one queue of replies per agent.
"""
from __future__ import annotations

import asyncio
import json
import threading
from collections import deque

import pytest

from engine import Agent, AgentRun, Team, TeamRun, tool
from engine.models.base import Model, TextDelta
from tests.fakes.openai_server import Call, Reply
from tests.engine.helpers import names

MODEL = "openai:gpt-4o-mini"
TEAM_TERMINAL = {"TeamRunCompleted", "TeamRunPaused", "TeamRunError", "TeamRunCancelled"}


class Scripted:
    """A fake-server script: replies queued per agent, picked by the request's system message."""

    def __init__(self, **replies: list) -> None:
        self.replies = {key: deque(items) for key, items in replies.items()}
        self.lock = threading.Lock()
        self.seen: list[str] = []

    def __call__(self, recorded):
        system = str(recorded.messages[0].get("content")) if recorded.messages else ""
        for key, queue in self.replies.items():
            if f"agent:{key}\n" in system:
                with self.lock:
                    self.seen.append(key)
                    item = queue.popleft()
                return item(recorded) if callable(item) else item
        raise AssertionError(f"no script for {system[:80]!r}")

    def install(self, server, count: int = 40) -> Scripted:
        server.push(*[self] * count)
        return self


def agent(id: str, **options) -> Agent:
    return Agent(id=id, name=id.title(), instructions=f"agent:{id}", model=MODEL, **options)


def team(members, **options) -> Team:
    options.setdefault("id", "crew")
    options.setdefault("name", "Crew")
    return Team(members, instructions="agent:crew", model=MODEL, **options)


def delegate(member_id: str, task: str, id: str | None = None) -> Call:
    return Call("delegate_task_to_member", {"member_id": member_id, "task": task}, id=id)


def last_tool_results(recorded) -> list[str]:
    return [m["content"] for m in recorded.messages if m["role"] == "tool"]


@tool
def add(a: int, b: int) -> int:
    return a + b


@tool
def remember(color: str, session_state: dict) -> str:
    """Store a colour in the session state.

    Args:
        color: The colour.
    """
    session_state["color"] = color
    session_state.setdefault("seen", []).append(color)
    return f"stored {color}"


# ---- configuration --------------------------------------------------------------------------


def test_team_configuration_and_its_leader_tools():
    math, writer = agent("math"), agent("writer")
    inner = Team([writer], id="inner", name="Inner", mode="route")
    crew = Team([math, inner], id="crew", name="Crew", description="A crew.", role="Answers", metadata={"k": 1})

    assert (crew.id, crew.name, crew.mode, crew.members) == ("crew", "Crew", "coordinate", [math, inner])
    assert crew.model.to_dict() == {"name": "OfflineModel", "model": "demo", "provider": "Offline"}
    assert crew.reasoning_model is None and crew.metadata == {"k": 1}
    assert list(crew.functions) == ["delegate_task_to_member"]
    assert crew.functions["delegate_task_to_member"].parameters["required"] == ["member_id", "task"]
    assert list(Team([math], mode="broadcast").functions) == ["delegate_task_to_members"]
    assert Team([math], mode="collaborate").mode == "broadcast"
    assert crew.member_by_id("writer") is writer  # found through the sub-team, as Agno's
    assert crew.member_by_id("Math") is math
    assert crew.member_by_id("nobody") is None
    assert crew.all_members() == [math, inner, writer]
    assert Team(members=[math], name="My Team").id == "my-team"


def test_bad_team_configuration_is_refused():
    with pytest.raises(ValueError, match="mode must be one of"):
        Team([agent("a")], mode="chaos")
    with pytest.raises(ValueError, match="at least one member"):
        Team([])
    with pytest.raises(ValueError, match="share an id"):
        Team([agent("a"), agent("a")])
    with pytest.raises(TypeError, match="Agents or Teams"):
        Team(["a"])
    with pytest.raises(TypeError, match="use update_memory_on_run"):
        Team([agent("a")], enable_user_memories=True)


# ---- coordinate -----------------------------------------------------------------------------


def test_coordinate_delegates_then_composes_with_member_events_streamed_live(make_ctx, openai_server):
    Scripted(
        crew=[
            Reply(tool_calls=[delegate("math", "add 2 and 3", id="call_d1")]),
            lambda r: Reply(text=f"The team says: {last_tool_results(r)[-1]}"),
        ],
        math=[Reply(tool_calls=[Call("add", {"a": 2, "b": 3})]), lambda r: Reply(text=f"It is {last_tool_results(r)[-1]}")],
    ).install(openai_server)
    run = team([agent("math", tools=[add])]).start_run("What is 2+3?", make_ctx())
    assert isinstance(run, TeamRun) and isinstance(run, AgentRun)
    events = list(run)

    member_run_id = run.output["member_responses"][0]["run_id"]
    assert names(events) == [
        "TeamRunStarted", "TeamModelRequestStarted", "TeamRunContent", "TeamModelRequestCompleted", "TeamToolCallStarted",
        "RunStarted", "ModelRequestStarted", "RunContent", "ModelRequestCompleted", "ToolCallStarted", "ToolCallCompleted",
        "ModelRequestStarted", "RunContent", "RunContent", "RunContent", "RunContent", "ModelRequestCompleted",
        "RunContentCompleted", "RunCompleted",
        "TeamToolCallCompleted", "TeamModelRequestStarted", *["TeamRunContent"] * 7, "TeamModelRequestCompleted", "TeamRunContentCompleted",
        "TeamRunCompleted",
    ]
    team_events = [e for e in events if e["event"].startswith("Team")]
    member_events = [e for e in events if not e["event"].startswith("Team")]
    assert events[0] == {
        "created_at": 1_796_031_773, "event": "TeamRunStarted", "team_id": "crew", "team_name": "Crew", "run_id": "run-1",
        "session_id": "sess-1", "nested_depth": 0, "model": "gpt-4o-mini", "model_provider": "OpenAI",
    }
    assert all((e["team_id"], e["run_id"], e["nested_depth"]) == ("crew", "run-1", 0) for e in team_events)
    assert all("agent_id" not in e and "parent_run_id" not in e and "workflow_agent" not in e for e in team_events)
    assert all(
        (e["agent_id"], e["agent_name"], e["run_id"], e["parent_run_id"], e["session_id"], e["nested_depth"])
        == ("math", "Math", member_run_id, "run-1", "sess-1", 1)
        for e in member_events
    )
    assert list(member_events[0])[:7] == ["created_at", "event", "agent_id", "agent_name", "run_id", "parent_run_id", "session_id"]
    completed_call = events[names(events).index("TeamToolCallCompleted")]
    assert completed_call["tool"]["tool_name"] == "delegate_task_to_member"
    assert completed_call["tool"]["child_run_id"] == member_run_id
    assert completed_call["tool"]["result"] == "It is 5"
    assert completed_call["tool"]["tool_call_error"] is False
    assert [e["event"] for e in events if e["event"] in TEAM_TERMINAL] == ["TeamRunCompleted"]
    assert events[-1]["content"] == "The team says: It is 5"
    assert events[-1]["member_responses"] == run.output["member_responses"]

    output = run.output
    assert list(output)[:6] == ["run_id", "team_id", "team_name", "session_id", "user_id", "content"]
    assert (output["team_id"], output["status"], output["content"]) == ("crew", "COMPLETED", "The team says: It is 5")
    assert "agent_id" not in output
    member = output["member_responses"][0]
    assert (member["agent_id"], member["parent_run_id"], member["status"], member["content"]) == ("math", "run-1", "COMPLETED", "It is 5")
    assert [m["role"] for m in member["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert member["messages"][1]["content"] == "add 2 and 3"
    assert [t["tool_name"] for t in member["tools"]] == ["add"]
    assert [t["tool_name"] for t in output["tools"]] == ["delegate_task_to_member"]
    # As Agno: the team run's metrics are the leader's; each member run has its own.
    assert output["metrics"]["input_tokens"] == 20 and member["metrics"]["input_tokens"] == 20
    assert "<team_members>\n- member_id: math | name: Math\n</team_members>" in output["messages"][0]["content"]


def test_several_delegations_in_one_turn_run_concurrently_in_delegation_order(make_ctx, openai_server):
    b_asked = threading.Event()

    def b_answers(recorded):
        b_asked.set()
        return Reply(text="B done")

    Scripted(
        crew=[
            Reply(tool_calls=[delegate("a", "task a"), delegate("b", "task b")]),
            lambda r: Reply(text=" | ".join(last_tool_results(r))),
        ],
        # A streams one word, then waits until B has been asked: run one after the other, A
        # would hold the gate until it times out and B's run would start after A's ended.
        a=[Reply(text="A is done now", gate=b_asked, gate_after=1, gate_timeout=10)],
        b=[b_answers],
    ).install(openai_server)
    run = team([agent("a"), agent("b")]).start_run("do both", make_ctx())
    events = list(run)

    started = {e["agent_id"]: i for i, e in enumerate(events) if e["event"] == "RunStarted"}
    completed = {e["agent_id"]: i for i, e in enumerate(events) if e["event"] == "RunCompleted"}
    assert started["b"] < completed["a"]
    assert run.output["content"] == "A is done now | B done"
    assert [m["agent_id"] for m in run.output["member_responses"]] == ["a", "b"]  # delegation order
    calls = [e["tool"] for e in events if e["event"] == "TeamToolCallCompleted"]
    assert [c["tool_args"]["member_id"] for c in calls] == ["a", "b"]
    assert [c["child_run_id"] for c in calls] == [m["run_id"] for m in run.output["member_responses"]]


def test_an_unknown_member_is_reported_to_the_leader(make_ctx, openai_server):
    script = Scripted(
        crew=[Reply(tool_calls=[delegate("ghost", "boo")]), lambda r: Reply(text=last_tool_results(r)[0][:37])],
    ).install(openai_server)
    run = team([agent("math")]).start_run("hi", make_ctx())
    list(run)

    assert run.output["content"] == "Member with ID ghost not found in the"
    assert "member_responses" not in run.output
    assert script.seen == ["crew", "crew"]


# ---- route ----------------------------------------------------------------------------------


def test_route_returns_the_members_answer_as_the_teams(make_ctx, openai_server):
    script = Scripted(
        crew=[Reply(tool_calls=[delegate("writer", "write a haiku")])],
        writer=[Reply(text="Autumn moon rises")],
    ).install(openai_server)
    run = team([agent("math"), agent("writer")], mode="route").start_run("a haiku please", make_ctx())
    events = list(run)

    assert script.seen == ["crew", "writer"]  # the leader does not speak after the member
    assert run.output["content"] == "Autumn moon rises"
    assert events[-1]["event"] == "TeamRunCompleted" and events[-1]["content"] == "Autumn moon rises"
    assert run.output["tools"][0]["stop_after_tool_call"] is True
    assert [m["agent_id"] for m in run.output["member_responses"]] == ["writer"]
    assert "You are a router" in run.output["messages"][0]["content"]


# ---- broadcast ------------------------------------------------------------------------------


def test_broadcast_sends_the_task_to_every_member_concurrently(make_ctx, openai_server):
    all_asked = threading.Barrier(2, timeout=10)

    def answer(text):
        def reply(recorded):
            all_asked.wait()  # neither member answers until both were asked
            return Reply(text=text)
        return reply

    script = Scripted(
        crew=[
            Reply(tool_calls=[Call("delegate_task_to_members", {"task": "Say hi"})]),
            lambda r: Reply(text="Summary: " + last_tool_results(r)[0].replace("\n", " / ")),
        ],
        a=[answer("hi from a")],
        b=[answer("hi from b")],
    ).install(openai_server)
    run = team([agent("a"), agent("b")], mode="collaborate").start_run("greet", make_ctx())
    events = list(run)

    assert sorted(script.seen[1:3]) == ["a", "b"]
    assert run.output["content"] == "Summary: Agent A: hi from a / Agent B: hi from b"
    assert [m["agent_id"] for m in run.output["member_responses"]] == ["a", "b"]
    assert [m["messages"][1]["content"] for m in run.output["member_responses"]] == ["Say hi", "Say hi"]
    tool_call = run.output["tools"][0]
    assert (tool_call["tool_name"], tool_call["child_run_id"]) == ("delegate_task_to_members", None)
    assert {e["parent_run_id"] for e in events if e["event"] == "RunStarted"} == {"run-1"}


# ---- iteration, close -----------------------------------------------------------------------


def test_async_iteration_gives_the_same_run(make_ctx, openai_server):
    Scripted(
        crew=[Reply(tool_calls=[delegate("a", "hello")]), lambda r: Reply(text="ok " + last_tool_results(r)[0])],
        a=[Reply(text="hey")],
    ).install(openai_server)
    run = team([agent("a")]).start_run("hi", make_ctx())

    async def consume():
        return [event async for event in run]

    events = asyncio.run(consume())
    assert names(events)[0] == "TeamRunStarted" and names(events)[-1] == "TeamRunCompleted"
    assert run.output["content"] == "ok hey"
    assert run.status == "COMPLETED"


class Endless(Model):
    provider = "Test"
    name = "Endless"

    def __init__(self) -> None:
        super().__init__("endless")
        self.closed = False

    async def astream(self, messages, **kwargs):
        try:
            while True:
                yield TextDelta("word ")
                await asyncio.sleep(0)
        finally:
            self.closed = True


@pytest.mark.parametrize("how", ["sync", "async"])
def test_closing_the_team_run_mid_member_closes_the_members_model_stream(make_ctx, openai_server, how):
    Scripted(crew=[Reply(tool_calls=[delegate("a", "talk")])]).install(openai_server)
    endless = Endless()
    run = team([Agent(id="a", model=endless)]).start_run("hi", make_ctx())

    if how == "sync":
        for event in run:
            if event["event"] == "RunContent" and event.get("content"):
                break
        run.close()
    else:
        async def read_then_leave():
            async for event in run:
                if event["event"] == "RunContent" and event.get("content"):
                    break
            await run.aclose()

        asyncio.run(read_then_leave())

    assert endless.closed
    assert run.status == "RUNNING"


def test_stream_events_false_keeps_content_and_the_terminal_event(make_ctx, openai_server):
    Scripted(
        crew=[Reply(tool_calls=[delegate("a", "x")]), Reply(text="done")],
        a=[Reply(text="member")],
    ).install(openai_server)
    run = team([agent("a")]).start_run("hi", make_ctx(), stream_events=False)
    events = list(run)

    assert set(names(events)) == {"TeamRunContent", "RunContent", "RunCompleted", "TeamRunCompleted"}
    assert run.output["content"] == "done"


def test_team_run_drains_with_run_and_output_round_trips_json(make_ctx, openai_server):
    Scripted(crew=[Reply(tool_calls=[delegate("a", "x")]), Reply(text="done")], a=[Reply(text="m")]).install(openai_server)
    output = team([agent("a")]).run("hi", make_ctx())

    assert json.loads(json.dumps(output)) == output
    assert output["status"] == "COMPLETED"
