"""The real SDKs, over HTTP, against the local fake servers."""
from __future__ import annotations

import pytest

from engine import FatalModelError, MissingCredentialsError, RetryableModelError, get_model
from engine.models import ProviderData, ReasoningDelta, TextDelta, ToolCall, ToolSpec, Usage
from tests.fakes.anthropic_server import Call as ACall
from tests.fakes.anthropic_server import Failure as AFailure
from tests.fakes.anthropic_server import Reply as AReply
from tests.fakes.openai_server import Call, Failure, Reply

ADD = ToolSpec(
    name="add",
    description="Add two numbers.",
    parameters={"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]},
)


def test_openai_streams_text_deltas_and_usage(openai_server):
    openai_server.push(Reply(text="Hello there, friend.", usage=(12, 4), id="chatcmpl-abc"))

    chunks = list(get_model("openai:gpt-4o-mini").stream([{"role": "user", "content": "hi"}]))

    assert chunks == [
        ProviderData({"id": "chatcmpl-abc"}),
        TextDelta("Hello "),
        TextDelta("there, "),
        TextDelta("friend."),
        Usage(input_tokens=12, output_tokens=4, total_tokens=16),
    ]
    request = openai_server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer test-key"
    assert request.body == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def test_openai_streamed_calls_keep_their_connection(openai_server):
    """The body is read past [DONE] to its end, so the connection goes back to the pool (the SDK's
    sync stream drops it: a new TCP and TLS handshake for every streamed call)."""
    model = get_model("openai:gpt-4o-mini")
    for _ in range(3):
        assert TextDelta("Hello ") in list(model.stream([{"role": "user", "content": "hi"}]))
    peers = {request.peer for request in openai_server.requests}
    assert len(openai_server.requests) == 3 and len(peers) == 1, peers


def test_openai_an_error_event_mid_stream_fails_the_call(openai_server):
    openai_server.push(Reply(text="one two three four five six", stream_error="the model fell over"))

    with pytest.raises(FatalModelError, match="the model fell over"):
        list(get_model("openai:gpt-4o-mini").stream([{"role": "user", "content": "hi"}]))


def test_openai_answers_in_one_piece_when_nobody_follows_the_text(openai_server):
    openai_server.push(Reply(text="Hello there, friend.", usage=(12, 4), id="chatcmpl-one", tool_calls=[Call("add", {"a": 1, "b": 2}, id="call_1")]))

    chunks = list(get_model("openai:gpt-4o-mini").stream([{"role": "user", "content": "hi"}], tools=[ADD], incremental=False))

    assert chunks == [
        ProviderData({"id": "chatcmpl-one"}),
        TextDelta("Hello there, friend."),
        ToolCall(id="call_1", name="add", arguments='{"a": 1, "b": 2}'),
        Usage(input_tokens=12, output_tokens=4, total_tokens=16),
    ]
    body = openai_server.requests[0].body
    assert "stream" not in body and body["tools"][0]["function"]["name"] == "add"


def test_openai_returns_several_complete_tool_calls_in_one_turn(openai_server):
    openai_server.push(
        Reply(tool_calls=[Call("add", {"a": 2, "b": 3}, id="call_1"), Call("add", {"a": 10, "b": 20}, id="call_2")], usage=(30, 9))
    )

    chunks = list(get_model("openai:gpt-4o-mini").stream([{"role": "user", "content": "sum"}], tools=[ADD]))

    assert [c for c in chunks if isinstance(c, ToolCall)] == [
        ToolCall(id="call_1", name="add", arguments='{"a": 2, "b": 3}'),
        ToolCall(id="call_2", name="add", arguments='{"a": 10, "b": 20}'),
    ]
    assert openai_server.requests[0].body["tools"] == [
        {"type": "function", "function": {"name": "add", "description": "Add two numbers.", "parameters": ADD.parameters}}
    ]
    assert openai_server.requests[0].body["tool_choice"] == "auto"


def test_openai_reads_reasoning_content_of_compatible_servers(openai_server):
    openai_server.push(Reply(reasoning="Let me think.", text="Done.", usage=(1, 1)))

    chunks = list(get_model("openai:deepseek-reasoner").stream([{"role": "user", "content": "q"}]))

    assert [c for c in chunks if isinstance(c, (ReasoningDelta, TextDelta))] == [
        ReasoningDelta("Let "), ReasoningDelta("me "), ReasoningDelta("think."), TextDelta("Done."),
    ]


def test_openai_sends_tool_messages_back_in_openai_shape(openai_server):
    messages = [
        {"id": "m1", "role": "system", "content": "Be brief.", "from_history": False, "created_at": 1},
        {"role": "user", "content": "sum", "from_history": True},
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}], "metrics": {"input_tokens": 3}},
        {"role": "tool", "tool_call_id": "c1", "tool_name": "add", "tool_args": {}, "content": "5", "tool_call_error": False},
    ]

    list(get_model("openai:gpt-4o-mini").stream(messages, tools=[ADD]))

    assert openai_server.requests[0].body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "sum"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "5"},
    ]


@pytest.mark.parametrize(("status", "error_class"), [(500, RetryableModelError), (503, RetryableModelError), (429, RetryableModelError), (401, FatalModelError), (400, FatalModelError)])
def test_openai_errors_are_classified_without_sdk_retries(openai_server, status, error_class):
    openai_server.push(Failure(status, f"failure {status}"))

    with pytest.raises(error_class) as excinfo:
        list(get_model("openai:gpt-4o-mini").stream([{"role": "user", "content": "hi"}]))

    assert excinfo.value.message == f"failure {status}"
    assert excinfo.value.status_code == status
    assert excinfo.value.provider == "OpenAI"
    assert len(openai_server.requests) == 1  # our chain owns retries, the SDK makes none


