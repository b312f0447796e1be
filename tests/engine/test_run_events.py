"""Events and RunOutput in AgentOS's shapes, asserted whole, with an injected clock."""
from __future__ import annotations

import json
from unittest.mock import ANY

from engine import Agent, tool
from tests.engine.conftest import NOW
from tests.engine.helpers import common, drain, names, tool_execution

ANSWER = "(offline demo) You said: Hi there This is the first message I see from you."
DELTAS = ["(offline ", "demo) ", "You ", "said: ", "Hi ", "there ", "This ", "is ", "the ", "first ", "message ", "I ", "see ", "from ", "you."]
METRICS = {
    "input_tokens": 2, "output_tokens": 15, "total_tokens": 17, "time_to_first_token": 0.0, "duration": 0.0,
    "details": {"model": [{"input_tokens": 2, "output_tokens": 15, "total_tokens": 17, "id": "demo", "provider": "Offline"}]},
}


def assistant() -> Agent:
    return Agent(id="assistant", name="Assistant", model="offline:demo")


def test_a_plain_run_emits_agentos_events(make_ctx):
    events = drain(assistant().start_run("Hi there", make_ctx()))

    assert events == [
        common("RunStarted", model="demo", model_provider="Offline"),
        common("ModelRequestStarted", model="demo", model_provider="Offline"),
        common("RunContent", content="", workflow_agent=False, content_type="str", reasoning_content=""),
        *[common("RunContent", content=d, workflow_agent=False, content_type="str") for d in DELTAS],
        common(
            "ModelRequestCompleted", model="demo", model_provider="Offline", input_tokens=2, output_tokens=15,
            total_tokens=17, time_to_first_token=0.0, reasoning_tokens=0, cache_read_tokens=0, cache_write_tokens=0,
        ),
        common("RunContentCompleted"),
        common("RunCompleted", content=ANSWER, content_type="str", metrics=METRICS, session_state={}),
    ]


def test_run_output_has_the_agentos_shape(make_ctx):
    run = assistant().start_run("Hi there", make_ctx())
    drain(run)

    assert run.output == {
        "run_id": "run-1",
        "agent_id": "assistant",
        "agent_name": "Assistant",
        "session_id": "sess-1",
        "user_id": "alice",
        "content": ANSWER,
        "content_type": "str",
        "model": "demo",
        "model_provider": "Offline",
        "session_state": {},
        "created_at": int(NOW),
        "status": "COMPLETED",
        "metrics": METRICS,
        "messages": [
            {"id": ANY, "content": "Hi there", "from_history": False, "stop_after_tool_call": False, "role": "user", "created_at": int(NOW)},
            {
                "id": ANY, "content": ANSWER, "from_history": False, "stop_after_tool_call": False, "role": "assistant",
                "metrics": {"input_tokens": 2, "output_tokens": 15, "total_tokens": 17, "duration": 0.0, "time_to_first_token": 0.0},
                "created_at": int(NOW),
            },
        ],
        "tools": [],
        "input": {"input_content": "Hi there"},
    }
    assert json.loads(json.dumps(run.output)) == run.output


def test_tool_call_events_carry_full_tool_executions_and_timing(make_ctx, clock):
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        clock.advance(0.25)
        return a + b

    agent = Agent(id="assistant", name="Assistant", tools=[add])
    events = drain(agent.start_run('/call add {"a": 2, "b": 3}', make_ctx()))

    started = tool_execution(tool_call_id=ANY, tool_name="add", tool_args={"a": 2, "b": 3})
    completed = {
        **started, "tool_call_error": False, "result": "5",
        "metrics": {"start_time": NOW, "end_time": NOW + 0.25, "duration": 0.25},
    }
    tool_events = [e for e in events if e["event"].startswith("ToolCall")]
    assert tool_events == [
        common("ToolCallStarted", tool=started),
        common("ToolCallCompleted", tool=completed, content="add(a=2, b=3) completed in 0.2500s. ", created_at=int(NOW + 0.25)),
    ]
    assert names(events) == [
        "RunStarted", "ModelRequestStarted", "RunContent", "ModelRequestCompleted", "ToolCallStarted", "ToolCallCompleted",
        "ModelRequestStarted", "RunContent", "RunContent", "RunContent", "RunContent", "RunContent",
        "ModelRequestCompleted", "RunContentCompleted", "RunCompleted",
    ]
    assert events[-1]["content"] == "Tool add returned: 5"
    assert events[-1]["metrics"]["duration"] == 0.25


