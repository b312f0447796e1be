"""OpenAI Chat Completions through the official ``openai`` SDK.

Works against any OpenAI-compatible server (Ollama, vLLM, LM Studio, a test fake) through
``OPENAI_BASE_URL`` or ``base_url=``. The SDK is imported on first use: it takes seconds to import
and most processes that import the runtime never call OpenAI.
"""
from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from engine.errors import FatalModelError, ModelError, RetryableModelError
from engine.models._common import LoopClients, call_timeout, pool_limits, image_url, json_int, json_list, json_object, required_env, schema_title, status_error, whole_answer
from engine.models.options import effort_text, response_format_object, stop_list, unit_float, whole_number
from engine.models.base import (
    Model,
    ModelChunk,
    ProviderData,
    ReasoningDelta,
    Task,
    TextDelta,
    ToolCall,
    ToolChoice,
    ToolSpec,
    Usage,
    message_text,
)

if TYPE_CHECKING:
    import openai


class OpenAIChat(Model):
    provider = "OpenAI"
    name = "OpenAIChat"

    def __init__(
        self,
        id: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        temperature: float | None = None,
        max_tokens: int | None = None,
        top_p: float | None = None,
        stop: str | list[str] | None = None,
        seed: int | None = None,
        response_format: Mapping[str, Any] | None = None,
        reasoning_effort: str | None = None,
        reasoning_summary: str | None = None,
        service_tier: str | None = None,
        verbosity: str | None = None,
    ) -> None:
        super().__init__(id)
        # Credentials are read at first use, not here, so that building an agent never fails
        # just because a key is missing in this process.
        self._api_key = api_key
        self._base_url = base_url
        self.timeout = timeout
        self.temperature = temperature
        self.max_tokens = max_tokens
        # The request fields these options become, checked now (a definition with a bad value
        # fails where it is written, not at its first run).
        self.options = _request_options(
            top_p=top_p, stop=stop, seed=seed, response_format=response_format, reasoning_effort=reasoning_effort,
            reasoning_summary=reasoning_summary, service_tier=service_tier, verbosity=verbosity,
        )
        self._clients = LoopClients(self._make_client)

    def _make_client(self) -> openai.AsyncOpenAI:
        # Checked before importing the SDK: the error is then immediate and clear.
        api_key = required_env(self._api_key, "OPENAI_API_KEY", self.provider)

        import openai

        base_url = self._base_url or os.environ.get("OPENAI_BASE_URL") or None
        # Our chain owns retries (with an injectable sleep); the SDK's own would double them.
        return openai.AsyncOpenAI(
            api_key=api_key, base_url=base_url, timeout=call_timeout(self.timeout), max_retries=0,
            http_client=openai.DefaultAsyncHttpxClient(limits=pool_limits()),
        )

    async def astream(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        output_schema: Mapping[str, Any] | None = None,
        task: Task = "chat",
        incremental: bool = True,
    ) -> AsyncIterator[ModelChunk]:
        import httpx2
        import openai

        params: dict[str, Any] = {"model": self.id, "messages": to_openai_messages(messages)}
        if incremental:
            params.update(stream=True, stream_options={"include_usage": True})
        if tools:
            params["tools"] = [
                {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
                for t in tools
            ]
            params["tool_choice"] = tool_choice
        params.update(self.options)
        if output_schema is not None:
            # A run's output schema is what its answer must be: it wins over the model's format.
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema_title(output_schema), "schema": dict(output_schema)},
            }
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if self.max_tokens is not None:
            params["max_tokens"] = self.max_tokens

        client, release = self._clients.take()
        try:
            # The SDK's untyped call: the same client (auth, base URL, timeouts, error types, SSE
            # decoding) without converting the request through its TypedDicts and the answer into
            # pydantic models, which cost three times the rest of the call (bench/README.md).
            if not incremental:
                for chunk in _read_whole(await whole_answer(client, _COMPLETIONS, params, self.provider)):
                    yield chunk
                return
            # The raw response, its events read here (_stream_chunks): the SDK's stream stops
            # at [DONE] without reading the rest of the body, which costs the connection (a new
            # TCP and TLS handshake for every streamed call).
            response = await client.post(_COMPLETIONS, body=params, cast_to=httpx2.Response, stream=True)
            try:
                # Each nested generator is closed here: a close of this one (cancel, disconnect)
                # must release the response now, not when the collector finds them.
                async with aclosing(_stream_chunks(response)) as chunks, aclosing(_read_stream(chunks)) as deltas:
                    async for chunk in deltas:
                        yield chunk
            finally:
                await response.aclose()
        except openai.APIError as exc:
            raise _classify(exc, self.provider) from exc
        except httpx2.TransportError as exc:
            raise RetryableModelError(f"OpenAI connection failed: {exc}", provider=self.provider) from exc
        finally:
            release()


