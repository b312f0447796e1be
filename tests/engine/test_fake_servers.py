"""The fake provider servers' own control API, which the API tests reuse."""
from __future__ import annotations

import anthropic
import openai
import pytest

from tests.fakes.anthropic_server import Call as ACall
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.anthropic_server import Reply as AReply
from tests.fakes.openai_server import Call, Failure, FakeOpenAIServer, Reply


def test_openai_fake_answers_non_streaming_requests_with_tool_calls_and_usage():
    with FakeOpenAIServer() as server:
        server.push(Reply(text="Sure.", tool_calls=[Call("add", {"a": 1}, id="call_x")], usage=(9, 4), id="chatcmpl-1"))
        client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)

        completion = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])

    assert completion.id == "chatcmpl-1"
    message = completion.choices[0].message
    assert (message.content, message.tool_calls[0].id, message.tool_calls[0].function.arguments) == ("Sure.", "call_x", '{"a": 1}')
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens, completion.usage.total_tokens) == (9, 4, 13)
    assert completion.choices[0].finish_reason == "tool_calls"


def test_openai_fake_default_callable_scripts_errors_and_request_record():
    with FakeOpenAIServer() as server:
        server.push(lambda request: Reply(text=f"{len(request.messages)} messages"), Failure(429, "slow down", headers={"Retry-After": "0"}))
        client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)

        scripted = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
        with pytest.raises(openai.RateLimitError):
            client.chat.completions.create(model="m", messages=[])
        default = client.chat.completions.create(model="m", messages=[])

        assert scripted.choices[0].message.content == "2 messages"
        assert default.choices[0].message.content == "Hello from the fake LLM. This is a short answer."
        assert [r.path for r in server.wait_for_requests(3)] == ["/v1/chat/completions"] * 3
        server.reset()
        assert server.requests == []
        with pytest.raises(TimeoutError):
            server.wait_for_requests(1, timeout=0.05)


def test_openai_fake_streams_with_words_per_chunk():
    with FakeOpenAIServer() as server:
        server.push(Reply(text="one two three four five", words_per_chunk=2))
        client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
        stream = client.chat.completions.create(model="m", messages=[], stream=True)
        pieces = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]

    assert pieces == ["one two ", "three four ", "five"]


def test_anthropic_fake_answers_non_streaming_requests():
    with FakeAnthropicServer() as server:
        server.push(AReply(text="Hi!", tool_calls=[ACall("add", {"a": 1}, id="toolu_1")], usage=(5, 2)))
        client = anthropic.Anthropic(api_key="k", base_url=server.base_url, max_retries=0)

        message = client.messages.create(model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "hi"}])

    assert [block.type for block in message.content] == ["text", "tool_use"]
    assert message.content[1].input == {"a": 1}
    assert (message.stop_reason, message.usage.input_tokens, message.usage.output_tokens) == ("tool_use", 5, 2)


def test_unknown_routes_are_404_and_not_recorded():
    with FakeOpenAIServer() as server:
        client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
        with pytest.raises(openai.NotFoundError):
            client.models.list()
        assert server.requests == []


def test_embeddings_are_deterministic_and_as_wide_as_asked():
    with FakeOpenAIServer() as server:
        client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
        first = client.embeddings.create(model="m", input=["red apple", "green apple", "blue sky"], dimensions=64)
        again = client.embeddings.create(model="m", input="red apple", dimensions=64)
    vectors = [row.embedding for row in first.data]
    assert [len(vector) for vector in vectors] == [64, 64, 64] and again.data[0].embedding == vectors[0]
    dot = lambda a, b: sum(x * y for x, y in zip(a, b))  # noqa: E731
    assert dot(vectors[0], vectors[1]) > dot(vectors[0], vectors[2])  # a shared word points the same way
