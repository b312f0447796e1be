"""An instant OpenAI-compatible model server for the HTTP benchmarks.

    python -m bench.fake_openai --port 18900

Answers ``POST /v1/chat/completions`` (streamed and not) with the same ten-token answer and
``GET /v1/models``; ``GET /stats`` reports how many completions it served and over how many
connections, so a benchmark can check that the server under test really called the model (and
whether it reuses connections). It is a bare asyncio protocol (no
framework) so its own CPU cost per request stays in the tens of microseconds and it never
becomes the bottleneck.
"""
from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import time
from typing import Any

ANSWER_TOKENS = ["Hello ", "from ", "the ", "fake ", "LLM. ", "This ", "is ", "a ", "short ", "answer."]
ANSWER = "".join(ANSWER_TOKENS)
USAGE = {"prompt_tokens": 20, "completion_tokens": len(ANSWER_TOKENS), "total_tokens": 20 + len(ANSWER_TOKENS)}
MODELS = json.dumps(
    {"object": "list", "data": [{"id": "gpt-4o-mini", "object": "model", "created": 0, "owned_by": "bench"}]}
)
# Large enough for any benchmark request (history of a few runs); a bigger body is refused.
MAX_BODY = 4 * 1024 * 1024


def completion(completion_id: str, model: str) -> bytes:
    return json.dumps(
        {
            "id": completion_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": ANSWER},
                "finish_reason": "stop",
                "logprobs": None,
            }],
            "usage": USAGE,
        },
        separators=(",", ":"),
    ).encode()


def completion_stream(completion_id: str, model: str, include_usage: bool) -> bytes:
    base = {"id": completion_id, "object": "chat.completion.chunk", "created": int(time.time()), "model": model}

    def chunk(delta: dict, finish_reason: str | None = None, **extra: Any) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
        body = {**base, "choices": [choice], **extra}
        return "data: " + json.dumps(body, separators=(",", ":")) + "\n\n"

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": token}) for token in ANSWER_TOKENS]
    events.append(chunk({}, "stop"))
    if include_usage:
        events.append("data: " + json.dumps({**base, "choices": [], "usage": USAGE}, separators=(",", ":")) + "\n\n")
    events.append("data: [DONE]\n\n")
    return "".join(events).encode()


def response(status: str, body: bytes, content_type: str = "application/json", keep_alive: bool = True) -> bytes:
    head = (
        f"HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {len(body)}\r\n"
        f"connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
    )
    return head.encode() + body


class FakeOpenAI(asyncio.Protocol):
    ids = itertools.count(1)
    served = 0
    connections = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        FakeOpenAI.connections += 1
        self.transport = transport
        self.buffer = b""

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        # Clients may pipeline or split requests across packets: handle every complete one.
        while True:
            head_end = self.buffer.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self.buffer[:head_end].decode("latin-1").split("\r\n")
            headers = {}
            for line in head[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0"))
            # OpenAI clients always send Content-Length; a chunked request body is not supported.
            if length > MAX_BODY or "chunked" in headers.get("transfer-encoding", ""):
                self.transport.write(response("413 Payload Too Large", b"{}", keep_alive=False))
                self.transport.close()
                return
            if len(self.buffer) < head_end + 4 + length:
                return
            body = self.buffer[head_end + 4 : head_end + 4 + length]
            self.buffer = self.buffer[head_end + 4 + length :]
            keep_alive = headers.get("connection", "").lower() != "close"
            self.transport.write(self.answer(head[0], body, keep_alive))
            if not keep_alive:
                self.transport.close()
                return

    def answer(self, request_line: str, body: bytes, keep_alive: bool) -> bytes:
        method, _, rest = request_line.partition(" ")
        path = rest.partition(" ")[0].split("?")[0]
        if method == "POST" and path.endswith("/chat/completions"):
            try:
                request = json.loads(body or b"{}")
            except ValueError:
                return response("400 Bad Request", b'{"error":{"message":"invalid JSON"}}', keep_alive=keep_alive)
            FakeOpenAI.served += 1
            completion_id = f"chatcmpl-{next(self.ids):08x}"
            model = request.get("model") or "gpt-4o-mini"
            if request.get("stream"):
                include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
                payload = completion_stream(completion_id, model, include_usage)
                return response("200 OK", payload, "text/event-stream", keep_alive)
            return response("200 OK", completion(completion_id, model), keep_alive=keep_alive)
        if method == "GET" and path.endswith("/models"):
            return response("200 OK", MODELS.encode(), keep_alive=keep_alive)
        if method == "GET" and path == "/stats":
            stats = {"completions": FakeOpenAI.served, "connections": FakeOpenAI.connections}
            return response("200 OK", json.dumps(stats).encode(), keep_alive=keep_alive)
        if method == "GET" and path == "/health":
            return response("200 OK", b'{"status":"ok"}', keep_alive=keep_alive)
        return response("404 Not Found", b'{"error":{"message":"not found"}}', keep_alive=keep_alive)


async def serve(host: str, port: int) -> None:
    server = await asyncio.get_running_loop().create_server(FakeOpenAI, host, port, backlog=1024)
    print(f"fake OpenAI server on http://{host}:{port}/v1", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=18900)
    args = parser.parse_args()
    try:
        from uvloop import run
    except ImportError:
        run = asyncio.run
    try:
        run(serve(args.host, args.port))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