_COMPLETIONS = "/chat/completions"


def _request_options(
    *, top_p: Any, stop: Any, seed: Any, response_format: Any, reasoning_effort: Any, reasoning_summary: Any,
    service_tier: Any, verbosity: Any,
) -> dict[str, Any]:
    """The Chat Completions fields of the model's options, without the unset ones.

    ``reasoning_effort``, ``service_tier`` and ``verbosity`` are top-level fields; the effort's
    summary is a Responses API setting that compatible routers (OpenRouter, LiteLLM) take on
    Chat Completions as ``reasoning: {"summary": ...}``, which is where it goes."""
    summary = effort_text("reasoning_summary", reasoning_summary)
    fields = {
        "top_p": unit_float("top_p", top_p),
        "stop": stop_list(stop),
        "seed": whole_number("seed", seed),
        "response_format": response_format_object(response_format),
        "reasoning_effort": effort_text("reasoning_effort", reasoning_effort),
        "service_tier": effort_text("service_tier", service_tier),
        "verbosity": effort_text("verbosity", verbosity),
        "reasoning": {"summary": summary} if summary else None,
    }
    return {name: value for name, value in fields.items() if value is not None}


def _usage(usage: Mapping[str, Any]) -> Usage:
    return Usage(
        input_tokens=json_int(usage.get("prompt_tokens")),
        output_tokens=json_int(usage.get("completion_tokens")),
        total_tokens=json_int(usage.get("total_tokens")),
        reasoning_tokens=json_int(json_object(usage.get("completion_tokens_details")).get("reasoning_tokens")),
        cache_read_tokens=json_int(json_object(usage.get("prompt_tokens_details")).get("cached_tokens")),
    )


def _text(message: Mapping[str, Any]) -> Iterator[ModelChunk]:
    """The thinking and the text of a message, or of a stream's delta."""
    # Compatible servers (DeepSeek, vLLM, Ollama) put thinking in a non-standard field.
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        yield ReasoningDelta(reasoning)
    content = message.get("content")
    if isinstance(content, str) and content:
        yield TextDelta(content)


def _read_whole(completion: Any) -> Iterator[ModelChunk]:
    """A non-streaming answer as the same chunks a stream gives, the text in one delta."""
    completion = json_object(completion)
    if completion.get("id"):
        yield ProviderData({"id": completion["id"]})
    choices = json_list(completion.get("choices"))
    message = json_object(json_object(choices[0]).get("message")) if choices else {}
    yield from _text(message)
    for index, call in enumerate(json_list(message.get("tool_calls"))):
        call = json_object(call)
        function = json_object(call.get("function"))
        if function:
            yield ToolCall(id=call.get("id") or f"call_{index}", name=function.get("name") or "", arguments=function.get("arguments") or "{}")
    if json_object(completion.get("usage")):
        yield _usage(completion["usage"])


