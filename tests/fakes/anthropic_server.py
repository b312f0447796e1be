"""A scriptable Anthropic Messages API server (``POST /v1/messages``).

Same control API as ``tests.fakes.openai_server`` (``push``, ``default``, ``requests``,
``wait_for_requests``, ``reset``)::

    from tests.fakes.anthropic_server import Call, Failure, FakeAnthropicServer, Reply

    with FakeAnthropicServer() as server:
        server.push(Reply(text="Hi", usage=(12, 3)), Reply(tool_calls=[Call("add", {"a": 1, "b": 2})]))
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)    # http://127.0.0.1:<port>
        ...

Streaming requests get the real event sequence (``message_start``, ``content_block_*``,
``message_delta`` with the output token count, ``message_stop``); ``Reply.reasoning`` becomes a
thinking block. Failures use Anthropic's ``{"type": "error", "error": {...}}`` body.
"""
from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes._base import Call, Failure, FakeServer, Recorded, Reply, pieces

__all__ = ["Call", "Failure", "FakeAnthropicServer", "Recorded", "Reply"]

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}


class FakeAnthropicServer(FakeServer):
    paths = ("/v1/messages",)

    @property
    def base_url(self) -> str:
        return self.origin

    def respond(self, handler: BaseHTTPRequestHandler, recorded: Recorded, item: Reply | Failure) -> None:
        if isinstance(item, Failure):
            error = {"type": item.type or ERROR_TYPES.get(item.status, "api_error"), "message": item.message}
            self.send_json(handler, item.status, {"type": "error", "error": error}, item.headers)
            return
        body = recorded.body if isinstance(recorded.body, dict) else {}
        message_id = item.id or self.next_id("msg_")
        model = body.get("model", "fake-claude")
        calls = [(call.id or self.next_id("toolu_"), call) for call in item.tool_calls]
        usage = item.usage or (0, 0)
        stop_reason = "tool_use" if calls else "end_turn"
        if not body.get("stream"):
            content: list[dict[str, Any]] = []
            if item.reasoning:
                content.append({"type": "thinking", "thinking": item.reasoning, "signature": "fake"})
            if item.text:
                content.append({"type": "text", "text": item.text})
            content += [{"type": "tool_use", "id": cid, "name": c.name, "input": json.loads(c.arguments_json() or "{}")} for cid, c in calls]
            self.send_json(
                handler,
                200,
                {
                    "id": message_id, "type": "message", "role": "assistant", "model": model, "content": content,
                    "stop_reason": stop_reason, "stop_sequence": None,
                    "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
                },
            )
            return

        events: list[tuple[str, dict[str, Any]]] = [
            ("message_start", {"type": "message_start", "message": {
                "id": message_id, "type": "message", "role": "assistant", "model": model, "content": [],
                "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": usage[0], "output_tokens": 1}}}),
        ]
        index = 0
        if item.reasoning:
            events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}))
            events += [("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": p}}) for p in pieces(item.reasoning, item.words_per_chunk)]
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": "fake"}}))
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
            index += 1
        if item.text:
            events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}))
            events += [("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}}) for p in pieces(item.text, item.words_per_chunk)]
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
            index += 1
        for call_id, call in calls:
            events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": call_id, "name": call.name, "input": {}}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": call.arguments_json()}}))
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
            index += 1
        events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None}, "usage": {"output_tokens": usage[1]}}))
        events.append(("message_stop", {"type": "message_stop"}))

        self.start_stream(handler)
        for position, (name, data) in enumerate(events):
            self.pace(item, position)
            self.write_chunk(handler, f"event: {name}\ndata: {json.dumps(data)}\n\n")
        self.end_stream(handler)
