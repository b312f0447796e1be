"""The engine's shape: one async run loop, driven by ``async for`` on the caller's event loop or
by the sync facade on a thread's own loop; sync tools in the tool pool; the memory update beside
the answer."""
from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from engine import Agent, RunContext, tool
from engine.models import Model, TextDelta
from tests.fakes.openai_server import Reply, is_memory_request, routed
from tests.engine.conftest import FakeMemoryStore
from tests.engine.helpers import drain, names


async def collect(run: Any) -> list[dict[str, Any]]:
    return [event async for event in run]


def without_message_ids(output: dict[str, Any]) -> dict[str, Any]:
    return {**output, "messages": [{k: v for k, v in m.items() if k != "id"} for m in output["messages"]]}


def test_an_async_consumer_gets_the_same_events_as_a_sync_one(make_ctx):
    @tool
    def add(a: int, b: int) -> int:
        return a + b

    agent = Agent(id="assistant", name="Assistant", tools=[add])
    message = '/call add {"a": 2, "b": 3}'

    sync_run = agent.start_run(message, make_ctx())
    sync_events = drain(sync_run)
    async_run = agent.start_run(message, make_ctx())
    async_events = asyncio.run(collect(async_run))

    assert "ToolCallCompleted" in names(sync_events)
    assert async_events == sync_events
    assert without_message_ids(async_run.output) == without_message_ids(sync_run.output)


def test_two_runs_on_one_event_loop_overlap_their_model_waits():
    agent = Agent(id="assistant", name="Assistant")

    async def both() -> list[list[dict[str, Any]]]:
        runs = [agent.start_run("/slow 1\nhello", RunContext(run_id=f"run-{i}", session_id="s")) for i in range(2)]
        return await asyncio.gather(*(collect(run) for run in runs))

    started = time.monotonic()
    results = asyncio.run(both())
    elapsed = time.monotonic() - started

    assert [names(events)[-1] for events in results] == ["RunCompleted", "RunCompleted"]
    # Each run waits about 1 s on its model; waited one after the other they would take 2 s.
    assert elapsed < 1.7, elapsed


def test_the_memory_call_starts_while_the_answer_is_still_streaming(make_ctx, openai_server):
    order: list[str] = []

    class AnswerGate(threading.Event):
        """Holds the answer's stream open after its first chunk until the memory call arrives
        (or, when the memory call waits for the answer, until the timeout)."""

        def wait(self, timeout: float | None = None) -> bool:
            arrived = super().wait(timeout)
            order.append("answer resumed")
            return arrived

    gate = AnswerGate()

    def memory_reply(recorded: Any) -> Reply:
        order.append("memory request")
        gate.set()
        return Reply(text="No changes")

    openai_server.push(*routed(
        is_memory_request,
        [memory_reply],
        [Reply(text="Nice to meet you, Ada.", gate=gate, gate_after=1, gate_timeout=5)],
    ))
    agent = Agent(id="assistant", name="Assistant", model="openai:gpt-4o-mini", update_memory_on_run=True)

    run = agent.start_run("My name is Ada.", make_ctx(memory_store=FakeMemoryStore()))
    events = drain(run)

    assert order == ["memory request", "answer resumed"]
    assert run.output["content"] == "Nice to meet you, Ada."
    # The events keep their place: the memory update is reported after the answer.
    assert names(events)[-4:] == ["RunContentCompleted", "MemoryUpdateStarted", "MemoryUpdateCompleted", "RunCompleted"]


def test_a_sync_tool_runs_in_the_tool_pool_not_on_the_loop_thread(make_ctx):
    ran_on: list[str] = []

    @tool
    def where() -> str:
        ran_on.append(threading.current_thread().name)
        return "here"

    agent = Agent(id="assistant", name="Assistant", tools=[where])

    async def run_on_loop() -> str:
        await collect(agent.start_run("/call where", make_ctx()))
        return threading.current_thread().name

    loop_thread = asyncio.run(run_on_loop())
    drain(agent.start_run("/call where", make_ctx()))  # the sync facade: the same pool

    assert len(ran_on) == 2
    assert all(name.startswith("agno-tool") for name in ran_on), ran_on
    assert loop_thread not in ran_on


def test_an_async_tool_is_awaited_on_the_run_loop(make_ctx):
    ran_on: list[int] = []

    @tool
    async def where() -> str:
        ran_on.append(threading.get_ident())
        return "here"

    agent = Agent(id="assistant", name="Assistant", tools=[where])

    async def run_on_loop() -> int:
        await collect(agent.start_run("/call where", make_ctx()))
        return threading.get_ident()

    assert ran_on == [] and [asyncio.run(run_on_loop())] == ran_on


