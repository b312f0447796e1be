"""Model options reach the provider's request body (asserted on what the local fake servers
received), are checked where a definition sets them, and a model's own reasoning streams as
RunContent events carrying ``reasoning_content``, stored on the run."""
from __future__ import annotations

import pytest

from engine import Agent, get_model
from engine.models import ProviderData, ReasoningDelta, TextDelta, model_from_definition
from tests.fakes.anthropic_server import Call as ACall
from tests.fakes.anthropic_server import Reply as AReply
from tests.fakes.openai_server import Reply

HI = [{"role": "user", "content": "hi"}]


def test_openai_sends_every_option_it_is_given(openai_server):
    openai_server.push(Reply(text="ok"))
    model = get_model(
        "openai:gpt-5", temperature=0.2, max_tokens=300, top_p=0.9, stop=["END", "STOP"], seed=7,
        response_format={"type": "json_object"}, reasoning_effort="xhigh", reasoning_summary="detailed",
        service_tier="flex", verbosity="low",
    )
    list(model.stream(HI))

    body = openai_server.requests[0].body
    assert {key: body[key] for key in body if key not in ("messages", "stream", "stream_options")} == {
        "model": "gpt-5", "temperature": 0.2, "max_tokens": 300, "top_p": 0.9, "stop": ["END", "STOP"], "seed": 7,
        "response_format": {"type": "json_object"}, "reasoning_effort": "xhigh", "reasoning": {"summary": "detailed"},
        "service_tier": "flex", "verbosity": "low",
    }


def test_openai_takes_any_string_for_the_widened_options(openai_server):
    """v3 widened these to any string: a value the API adds tomorrow passes through unchanged."""
    openai_server.push(Reply(text="ok"))
    list(get_model("openai:gpt-5", reasoning_effort="max", service_tier="ultrafast", verbosity="terse-2027").stream(HI))
    body = openai_server.requests[0].body
    assert (body["reasoning_effort"], body["service_tier"], body["verbosity"]) == ("max", "ultrafast", "terse-2027")


def test_openai_without_options_sends_none_of_them(openai_server):
    openai_server.push(Reply(text="ok"))
    list(get_model("openai:gpt-4o-mini").stream(HI))
    assert set(openai_server.requests[0].body) == {"model", "messages", "stream", "stream_options"}


def test_a_run_output_schema_wins_over_the_models_response_format(openai_server):
    openai_server.push(Reply(text='{"city": "Paris"}'))
    schema = {"title": "Place", "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    list(get_model("openai:gpt-4o-mini", response_format={"type": "json_object"}, seed=1).stream(HI, output_schema=schema))
    body = openai_server.requests[0].body
    assert body["response_format"]["type"] == "json_schema" and body["seed"] == 1


def test_anthropic_sends_top_p_stop_sequences_and_the_thinking_budget(anthropic_server):
    anthropic_server.push(AReply(text="ok"))
    list(get_model("anthropic:claude-sonnet-4-5", max_tokens=8000, top_p=0.95, stop="END", thinking_budget=2048).stream(HI))
    body = anthropic_server.requests[0].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert (body["top_p"], body["stop_sequences"], body["max_tokens"]) == (0.95, ["END"], 8000)
    assert "temperature" not in body


def test_anthropic_thinking_goes_back_with_its_signature_after_a_tool_call(anthropic_server, make_ctx):
    """With extended thinking, the turn after a tool call must carry the thinking block that
    preceded the call, signature included, or the API refuses it."""
    from engine import tool

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    anthropic_server.push(AReply(reasoning="I should add them.", tool_calls=[ACall("add", {"a": 2, "b": 3})]), AReply(text="5"))
    agent = Agent(model=get_model("anthropic:claude-sonnet-4-5", thinking_budget=1024), tools=[add])
    out = agent.run("add 2 and 3", make_ctx())

    assert out["status"] == "COMPLETED" and out["content"] == "5"
    assistant = anthropic_server.requests[1].body["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == {"type": "thinking", "thinking": "I should add them.", "signature": "fake"}
    assert assistant["content"][1]["type"] == "tool_use"


@pytest.mark.parametrize(
    ("spec", "options", "message"),
    [
        ("anthropic:claude-x", {"seed": 1}, "anthropic models do not take seed"),
        ("openai:gpt-5", {"api_key": "sk-secret"}, "openai models do not take api_key"),
        ("anthropic:claude-x", {"thinking_budget": 512}, "at least 1024"),
        ("anthropic:claude-x", {"thinking_budget": 5000, "max_tokens": 4096}, "below max_tokens"),
        ("anthropic:claude-x", {"thinking_budget": 2048, "temperature": 0.5}, "no temperature"),
        ("openai:gpt-5", {"top_p": 2}, "top_p must be a number from 0 to 1"),
        ("openai:gpt-5", {"reasoning_effort": ""}, "reasoning_effort must be a non-empty string"),
        ("openai:gpt-5", {"stop": [1]}, "stop must be a string or a list of strings"),
        ("openai:gpt-5", {"response_format": "json"}, 'response_format must be an object with a "type"'),
        ("openai:gpt-5", ["reasoning_effort"], "Model options are a JSON object"),
    ],
)
def test_a_definitions_options_are_checked_where_they_are_set(spec, options, message):
    with pytest.raises(ValueError, match=message):
        model_from_definition(spec, options)


def test_a_models_reasoning_streams_as_run_content_with_reasoning_content(openai_server, make_ctx):
    """As Agno: a reasoning model's thinking arrives in RunContent events' ``reasoning_content``
    (no ``content``), before the answer's deltas, and the run keeps it whole."""
    openai_server.push(Reply(text="Forty-two.", reasoning="Let me think step by step."))
    agent = Agent(model=get_model("openai:o4-mini", reasoning_effort="high"))
    run = agent.start_run("question", make_ctx())
    events = list(run)

    thinking = [e for e in events if e["event"] == "RunContent" and e.get("reasoning_content")]
    answer = [e for e in events if e["event"] == "RunContent" and e.get("content")]
    assert "".join(e["reasoning_content"] for e in thinking) == "Let me think step by step."
    assert all("content" not in e for e in thinking)
    assert events.index(thinking[-1]) < events.index(answer[0])
    assert run.output["reasoning_content"] == "Let me think step by step."
    assert openai_server.requests[0].body["reasoning_effort"] == "high"


def test_the_offline_model_asked_to_reason_thinks_aloud_first(make_ctx):
    model = get_model("offline:demo", reasoning_effort="low")
    chunks = list(model.stream(HI))
    reasoning = "".join(c.text for c in chunks if isinstance(c, ReasoningDelta))
    assert reasoning == '(offline demo) Thinking about "hi" before answering.'
    assert isinstance(chunks[-2], TextDelta) and not any(isinstance(c, ProviderData) for c in chunks)
    assert not any(isinstance(c, ReasoningDelta) for c in get_model("offline:demo", reasoning_effort="none").stream(HI))
