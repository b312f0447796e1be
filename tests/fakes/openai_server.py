"""A scriptable OpenAI-compatible Chat Completions server (``POST /v1/chat/completions``), with
``POST /v1/embeddings`` answering deterministic bag-of-words vectors (``fake_embedding``), and
``POST /v1/moderations`` flagging the categories an input names as ``[flag:<category>]``
(``fake_moderation``; those requests go to ``moderation_requests`` and consume no scripted item,
so a moderated run's model replies are scripted as without it; ``moderation_failure`` makes
them fail).

Drive the real ``openai`` SDK (or anything OpenAI-compatible) against it::

    from tests.fakes.openai_server import Call, Failure, FakeOpenAIServer, Reply

    with FakeOpenAIServer() as server:
        server.push(
            Reply(text="Hello there", usage=(12, 3)),                     # streamed word by word
            Reply(tool_calls=[Call("add", {"a": 2, "b": 3}), Call("add", {"a": 1, "b": 1})]),
            Failure(500, "upstream exploded"),                           # also 429, 401, 400 ...
            lambda request: Reply(text=f"{len(request.messages)} messages"),
        )
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)           # http://127.0.0.1:<port>/v1
        ...
        server.requests[0].body["messages"]                              # what the SDK sent

Each request consumes one scripted item (FIFO); with the queue empty, ``server.default`` answers.
Requests with ``"stream": true`` get SSE chunks (a final usage chunk when ``stream_options.
include_usage`` is set, then ``data: [DONE]``); others get one ``chat.completion`` JSON body.
See ``Reply`` for slowness (``delay``) and gating (``gate``), ``Failure`` for error injection.
"""
from __future__ import annotations

import json
import re
import zlib
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes._base import Call, Failure, FakeServer, Recorded, Reply, is_memory_request, pieces, routed

__all__ = ["Call", "Failure", "FakeOpenAIServer", "Recorded", "Reply"]

CREATED = 1_796_031_773
ERROR_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error", 429: "rate_limit_error"}