def test_tool_exceptions_become_error_results_the_model_sees(make_ctx):
    @tool
    def explode(reason: str) -> str:
        raise RuntimeError(f"exploded: {reason}")

    agent = Agent(id="assistant", name="Assistant", tools=[explode])
    run = agent.start_run('/call explode {"reason": "testing"}', make_ctx())
    events = drain(run)

    error = next(e for e in events if e["event"] == "ToolCallError")
    assert error["error"] == "exploded: testing"
    assert error["tool"]["tool_call_error"] is True
    assert run.output["content"] == "Tool explode failed: exploded: testing"
    assert run.output["status"] == "COMPLETED"
    assert run.output["messages"][2] == {
        "id": ANY, "content": "exploded: testing", "from_history": False, "stop_after_tool_call": False, "role": "tool",
        "tool_call_id": ANY, "tool_name": "explode", "tool_args": {"reason": "testing"}, "tool_call_error": True, "created_at": int(NOW),
    }


def test_unknown_tools_and_bad_arguments_are_reported_to_the_model(make_ctx):
    @tool
    def add(a: int, b: int) -> int:
        return a + b

    agent = Agent(id="assistant", name="Assistant", tools=[add])
    run = agent.start_run("/call nope {}\n/call add {not json}", make_ctx())
    events = drain(run)

    assert run.output["content"].splitlines() == [
        "Tool nope failed: Error: The requested tool 'nope' does not exist or is not available.",
        "Tool add failed: Error while decoding function arguments: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
        "",
        "Please make sure we can json.loads() the arguments and retry.",
    ]
    assert run.output["tools"] == []  # never run: not the run's tools, as in Agno
    # Each refusal is a ToolCallError in the stream (and so a failed span in the trace).
    errors = [event for event in events if event["event"] == "ToolCallError"]
    assert [(event["tool"]["tool_name"], event["tool"]["tool_call_error"]) for event in errors] == [("nope", True), ("add", True)]
    assert errors[0]["error"] == "Error: The requested tool 'nope' does not exist or is not available."
    assert "ToolCallStarted" not in names(events)


def test_stream_events_false_yields_only_content_and_the_terminal_event(make_ctx):
    events = drain(assistant().start_run("Hi there", make_ctx(), stream_events=False))

    assert set(names(events)) == {"RunContent", "RunCompleted"}
    assert names(events)[-1] == "RunCompleted"


def test_model_failure_ends_the_run_with_run_error(make_ctx):
    run = assistant().start_run("/fail", make_ctx())
    events = drain(run)

    assert names(events) == ["RunStarted", "ModelRequestStarted", "RunError"]
    assert events[-1] == common(
        "RunError", content="offline model: /fail requested", error_type="model_provider_error", metrics={"duration": 0.0}
    )
    assert (run.status, run.output["status"], run.output["content"]) == ("ERROR", "ERROR", "offline model: /fail requested")


def test_system_message_carries_description_instructions_and_markdown(make_ctx):
    agent = Agent(id="assistant", description="You are a helpful assistant.", instructions=["Be brief.", "Be kind."], markdown=True)
    run = agent.start_run("hi", make_ctx())
    drain(run)

    assert run.output["messages"][0]["role"] == "system"
    assert run.output["messages"][0]["content"] == (
        "You are a helpful assistant.\n\n<instructions>\n- Be brief.\n- Be kind.\n</instructions>\n\n"
        "<additional_information>\n- Use markdown to format your answers.\n</additional_information>"
    )


def test_images_and_files_are_kept_in_the_input_and_files_reach_the_model(make_ctx, openai_server):
    agent = Agent(id="assistant", model="openai:gpt-4o-mini")
    files = [{"id": "f1", "mime_type": "text/plain", "filename": "t.txt", "format": "txt", "content": "hello file\n"}]
    images = [{"url": "https://example.com/cat.png"}]
    run = agent.start_run("read this", make_ctx(), files=files, images=images)
    drain(run)

    assert run.output["input"] == {"input_content": "read this", "images": images, "files": files}
    assert openai_server.requests[0].body["messages"] == [
        {"role": "user", "content": [
            {"type": "text", "text": "read this\n\n<file name='t.txt'>\nhello file\n\n</file>"},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
        ]}
    ]
