"""Cooperative cancellation: is_cancelled() is polled between deltas, model calls and tool calls."""
from __future__ import annotations

import threading

from engine import Agent, get_model, tool
from tests.fakes.openai_server import Reply
from tests.engine.helpers import common, names


class Flag:
    def __init__(self) -> None:
        self.value = False

    def __call__(self) -> bool:
        return self.value


def test_cancel_mid_stream_ends_with_run_cancelled_then_run_completed_and_partial_content(make_ctx):
    flag = Flag()
    agent = Agent(id="assistant", name="Assistant", model=get_model("offline:demo", sleep=lambda s: None))
    run = agent.start_run("tell me a long story\n/slow 30", make_ctx(is_cancelled=flag))

    events = []
    for event in run:
        events.append(event)
        if event.get("content") == "demo) ":
            flag.value = True

    assert names(events) == ["RunStarted", "ModelRequestStarted", "RunContent", "RunContent", "RunContent", "RunCancelled", "RunCompleted"]
    assert events[-2] == common("RunCancelled", content="(offline demo) ", reason="Run run-1 was cancelled")
    # As AgentOS 3.1.10: a RunCompleted follows, with the content type, metrics and session state.
    assert events[-1] == common(
        "RunCompleted", content="(offline demo) ", content_type="str",
        metrics={"time_to_first_token": 0.0, "duration": 0.0}, session_state={},
    )
    output = run.output
    assert (output["status"], output["cancellation_stage"], output["content"]) == ("CANCELLED", "EXECUTING", "(offline demo) ")
    assert [(m["role"], m["content"]) for m in output["messages"]] == [
        ("user", "tell me a long story\n/slow 30"), ("assistant", "(offline demo) "),
    ]


def test_cancel_closes_a_provider_stream_that_is_still_sending(make_ctx, openai_server):
    gate = threading.Event()
    openai_server.push(Reply(text="one two three four five", gate=gate, gate_after=2))
    flag = Flag()
    run = Agent(id="assistant", model="openai:gpt-4o-mini").start_run("go", make_ctx(is_cancelled=flag))

    events = []
    for event in run:
        events.append(event)
        if event.get("content") == "one ":
            flag.value = True
            gate.set()  # let the server carry on; the run must stop reading anyway

    assert names(events)[-2:] == ["RunCancelled", "RunCompleted"]
    assert run.output["content"] == "one "
    assert run.status == "CANCELLED"


def test_cancel_before_the_first_model_call(make_ctx):
    events = list(Agent(id="assistant", name="Assistant").start_run("hi", make_ctx(is_cancelled=lambda: True)))

    assert events == [
        common("RunStarted", model="demo", model_provider="Offline"),
        common("RunCancelled", content="", reason="Run run-1 was cancelled"),
        common("RunCompleted", content="", content_type="str", metrics={"duration": 0.0}, session_state={}),
    ]


def test_cancel_between_tool_calls_skips_the_rest(make_ctx):
    flag = Flag()
    ran: list[str] = []

    @tool
    def step(name: str) -> str:
        ran.append(name)
        flag.value = True  # e.g. the user pressed stop while this tool ran
        return name

    run = Agent(id="assistant", tools=[step]).start_run('/call step {"name": "a"}\n/call step {"name": "b"}', make_ctx(is_cancelled=flag))
    events = list(run)

    assert ran == ["a"]
    assert names(events)[-2:] == ["RunCancelled", "RunCompleted"]
    assert [t["tool_args"] for t in run.output["tools"]] == [{"name": "a"}]