class FakeOpenAIServer(FakeServer):
    paths = ("/v1/chat/completions", "/chat/completions", "/v1/embeddings", "/embeddings")

    def __init__(self) -> None:
        super().__init__()
        self.moderation_requests: list[Recorded] = []
        self.moderation_failure: Failure | None = None

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        if method == "POST" and handler.path.split("?")[0] in ("/v1/moderations", "/moderations"):
            length = int(handler.headers.get("Content-Length") or 0)
            body = json.loads(handler.rfile.read(length) or b"{}")
            with self._lock:
                self.moderation_requests.append(Recorded(method, handler.path, {k.lower(): v for k, v in handler.headers.items()}, body, tuple(handler.client_address)))
            failure = self.moderation_failure
            if failure is not None:
                self.send_json(handler, failure.status, {"error": {"message": failure.message, "type": "server_error"}})
            else:
                self.send_json(handler, 200, fake_moderation(body))
            return
        super()._handle(handler, method)

    def respond(self, handler: BaseHTTPRequestHandler, recorded: Recorded, item: Reply | Failure) -> None:
        if isinstance(item, Failure):
            error = {"message": item.message, "type": item.type or ERROR_TYPES.get(item.status, "server_error"), "param": None, "code": None}
            self.send_json(handler, item.status, {"error": error}, item.headers)
            return
        body = recorded.body if isinstance(recorded.body, dict) else {}
        if recorded.path.split("?")[0].endswith("/embeddings"):
            self.send_json(handler, 200, fake_embeddings(body))
            return
        completion_id = item.id or self.next_id("chatcmpl-")
        model = body.get("model", "fake-model")
        calls = [(call.id or self.next_id("call_"), call) for call in item.tool_calls]
        if body.get("stream"):
            self._stream(handler, item, body, completion_id, model, calls)
        else:
            if item.gate is not None:  # a whole answer is held back entirely
                item.gate.wait(item.gate_timeout)
            message: dict[str, Any] = {"role": "assistant", "content": item.text or None}
            if calls:
                message["tool_calls"] = [
                    {"id": cid, "type": "function", "function": {"name": c.name, "arguments": c.arguments_json()}} for cid, c in calls
                ]
            if item.reasoning:
                message["reasoning_content"] = item.reasoning
            payload: dict[str, Any] = {
                "id": completion_id,
                "object": "chat.completion",
                "created": CREATED,
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            }
            if item.usage is not None:
                payload["usage"] = _usage(item.usage)
            self.send_json(handler, 200, payload)

    def _stream(self, handler: BaseHTTPRequestHandler, item: Reply, body: dict[str, Any], completion_id: str, model: str, calls: list[tuple[str, Call]]) -> None:
        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": CREATED,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }

        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        deltas += [{"reasoning_content": p} for p in pieces(item.reasoning, item.words_per_chunk)]
        deltas += [{"content": p} for p in pieces(item.text, item.words_per_chunk)]
        for index, (call_id, call) in enumerate(calls):
            deltas.append({"tool_calls": [{"index": index, "id": call_id, "type": "function", "function": {"name": call.name, "arguments": ""}}]})
            for part in _split_args(call.arguments_json()):
                deltas.append({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
        frames = [chunk(d) for d in deltas] + [chunk({}, "tool_calls" if calls else "stop")]
        if item.usage is not None and (body.get("stream_options") or {}).get("include_usage"):
            frames.append({"id": completion_id, "object": "chat.completion.chunk", "created": CREATED, "model": model, "choices": [], "usage": _usage(item.usage)})

        if item.stream_error is not None:
            frames = frames[: len(frames) // 2] + [{"error": {"message": item.stream_error, "type": "server_error"}}]
        self.start_stream(handler)
        for index, frame in enumerate(frames):
            self.pace(item, index)
            self.write_chunk(handler, f"data: {json.dumps(frame)}\n\n")
        if item.stream_error is None:
            self.write_chunk(handler, "data: [DONE]\n\n")
        self.end_stream(handler)


def fake_embedding(text: str, dimensions: int) -> list[float]:
    """A deterministic bag-of-words vector: texts sharing words point the same way."""
    vector = [0.0] * dimensions
    for word in re.findall(r"\w+", text.lower()):
        vector[zlib.crc32(word.encode()) % dimensions] += 1.0
    return vector


def fake_embeddings(body: dict[str, Any]) -> dict[str, Any]:
    """``POST /v1/embeddings``: one vector per input, ``dimensions`` wide (1536 if not asked)."""
    inputs = body.get("input") or []
    inputs = [inputs] if isinstance(inputs, str) else list(inputs)
    dimensions = int(body.get("dimensions") or 1536)
    data = [{"object": "embedding", "index": index, "embedding": fake_embedding(text, dimensions)} for index, text in enumerate(inputs)]
    tokens = sum(len(str(text).split()) for text in inputs)
    return {"object": "list", "data": data, "model": body.get("model", "fake-embedder"), "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


MODERATION_CATEGORIES = ("harassment", "hate", "illicit", "self-harm", "sexual", "violence")


def fake_moderation(body: dict[str, Any]) -> dict[str, Any]:
    """``POST /v1/moderations``: flags each category the input names as ``[flag:<category>]``."""
    text = body.get("input") if isinstance(body.get("input"), str) else json.dumps(body.get("input"))
    categories = {name: f"[flag:{name}]" in text for name in MODERATION_CATEGORIES}
    scores = {name: 0.99 if on else 0.001 for name, on in categories.items()}
    result = {"flagged": any(categories.values()), "categories": categories, "category_scores": scores}
    return {"id": "modr-fake", "model": body.get("model", "omni-moderation-latest"), "results": [result]}


def _usage(usage: tuple[int, int]) -> dict[str, int]:
    return {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": usage[0] + usage[1]}


def _split_args(arguments: str) -> list[str]:
    """Arguments arrive in pieces, as from the real API."""
    if len(arguments) < 8:
        return [arguments]
    middle = len(arguments) // 2
    return [arguments[:middle], arguments[middle:]]