async def _stream_chunks(response: Any) -> AsyncIterator[Any]:
    """The JSON chunks of a Chat Completions event stream, the body read to its end (after
    ``[DONE]`` too) so that the connection goes back to the pool. An ``error`` chunk is raised
    as the SDK raises it. A body with no event at all (an HTML page from a proxy or a wrong base
    URL) fails the call with the start of what came, rather than reading as an empty answer."""
    import openai

    data: list[str] = []
    done = False
    seen = False
    other = ""
    async with aclosing(_then_blank(response.aiter_lines())) as lines:
        async for line in lines:
            if line:
                if line.startswith("data:") and not done:
                    data.append(line[6:] if line.startswith("data: ") else line[5:])
                elif not seen and len(other) < 200:
                    other += line + "\n"
                continue  # event:, id:, retry: and comments carry nothing here
            if not data:
                continue
            seen = True
            payload, data = "\n".join(data), []
            if payload.startswith("[DONE]"):
                done = True
                continue
            try:
                chunk = json.loads(payload)
            except ValueError:
                raise openai.APIError(f"OpenAI sent an event that is not JSON: {payload[:200]!r}", request=response.request, body=None) from None
            if isinstance(chunk, dict) and chunk.get("error"):
                error = chunk["error"]
                message = error.get("message") if isinstance(error, dict) else None
                raise openai.APIError(message if isinstance(message, str) and message else "An error occurred during streaming", request=response.request, body=error)
            yield chunk
    if not seen:
        raise openai.APIError(f"OpenAI sent no events: {other[:200]!r}", request=response.request, body=None)


async def _then_blank(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The lines, then "": the end of the body ends a last event."""
    async with aclosing(lines):  # type: ignore[type-var]
        async for line in lines:
            yield line
    yield ""


async def _read_stream(chunks: AsyncIterator[Any]) -> AsyncIterator[ModelChunk]:
    calls: dict[int, dict[str, str]] = {}
    usage: Mapping[str, Any] = {}
    sent_provider_data = False
    async for chunk in chunks:
        chunk = json_object(chunk)
        if not sent_provider_data and chunk.get("id"):
            sent_provider_data = True
            yield ProviderData({"id": chunk["id"]})
        if json_object(chunk.get("usage")):
            usage = chunk["usage"]
        for choice in json_list(chunk.get("choices")):
            delta = json_object(json_object(choice).get("delta"))
            for piece in _text(delta):
                yield piece
            for call in json_list(delta.get("tool_calls")):
                call = json_object(call)
                index = call["index"] if isinstance(call.get("index"), int) else len(calls)
                entry = calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
                if call.get("id"):
                    entry["id"] = call["id"]
                function = json_object(call.get("function"))
                if function.get("name") and not entry["name"]:
                    entry["name"] = function["name"]
                if function.get("arguments"):
                    entry["arguments"] += function["arguments"]
    # Tool calls are only complete once the stream has ended.
    for index in sorted(calls):
        entry = calls[index]
        yield ToolCall(id=entry["id"] or f"call_{index}", name=entry["name"], arguments=entry["arguments"] or "{}")
    if usage:
        yield _usage(usage)


def _classify(exc: Exception, provider: str) -> ModelError:
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return RetryableModelError("OpenAI request timed out", provider=provider)
    if isinstance(exc, openai.APIConnectionError):
        return RetryableModelError(f"Could not connect to OpenAI: {exc}", provider=provider)
    if isinstance(exc, openai.APIStatusError):
        return status_error(provider, exc.status_code, exc.body, str(exc))
    return FatalModelError(str(exc), provider=provider)


def to_openai_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Stored message dicts -> Chat Completions messages (our bookkeeping keys stripped)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            item: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
            if message.get("tool_calls"):
                item["tool_calls"] = [
                    {
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": call["function"]["name"], "arguments": call["function"]["arguments"]},
                    }
                    for call in message["tool_calls"]
                ]
            elif item["content"] is None:
                item["content"] = ""
            out.append(item)
        elif role == "tool":
            out.append({"role": "tool", "tool_call_id": message.get("tool_call_id"), "content": message_text(message)})
        elif role == "user" and message.get("images"):
            parts: list[dict[str, Any]] = [{"type": "text", "text": message_text(message)}]
            for image in message["images"]:
                url = image_url(image)
                if url:
                    parts.append({"type": "image_url", "image_url": {"url": url}})
            out.append({"role": "user", "content": parts})
        elif role in ("system", "user"):
            out.append({"role": role, "content": message_text(message)})
    return out
