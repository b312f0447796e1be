"""Anthropic Messages API through the official ``anthropic`` SDK (imported on first use)."""
from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from agents.runtime.errors import FatalModelError, ModelError, RetryableModelError
from agents.runtime.models._common import LoopClients, call_timeout, pool_limits, image_url, json_int, json_object, parse_arguments, required_env, status_error, whole_answer
from agents.runtime.models.base import (
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
    import anthropic


class Claude(Model):
    provider = "Anthropic"
    name = "Claude"

    def __init__(
        self,
        id: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        temperature: float | None = None,
        max_tokens: int = 4096,
    ) -> None:
        super().__init__(id)
        self._api_key = api_key
        self._base_url = base_url
        self.timeout = timeout
        self.temperature = temperature
        self.max_tokens = max_tokens
        self._clients = LoopClients(self._make_client)

    def _make_client(self) -> anthropic.AsyncAnthropic:
        # Checked before importing the SDK: the error is then immediate and clear.
        api_key = required_env(self._api_key, "ANTHROPIC_API_KEY", self.provider)

        import anthropic

        base_url = self._base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        return anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url, timeout=call_timeout(self.timeout), max_retries=0,
            http_client=anthropic.DefaultAsyncHttpxClient(limits=pool_limits()),
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
        import anthropic
        import httpx2

        system, converted = to_anthropic_messages(messages, keep_tool_blocks=bool(tools))
        params: dict[str, Any] = {
            "model": self.id,
            "max_tokens": self.max_tokens,
            "messages": converted,
        }
        if system:
            params["system"] = system
        if tools:
            params["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
            ]
            params["tool_choice"] = {"type": tool_choice}
        if self.temperature is not None:
            params["temperature"] = self.temperature
        # Structured output is requested through the system prompt (see structured.py); the
        # Messages API has no response_format.

        client, release = self._clients.take()
        try:
            # The SDK's untyped call, as for OpenAI: its client, errors and SSE decoding, without
            # building typed request and event objects (most of the SDK's CPU per call).
            if not incremental:
                for chunk in _read_whole(await whole_answer(client, _MESSAGES, params, self.provider)):
                    yield chunk
                return
            response = await client.post(
                _MESSAGES, body={**params, "stream": True}, cast_to=object, stream=True, stream_cls=anthropic.AsyncStream[object]
            )
            try:
                # Closed here, as for OpenAI: a close of this generator releases the response now.
                async with aclosing(_at_least_one(response, self.provider)) as events, aclosing(_read_stream(events)) as deltas:
                    async for chunk in deltas:
                        yield chunk
            finally:
                await response.close()
        except anthropic.APIError as exc:
            raise _classify(exc, self.provider) from exc
        except httpx2.TransportError as exc:
            raise RetryableModelError(f"Anthropic connection failed: {exc}", provider=self.provider) from exc
        finally:
            release()


_MESSAGES = "/v1/messages"


def _usage(usage: Mapping[str, Any], output_tokens: int | None = None) -> Usage:
    input_tokens = json_int(usage.get("input_tokens"))
    output = json_int(usage.get("output_tokens")) if output_tokens is None else output_tokens
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output,
        total_tokens=input_tokens + output,
        cache_read_tokens=json_int(usage.get("cache_read_input_tokens")),
        cache_write_tokens=json_int(usage.get("cache_creation_input_tokens")),
    )


def _read_whole(message: Any) -> Iterator[ModelChunk]:
    """A non-streaming answer as the same chunks a stream gives."""
    message = json_object(message)
    if message.get("id"):
        yield ProviderData({"id": message["id"]})
    content = message.get("content")
    for block in content if isinstance(content, list) else []:
        block = json_object(block)
        kind = block.get("type")
        if kind == "thinking" and block.get("thinking"):
            yield ReasoningDelta(block["thinking"])
        elif kind == "text" and block.get("text"):
            yield TextDelta(block["text"])
        elif kind == "tool_use":
            arguments = json.dumps(block.get("input") or {})
            yield ToolCall(id=block.get("id") or "", name=block.get("name") or "", arguments=arguments)
    yield _usage(json_object(message.get("usage")))


