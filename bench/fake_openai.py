"""An OpenAI-compatible model server for the HTTP benchmarks: instant, or slow like a real model.

    python -m bench.fake_openai --port 18900 [--first-token-ms 2000 --token-ms 100] [--first-token-jitter 0.25]
        [--model-delay MODEL=FIRST_MS[:TOKEN_MS] ...] [--call-tool NAME=ARGUMENTS_JSON ...]

Answers ``POST /v1/chat/completions`` (streamed and not) with the same ten-token answer and
``GET /v1/models``; ``GET /stats`` reports how many completions it served and over how many
connections (in slow mode also, per model id, how many are in progress and the most at once since
``POST /stats/reset``), so a benchmark can check that the server under test really called the model (and
whether it reuses connections). It is a bare asyncio protocol (no
framework) so its own CPU cost per request stays in the tens of microseconds and it never
becomes the bottleneck.

By default it answers at once. ``--first-token-ms`` and ``--token-ms`` make it a slow model: a
streamed answer starts (status line, headers and first token) after ``--first-token-ms`` and sends
each further token ``--token-ms`` later (chunked transfer encoding); a non-streamed answer arrives
whole after the same total time. Each answer waits on asyncio timers, so a thousand answers in
flight cost the server nothing but their timers. ``--first-token-jitter J`` spreads each answer's
wait before its first token uniformly over ``(1 ± J)`` times its pace (a seeded generator: the same
sequence each run), as real models' do, so that streams started together do not stay in step. ``--model-delay`` gives one model id (the
request's ``model``) a pace of its own, e.g. a team's members and leader answering at different
speeds; other models keep the global pace.

``--call-tool`` scripts a tool-calling turn: a request that offers the function NAME and has no tool
result after its last user message is answered with one call to NAME (ARGUMENTS_JSON), finish
reason ``tool_calls``, after the first-token wait; the request that carries the tool's result gets
the usual answer. A team leader's delegation turn, then its final answer, is the case it is for.
Without these options the server behaves as it always did.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import random
import time
from collections.abc import Iterator
from typing import Any

ANSWER_TOKENS = ["Hello ", "from ", "the ", "fake ", "LLM. ", "This ", "is ", "a ", "short ", "answer."]
ANSWER = "".join(ANSWER_TOKENS)
USAGE = {"prompt_tokens": 20, "completion_tokens": len(ANSWER_TOKENS), "total_tokens": 20 + len(ANSWER_TOKENS)}
MODELS = json.dumps(
    {"object": "list", "data": [{"id": "gpt-4o-mini", "object": "model", "created": 0, "owned_by": "bench"}]}
)
# Large enough for any benchmark request (history of a few runs); a bigger body is refused.
MAX_BODY = 4 * 1024 * 1024


def completion(completion_id: str, model: str, call: tuple[str, str] | None = None) -> bytes:
    message: dict[str, Any] = {"role": "assistant", "content": ANSWER}
    if call:
        message = {"role": "assistant", "content": None, "tool_calls": [tool_call(completion_id, *call)]}
    return json.dumps(
        {
            "id": completion_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if call else "stop",
                "logprobs": None,
            }],
            "usage": USAGE,
        },
        separators=(",", ":"),
    ).encode()


def tool_call(completion_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": f"call_{completion_id[-8:]}", "type": "function", "function": {"name": name, "arguments": arguments}}


def stream_parts(completion_id: str, model: str, include_usage: bool, call: tuple[str, str] | None = None) -> list[str]:
    """The SSE text of a streamed answer, one part per token: the first part also carries the
    role chunk, the last one the finish reason, the usage and ``[DONE]``. A scripted tool call is
    one part: the whole call in one delta."""
    base = {"id": completion_id, "object": "chat.completion.chunk", "created": int(time.time()), "model": model}

    def chunk(delta: dict, finish_reason: str | None = None, **extra: Any) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
        body = {**base, "choices": [choice], **extra}
        return "data: " + json.dumps(body, separators=(",", ":")) + "\n\n"

    if call:
        parts = [chunk({"role": "assistant", "content": None, "tool_calls": [{"index": 0, **tool_call(completion_id, *call)}]})]
    else:
        parts = [chunk({"content": token}) for token in ANSWER_TOKENS]
        parts[0] = chunk({"role": "assistant", "content": ""}) + parts[0]
    tail = chunk({}, "tool_calls" if call else "stop")
    if include_usage:
        tail += "data: " + json.dumps({**base, "choices": [], "usage": USAGE}, separators=(",", ":")) + "\n\n"
    parts[-1] += tail + "data: [DONE]\n\n"
    return parts


def completion_stream(completion_id: str, model: str, include_usage: bool, call: tuple[str, str] | None = None) -> bytes:
    return "".join(stream_parts(completion_id, model, include_usage, call)).encode()


def scripted_call(request: dict, scripts: dict[str, str]) -> tuple[str, str] | None:
    """(name, arguments) of the call ``--call-tool`` scripts for this request, if any: the request
    offers the function and no tool result follows its last user message."""
    if not scripts:
        return None
    offered = [(tool.get("function") or {}).get("name") for tool in request.get("tools") or [] if isinstance(tool, dict)]
    name = next((name for name in offered if name in scripts), None)
    if name is None:
        return None
    for message in reversed(request.get("messages") or []):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            return None
        if role == "user":
            break
    return name, scripts[name]


def http_chunk(text: str) -> bytes:
    data = text.encode()
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


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
    # The slow mode (seconds; 0: instant): before the first token, and between two tokens.
    first_token_s = 0.0
    token_s = 0.0
    first_token_jitter = 0.0
    jitter = random.Random(18)
    # --model-delay: model id -> (first_token_s, token_s); --call-tool: function name -> arguments.
    model_delays: dict[str, tuple[float, float]] = {}
    tool_scripts: dict[str, str] = {}
    # Slow mode, per model id: completions in progress, and the most at once since /stats/reset.
    waiting: dict[str, int] = {}
    peak: dict[str, int] = {}

    @classmethod
    def pace(cls, model: str | None) -> tuple[float, float]:
        first_token_s, token_s = cls.model_delays.get(model or "", (cls.first_token_s, cls.token_s))
        if cls.first_token_jitter:
            first_token_s *= cls.jitter.uniform(1 - cls.first_token_jitter, 1 + cls.first_token_jitter)
        return first_token_s, token_s

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        FakeOpenAI.connections += 1
        self.transport = transport
        self.buffer = b""
        # Slow mode: requests wait here and are answered in order by one task per connection.
        self.queue: list[tuple[str, bytes, bool]] = []
        self.answering: asyncio.Task | None = None

    def connection_lost(self, exc: Exception | None) -> None:
        if self.answering is not None:
            self.answering.cancel()

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
            if self.first_token_s or self.token_s or self.model_delays:
                self.queue.append((head[0], body, keep_alive))
                if self.answering is None:
                    self.answering = asyncio.get_running_loop().create_task(self.answer_slowly())
                if not keep_alive:
                    return
                continue
            self.transport.write(self.answer(head[0], body, keep_alive))
            if not keep_alive:
                self.transport.close()
                return

    async def answer_slowly(self) -> None:
        """Answer the queued requests one after the other, completions at the slow model's pace."""
        while self.queue:
            request_line, body, keep_alive = self.queue.pop(0)
            request = self.completion_request(request_line, body)
            if request is None:
                self.transport.write(self.answer(request_line, body, keep_alive))
            else:
                with self.in_flight(request.get("model") or ""):
                    await self.complete_slowly(request_line, body, request, keep_alive)
            if not keep_alive:
                self.transport.close()
                break
        self.answering = None

    @contextlib.contextmanager
    def in_flight(self, model: str) -> Iterator[None]:
        """Count the model's completions in progress, and the most there were at once (/stats)."""
        FakeOpenAI.waiting[model] = FakeOpenAI.waiting.get(model, 0) + 1
        FakeOpenAI.peak[model] = max(FakeOpenAI.peak.get(model, 0), FakeOpenAI.waiting[model])
        try:
            yield
        finally:
            FakeOpenAI.waiting[model] -= 1

    async def complete_slowly(self, request_line: str, body: bytes, request: dict, keep_alive: bool) -> None:
        if request.get("stream"):
            await self.stream_slowly(request, keep_alive)
            return
        first_token_s, token_s = self.pace(request.get("model"))
        tokens = 1 if scripted_call(request, self.tool_scripts) else len(ANSWER_TOKENS)
        await asyncio.sleep(first_token_s + token_s * (tokens - 1))
        self.transport.write(self.answer(request_line, body, keep_alive))

    async def stream_slowly(self, request: dict, keep_alive: bool) -> None:
        FakeOpenAI.served += 1
        include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
        call = scripted_call(request, self.tool_scripts)
        parts = stream_parts(f"chatcmpl-{next(self.ids):08x}", request.get("model") or "gpt-4o-mini", include_usage, call)
        first_token_s, token_s = self.pace(request.get("model"))
        head = (
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
            f"connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
        )
        await asyncio.sleep(first_token_s)
        self.transport.write(head.encode() + http_chunk(parts[0]))
        for part in parts[1:]:
            await asyncio.sleep(token_s)
            self.transport.write(http_chunk(part))
        self.transport.write(b"0\r\n\r\n")

    @staticmethod
    def completion_request(request_line: str, body: bytes) -> dict | None:
        """The parsed body of a well-formed chat completion request; None for anything else."""
        method, _, rest = request_line.partition(" ")
        if method != "POST" or not rest.partition(" ")[0].split("?")[0].endswith("/chat/completions"):
            return None
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            return None
        return request if isinstance(request, dict) else None

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
            call = scripted_call(request, self.tool_scripts)
            if request.get("stream"):
                include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
                payload = completion_stream(completion_id, model, include_usage, call)
                return response("200 OK", payload, "text/event-stream", keep_alive)
            return response("200 OK", completion(completion_id, model, call), keep_alive=keep_alive)
        if method == "GET" and path.endswith("/models"):
            return response("200 OK", MODELS.encode(), keep_alive=keep_alive)
        if method == "GET" and path == "/stats":
            stats = {"completions": FakeOpenAI.served, "connections": FakeOpenAI.connections,
                     "in_flight": FakeOpenAI.waiting, "peak_in_flight": FakeOpenAI.peak}
            return response("200 OK", json.dumps(stats).encode(), keep_alive=keep_alive)
        if method == "POST" and path == "/stats/reset":
            FakeOpenAI.peak = dict(FakeOpenAI.waiting)
            return response("200 OK", b"{}", keep_alive=keep_alive)
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
    parser.add_argument("--first-token-ms", type=float, default=0.0,
                        help="slow mode: wait this long before the first token (default 0: instant)")
    parser.add_argument("--token-ms", type=float, default=0.0,
                        help="slow mode: wait this long between two tokens (default 0)")
    parser.add_argument("--first-token-jitter", type=float, default=0.0, metavar="J",
                        help="slow mode: each first-token wait is uniform in (1 ± J) times its pace (default 0)")
    parser.add_argument("--model-delay", action="append", default=[], metavar="MODEL=FIRST_MS[:TOKEN_MS]",
                        help="this model's own slow mode (repeatable; TOKEN_MS defaults to --token-ms)")
    parser.add_argument("--call-tool", action="append", default=[], metavar="NAME=ARGUMENTS_JSON",
                        help="answer a request offering function NAME, before its tool result, with a call to it")
    args = parser.parse_args()
    FakeOpenAI.first_token_s = args.first_token_ms / 1000
    FakeOpenAI.token_s = args.token_ms / 1000
    if not 0 <= args.first_token_jitter < 1:
        parser.error("--first-token-jitter must be in [0, 1)")
    FakeOpenAI.first_token_jitter = args.first_token_jitter
    for item in args.model_delay:
        model, _, pace = item.partition("=")
        first_ms, _, token_ms = pace.partition(":")
        FakeOpenAI.model_delays[model] = (float(first_ms) / 1000, float(token_ms or args.token_ms) / 1000)
    for item in args.call_tool:
        name, _, arguments = item.partition("=")
        json.loads(arguments)  # a malformed script fails here, not in the middle of a benchmark
        FakeOpenAI.tool_scripts[name] = arguments
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