def test_openai_connection_refused_is_retryable(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    model = get_model("openai:gpt-4o-mini", base_url="http://127.0.0.1:9/v1", timeout=5)
    with pytest.raises(RetryableModelError, match="connect"):
        list(model.stream([{"role": "user", "content": "hi"}]))


def test_missing_openai_key_is_reported_at_first_use_naming_the_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = get_model("openai:gpt-4o-mini")  # constructing is fine

    with pytest.raises(MissingCredentialsError) as excinfo:
        list(model.stream([{"role": "user", "content": "hi"}]))

    assert str(excinfo.value).startswith("OPENAI_API_KEY is not set")
    assert isinstance(excinfo.value, FatalModelError)


def test_missing_anthropic_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(MissingCredentialsError, match="^ANTHROPIC_API_KEY is not set"):
        list(get_model("anthropic:claude-test").stream([{"role": "user", "content": "hi"}]))


def test_anthropic_streams_text_thinking_and_usage(anthropic_server):
    anthropic_server.push(AReply(reasoning="Hmm.", text="Hello there.", usage=(21, 7), id="msg_1"))

    chunks = list(
        get_model("anthropic:claude-test").stream([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}])
    )

    assert chunks == [
        ProviderData({"id": "msg_1"}),
        ReasoningDelta("Hmm."),
        TextDelta("Hello "),
        TextDelta("there."),
        # The thinking's signature, once the stream has given it: sent back after a tool call.
        ProviderData({"id": "msg_1", "thinking_signature": "fake"}),
        Usage(input_tokens=21, output_tokens=7, total_tokens=28),
    ]
    request = anthropic_server.requests[0]
    assert request.path == "/v1/messages"
    # This SDK version sends the key as a bearer token; older ones used x-api-key.
    assert "test-key" in (request.headers.get("x-api-key") or request.headers.get("authorization", ""))
    assert request.body == {
        "model": "claude-test",
        "max_tokens": 4096,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "stream": True,
    }


def test_anthropic_answers_in_one_piece_when_nobody_follows_the_text(anthropic_server):
    anthropic_server.push(AReply(reasoning="Hmm.", text="Hello there.", tool_calls=[ACall("add", {"a": 1, "b": 2}, id="toolu_1")], usage=(21, 7), id="msg_2"))

    chunks = list(get_model("anthropic:claude-test").stream([{"role": "user", "content": "hi"}], tools=[ADD], incremental=False))

    assert chunks == [
        ProviderData({"id": "msg_2", "thinking_signature": "fake"}),
        ReasoningDelta("Hmm."),
        TextDelta("Hello there."),
        ToolCall(id="toolu_1", name="add", arguments='{"a": 1, "b": 2}'),
        Usage(input_tokens=21, output_tokens=7, total_tokens=28),
    ]
    body = anthropic_server.requests[0].body
    assert "stream" not in body and body["tools"][0]["name"] == "add"


def test_anthropic_tool_use_round_trip_shapes(anthropic_server):
    anthropic_server.push(AReply(tool_calls=[ACall("add", {"a": 1, "b": 2}, id="toolu_1"), ACall("add", {"a": 3, "b": 4}, id="toolu_2")]))
    model = get_model("anthropic:claude-test")

    chunks = list(model.stream([{"role": "user", "content": "sum"}], tools=[ADD]))
    list(
        model.stream(
            [
                {"role": "user", "content": "sum"},
                {"role": "assistant", "content": "On it.", "tool_calls": [
                    {"id": "toolu_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}},
                    {"id": "toolu_2", "type": "function", "function": {"name": "add", "arguments": '{"a": 3, "b": 4}'}},
                ]},
                {"role": "tool", "tool_call_id": "toolu_1", "content": "3", "tool_call_error": False},
                {"role": "tool", "tool_call_id": "toolu_2", "content": "boom", "tool_call_error": True},
            ],
            tools=[ADD],
        )
    )

    assert [c for c in chunks if isinstance(c, ToolCall)] == [
        ToolCall(id="toolu_1", name="add", arguments='{"a": 1, "b": 2}'),
        ToolCall(id="toolu_2", name="add", arguments='{"a": 3, "b": 4}'),
    ]
    second = anthropic_server.requests[1].body
    assert second["tools"] == [{"name": "add", "description": "Add two numbers.", "input_schema": ADD.parameters}]
    assert second["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "sum"}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "On it."},
            {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1, "b": 2}},
            {"type": "tool_use", "id": "toolu_2", "name": "add", "input": {"a": 3, "b": 4}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "3"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "boom", "is_error": True},
        ]},
    ]


@pytest.mark.parametrize(("status", "error_class"), [(500, RetryableModelError), (529, RetryableModelError), (429, RetryableModelError), (401, FatalModelError), (400, FatalModelError)])
def test_anthropic_errors_are_classified(anthropic_server, status, error_class):
    anthropic_server.push(AFailure(status, f"failure {status}"))

    with pytest.raises(error_class) as excinfo:
        list(get_model("anthropic:claude-test").stream([{"role": "user", "content": "hi"}]))

    assert (excinfo.value.message, excinfo.value.status_code, excinfo.value.provider) == (f"failure {status}", status, "Anthropic")
    assert len(anthropic_server.requests) == 1