def test_iterating_synchronously_on_a_running_loop_is_refused_clearly(make_ctx):
    run = Agent(id="assistant", name="Assistant").start_run("hi", make_ctx())

    async def misuse() -> None:
        next(iter(run))

    with pytest.raises(RuntimeError, match="async for"):
        asyncio.run(misuse())


class Endless(Model):
    """A model that streams until its caller stops reading, and says when its stream was closed."""

    provider = "Endless"

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


def test_closing_a_run_closes_its_model_stream_at_once(make_ctx):
    model = Endless()
    run = Agent(id="assistant", model=model).start_run("hi", make_ctx())
    for event in run:
        if event["event"] == "RunContent" and event.get("content"):
            break

    run.close()

    assert model.closed
    assert run.status == "RUNNING"  # the caller decides what an abandoned run becomes


def test_an_async_consumer_closing_a_run_closes_its_model_stream(make_ctx):
    model = Endless()
    run = Agent(id="assistant", model=model).start_run("hi", make_ctx())

    async def read_then_leave() -> None:
        async for event in run:
            if event["event"] == "RunContent" and event.get("content"):
                break
        await run.aclose()

    asyncio.run(read_then_leave())

    assert model.closed


def test_a_tool_thread_runs_the_services_tidy_up_after_each_call():
    """The services hand a tool thread's pooled database connection back after each call."""
    import asyncio
    import threading

    from engine import aio

    tidied: list[str] = []
    previous = (aio._pool_size, aio._after_each)
    aio.configure_tool_threads(2, after_each=lambda: tidied.append(threading.current_thread().name))
    try:
        def tool() -> str:
            return threading.current_thread().name

        ran_in = asyncio.run(aio.in_tool_thread(tool))
        assert tidied == [ran_in] and ran_in.startswith("agno-tool")
    finally:
        aio.configure_tool_threads(previous[0], after_each=previous[1])


# ---- a run's opening: its first event without a trip around the loop ---------------------------


def _opening_then_rest(run: Any) -> list[dict[str, Any]]:
    first = run.opening()  # no event loop is running: nothing may be awaited for it

    async def rest() -> list[dict[str, Any]]:
        return [event async for event in run]

    return [first, *asyncio.run(rest())]


@pytest.mark.parametrize("kind", ["agent", "team", "workflow"])
def test_every_kind_of_run_gives_its_first_event_before_waiting_on_anything(make_ctx, kind):
    from engine import Team, Workflow

    def component() -> Any:
        if kind == "agent":
            return Agent(id="assistant", name="Assistant")
        members = [Agent(id="researcher", name="Researcher"), Agent(id="writer", name="Writer")]
        if kind == "team":
            return Team(members, id="crew", name="Crew", mode="coordinate")
        return Workflow(id="flow", name="Flow", steps=members)

    opened = component().start_run("hello", make_ctx())
    events = _opening_then_rest(opened)
    plain = asyncio.run(collect(component().start_run("hello", make_ctx())))

    assert names(events)[0] == {"agent": "RunStarted", "team": "TeamRunStarted", "workflow": "WorkflowStarted"}[kind]
    assert names(events) == names(plain)
    assert opened.status == "COMPLETED" and opened.output["content"] == plain[-1]["content"]


def test_a_continued_run_opens_with_its_continued_event(make_ctx):
    @tool(requires_confirmation=True)
    def delete(path: str) -> str:
        return f"deleted {path}"

    agent = Agent(id="assistant", name="Assistant", tools=[delete])
    paused = agent.start_run('/call delete {"path": "/tmp/x"}', make_ctx())
    drain(paused)
    assert paused.status == "PAUSED"
    decisions = [{**execution, "confirmed": True} for execution in paused.output["tools"]]

    resumed = agent.continue_run(paused.output, decisions, ctx=make_ctx())
    events = _opening_then_rest(resumed)

    assert names(events)[0] == "RunContinued" and names(events)[-1] == "RunCompleted"


def test_a_run_that_would_wait_before_its_first_event_is_closed_and_refused(make_ctx):
    from engine.run_iteration import RunIteration

    class WaitsFirst(RunIteration):
        def __init__(self) -> None:
            self.state = type("State", (), {"run_id": "r", "status": "RUNNING", "to_dict": lambda self: {}})()
            self.closed = False
            self.agen = self._events()

        async def _events(self):
            try:
                await asyncio.sleep(0.01)
                yield {"event": "RunStarted"}
            finally:
                self.closed = True

    async def open_on_the_loop() -> None:
        run.opening()

    run = WaitsFirst()
    with pytest.raises(RuntimeError, match="waited before its first event"):
        asyncio.run(open_on_the_loop())
    assert run.closed