async def _at_least_one(events: Any, provider: str) -> AsyncIterator[Any]:
    """The stream's events; none at all (an HTML page from a proxy or a wrong base URL) fails
    the call rather than reading as an empty answer."""
    seen = False
    async for event in events:
        seen = True
        yield event
    if not seen:
        raise FatalModelError(f"{provider} sent no events: the answer was not an event stream", provider=provider)


async def _read_stream(response: Any) -> AsyncIterator[ModelChunk]:
    usage: Mapping[str, Any] = {}
    output_tokens = 0
    blocks: dict[int, dict[str, str]] = {}
    async for event in response:
        event = json_object(event)
        kind = event.get("type")
        if kind == "message_start":
            message = json_object(event.get("message"))
            yield ProviderData({"id": message.get("id")})
            usage = json_object(message.get("usage"))
            output_tokens = json_int(usage.get("output_tokens"))
        elif kind == "content_block_start":
            block = json_object(event.get("content_block"))
            if block.get("type") == "tool_use":
                blocks[event.get("index")] = {"id": block.get("id") or "", "name": block.get("name") or "", "json": ""}
        elif kind == "content_block_delta":
            delta = json_object(event.get("delta"))
            delta_type = delta.get("type")
            if delta_type == "text_delta" and delta.get("text"):
                yield TextDelta(delta["text"])
            elif delta_type == "thinking_delta" and delta.get("thinking"):
                yield ReasoningDelta(delta["thinking"])
            elif delta_type == "input_json_delta" and event.get("index") in blocks:
                blocks[event["index"]]["json"] += delta.get("partial_json") or ""
        elif kind == "content_block_stop":
            block_data = blocks.pop(event.get("index"), None)
            if block_data is not None:
                yield ToolCall(id=block_data["id"], name=block_data["name"], arguments=block_data["json"] or "{}")
        elif kind == "message_delta":
            # message_delta carries the cumulative output token count.
            output_tokens = json_int(json_object(event.get("usage")).get("output_tokens")) or output_tokens
    yield _usage(usage, output_tokens)


def _classify(exc: Exception, provider: str) -> ModelError:
    import anthropic

    if isinstance(exc, anthropic.APITimeoutError):
        return RetryableModelError("Anthropic request timed out", provider=provider)
    if isinstance(exc, anthropic.APIConnectionError):
        return RetryableModelError(f"Could not connect to Anthropic: {exc}", provider=provider)
    if isinstance(exc, anthropic.APIStatusError):
        return status_error(provider, exc.status_code, exc.body, str(exc))
    return FatalModelError(str(exc), provider=provider)


def to_anthropic_messages(
    messages: Sequence[Mapping[str, Any]], *, keep_tool_blocks: bool = True
) -> tuple[str, list[dict[str, Any]]]:
    """Stored message dicts -> (system prompt, Messages API messages).

    Tool results become ``tool_result`` blocks in a user message, and consecutive messages of one
    role are merged, as the API wants. The API refuses ``tool_use`` blocks in a request without
    ``tools``, so when there are none (history from a run that used tools) they become plain text.
    """
    system_parts: list[str] = []
    out: list[dict[str, Any]] = []

    def append(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for message in messages:
        role = message.get("role")
        text = message_text(message)
        if role == "system":
            system_parts.append(text)
        elif role == "user":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": text or " "}]
            for image in message.get("images") or []:
                url = image_url(image)
                if url and url.startswith("data:"):
                    mime, _, data = url[5:].partition(";base64,")
                    blocks.append({"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}})
                elif url:
                    blocks.append({"type": "image", "source": {"type": "url", "url": url}})
            append("user", blocks)
        elif role == "assistant":
            blocks = [{"type": "text", "text": text}] if text else []
            for call in message.get("tool_calls") or []:
                function = call["function"]
                if keep_tool_blocks:
                    blocks.append(
                        {"type": "tool_use", "id": call["id"], "name": function["name"], "input": parse_arguments(function["arguments"])}
                    )
                else:
                    blocks.append({"type": "text", "text": f"[called tool {function['name']} with {function['arguments']}]"})
            append("assistant", blocks)
        elif role == "tool":
            if keep_tool_blocks:
                block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.get("tool_call_id"), "content": text}
                if message.get("tool_call_error"):
                    block["is_error"] = True
                append("user", [block])
            else:
                append("user", [{"type": "text", "text": f"[tool {message.get('tool_name')} returned: {text}]"}])
    return "\n\n".join(p for p in system_parts if p), out

