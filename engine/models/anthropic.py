"""Anthropic Messages API through the official ``anthropic`` SDK (imported on first use)."""
from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from engine.errors import FatalModelError, ModelError, RetryableModelError
from engine.models._common import LoopClients, call_timeout, pool_limits, image_url, json_int, json_object, parse_arguments, required_env, status_error, whole_answer
from engine.models.options import MIN_THINKING_BUDGET, stop_list, unit_float, whole_number
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
        top_p: float | None = None,
        stop: str | list[str] | None = None,
        thinking_budget: int | None = None,
    ) -> None:
        super().__init__(id)
        self._api_key = api_key
        self._base_url = base_url
        self.timeout = timeout
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.options = _request_options(temperature=temperature, max_tokens=max_tokens, top_p=top_p, stop=stop, thinking_budget=thinking_budget)
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
        params.update(self.options)
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


def _request_options(*, temperature: Any, max_tokens: int, top_p: Any, stop: Any, thinking_budget: Any) -> dict[str, Any]:
    """The Messages API fields of the model's options, without the unset ones. Extended
    thinking takes a budget of at least 1,024 tokens, below ``max_tokens`` (the answer's room
    includes the thinking), and no temperature of ours: the API refuses both otherwise."""
    budget = whole_number("thinking_budget", thinking_budget, minimum=MIN_THINKING_BUDGET)
    if budget is not None and budget >= max_tokens:
        raise ValueError(f"thinking_budget ({budget}) must be below max_tokens ({max_tokens})")
    if budget is not None and temperature is not None:
        raise ValueError("Anthropic's extended thinking takes no temperature: leave temperature unset with thinking_budget")
    fields = {
        "top_p": unit_float("top_p", top_p),
        "stop_sequences": stop_list(stop),
        "thinking": {"type": "enabled", "budget_tokens": budget} if budget is not None else None,
    }
    return {name: value for name, value in fields.items() if value is not None}


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
    content = message.get("content")
    blocks = [json_object(block) for block in content] if isinstance(content, list) else []
    thinking = _Thinking()
    for block in blocks:
        thinking.read_block(block)
    if message.get("id") or thinking.kept:
        yield ProviderData({"id": message.get("id"), **thinking.kept})
    for block in blocks:
        kind = block.get("type")
        if kind == "thinking" and block.get("thinking"):
            yield ReasoningDelta(block["thinking"])
        elif kind == "text" and block.get("text"):
            yield TextDelta(block["text"])
        elif kind == "tool_use":
            arguments = json.dumps(block.get("input") or {})
            yield ToolCall(id=block.get("id") or "", name=block.get("name") or "", arguments=arguments)
    yield _usage(json_object(message.get("usage")))


class _Thinking:
    """What the API wants back of a turn's thinking: a turn that called tools must be followed
    by its thinking blocks as they came, signature included, or the next request is refused.
    The text is the message's ``reasoning_content``; the signature (and any redacted blocks)
    ride in its provider data."""

    def __init__(self) -> None:
        self.signature = ""
        self.redacted: list[str] = []

    def read_block(self, block: Mapping[str, Any]) -> None:
        if block.get("type") == "thinking" and isinstance(block.get("signature"), str):
            self.signature += block["signature"]
        elif block.get("type") == "redacted_thinking" and isinstance(block.get("data"), str):
            self.redacted.append(block["data"])

    @property
    def kept(self) -> dict[str, Any]:
        kept: dict[str, Any] = {}
        if self.signature:
            kept["thinking_signature"] = self.signature
        if self.redacted:
            kept["redacted_thinking"] = self.redacted
        return kept


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
    thinking = _Thinking()
    message_id = None
    async for event in response:
        event = json_object(event)
        kind = event.get("type")
        if kind == "message_start":
            message = json_object(event.get("message"))
            message_id = message.get("id")
            yield ProviderData({"id": message_id})
            usage = json_object(message.get("usage"))
            output_tokens = json_int(usage.get("output_tokens"))
        elif kind == "content_block_start":
            block = json_object(event.get("content_block"))
            thinking.read_block(block)
            if block.get("type") == "tool_use":
                blocks[event.get("index")] = {"id": block.get("id") or "", "name": block.get("name") or "", "json": ""}
        elif kind == "content_block_delta":
            delta = json_object(event.get("delta"))
            delta_type = delta.get("type")
            if delta_type == "text_delta" and delta.get("text"):
                yield TextDelta(delta["text"])
            elif delta_type == "thinking_delta" and delta.get("thinking"):
                yield ReasoningDelta(delta["thinking"])
            elif delta_type == "signature_delta" and isinstance(delta.get("signature"), str):
                thinking.signature += delta["signature"]
            elif delta_type == "input_json_delta" and event.get("index") in blocks:
                blocks[event["index"]]["json"] += delta.get("partial_json") or ""
        elif kind == "content_block_stop":
            block_data = blocks.pop(event.get("index"), None)
            if block_data is not None:
                yield ToolCall(id=block_data["id"], name=block_data["name"], arguments=block_data["json"] or "{}")
        elif kind == "message_delta":
            # message_delta carries the cumulative output token count.
            output_tokens = json_int(json_object(event.get("usage")).get("output_tokens")) or output_tokens
    if thinking.kept:
        yield ProviderData({"id": message_id, **thinking.kept})
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
            blocks = _thinking_blocks(message) if keep_tool_blocks else []
            blocks += [{"type": "text", "text": text}] if text else []
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



def _thinking_blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """An assistant turn's thinking as the API sent it (see ``_Thinking``); none for a turn
    without a signature (another provider's, or the reasoning model's)."""
    data = json_object(message.get("provider_data"))
    blocks: list[dict[str, Any]] = []
    if data.get("thinking_signature") and message.get("reasoning_content"):
        blocks.append({"type": "thinking", "thinking": message["reasoning_content"], "signature": data["thinking_signature"]})
    blocks += [{"type": "redacted_thinking", "data": item} for item in data.get("redacted_thinking") or [] if isinstance(item, str)]
    return blocks
