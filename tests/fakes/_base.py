"""Machinery shared by the fake provider servers: a threaded stdlib HTTP server on an ephemeral
127.0.0.1 port, a FIFO script of responses, and a record of every request received."""
from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Union


@dataclass
class Call:
    """A tool call the fake model makes. ``arguments`` may be a dict or raw JSON text."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def arguments_json(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass
class Reply:
    """A successful model answer.

    ``text`` is streamed ``words_per_chunk`` words at a time; ``tool_calls`` (several allowed) come
    after it; ``usage`` is ``(input_tokens, output_tokens)`` or ``None`` for no usage report.
    ``reasoning`` is streamed first (``reasoning_content`` for OpenAI, a thinking block for
    Anthropic). ``delay`` sleeps that long before each chunk after the first (slowness).
    ``gate``: after the first ``gate_after`` chunks the server waits until the event is set
    (deterministic cancel / disconnect tests), or ``gate_timeout`` seconds pass; a non-streamed
    answer waits before it is sent at all.
    """

    text: str = ""
    tool_calls: list[Call] = field(default_factory=list)
    usage: tuple[int, int] | None = (10, 5)
    reasoning: str = ""
    words_per_chunk: int = 1
    delay: float = 0.0
    gate: threading.Event | None = None
    gate_after: int = 1
    gate_timeout: float = 30.0
    id: str | None = None
    # A streamed answer breaks off with this error event instead of finishing.
    stream_error: str | None = None


@dataclass
class Failure:
    """An HTTP error answer (500, 429, 401, 400 ...) with the provider's error body."""

    status: int
    message: str = "fake upstream failure"
    type: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    peer: tuple[str, int] | None = None  # the client's address: one per connection

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list((self.body or {}).get("messages") or [])


Script = Union[Reply, Failure, Callable[[Recorded], Union[Reply, Failure]]]


def is_memory_request(recorded: Recorded) -> bool:
    """The memory manager's call (its system prompt), which runs beside the run's answer."""
    messages = recorded.messages
    return bool(messages) and "Memory Manager" in str(messages[0].get("content") or "")


def routed(predicate: Callable[[Recorded], bool], matching: list[Script], other: list[Script]) -> list[Script]:
    """Script items for calls that race (a run's memory call beside its answer): each request
    takes the next item of its own kind, whatever the order they arrive in. Push all of them."""
    queues = (deque(matching), deque(other))
    lock = threading.Lock()

    def pick(recorded: Recorded) -> Reply | Failure:
        with lock:
            item = queues[0 if predicate(recorded) else 1].popleft()
        return item(recorded) if callable(item) and not isinstance(item, (Reply, Failure)) else item

    return [pick] * (len(matching) + len(other))


def pieces(text: str, words_per_chunk: int = 1) -> list[str]:
    words = re.findall(r"\s*\S+\s*", text)
    return ["".join(words[i : i + words_per_chunk]) for i in range(0, len(words), max(1, words_per_chunk))]


class _QuietServer(ThreadingHTTPServer):
    request_queue_size = 1024  # a thousand runs may call it at once

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that hang up (cancelled streams, closed keep-alive connections) are normal here.
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class FakeServer:
    """Base class; subclasses implement ``respond(handler, recorded, script_item)``.

    Control API (all thread-safe):
      ``push(*items)``        queue Reply / Failure / callable(Recorded) -> Reply|Failure, one per request
      ``default``             the Reply used when the queue is empty
      ``requests``            the Recorded requests so far (copy)
      ``wait_for_requests(n, timeout=5)``  block until n requests arrived (or raise TimeoutError)
      ``reset()``             clear queue and record
      ``base_url``            URL to point the SDK at; ``start()`` / ``stop()`` or use as a context manager
    """

    paths: tuple[str, ...] = ()

    def __init__(self) -> None:
        self.default: Reply = Reply(text="Hello from the fake LLM. This is a short answer.")
        self._queue: deque[Script] = deque()
        self._requests: list[Recorded] = []
        self._lock = threading.Condition()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0

    # ---- control ------------------------------------------------------------------------------

    def push(self, *items: Script) -> FakeServer:
        with self._lock:
            self._queue.extend(items)
        return self

    @property
    def requests(self) -> list[Recorded]:
        with self._lock:
            return list(self._requests)

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[Recorded]:
        deadline = time.monotonic() + timeout
        with self._lock:
            while len(self._requests) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"expected {count} requests, got {len(self._requests)}")
                self._lock.wait(remaining)
            return list(self._requests)

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self._requests.clear()

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return self._server.server_address[1]

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeServer:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                fake._handle(self, "GET")

            def do_POST(self) -> None:
                fake._handle(self, "POST")

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name=type(self).__name__, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- request handling ---------------------------------------------------------------------

    def next_id(self, prefix: str) -> str:
        with self._lock:
            self._counter += 1
            return f"{prefix}{self._counter:08x}"

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        recorded = Recorded(method, handler.path, {k.lower(): v for k, v in handler.headers.items()}, body, tuple(handler.client_address))
        if method != "POST" or handler.path.split("?")[0] not in self.paths:
            self.send_json(handler, 404, {"error": {"message": f"no route {method} {handler.path}", "type": "not_found"}})
            return
        with self._lock:
            self._requests.append(recorded)
            self._lock.notify_all()
            item: Script = self._queue.popleft() if self._queue else self.default
        if callable(item) and not isinstance(item, (Reply, Failure)):
            item = item(recorded)
        try:
            self.respond(handler, recorded, item)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away (cancel, disconnect): nothing to do

    def respond(self, handler: BaseHTTPRequestHandler, recorded: Recorded, item: Reply | Failure) -> None:
        raise NotImplementedError

    # ---- wire helpers -------------------------------------------------------------------------

    @staticmethod
    def send_json(handler: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(data)

    @staticmethod
    def start_stream(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream; charset=utf-8")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()

    @staticmethod
    def write_chunk(handler: BaseHTTPRequestHandler, text: str) -> None:
        data = text.encode()
        handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        handler.wfile.flush()

    @staticmethod
    def end_stream(handler: BaseHTTPRequestHandler) -> None:
        handler.wfile.write(b"0\r\n\r\n")
        handler.wfile.flush()

    @staticmethod
    def pace(reply: Reply, index: int) -> None:
        """Apply a reply's slowness and gate before chunk ``index``."""
        if index > 0 and reply.delay:
            time.sleep(reply.delay)
        if reply.gate is not None and index == reply.gate_after:
            reply.gate.wait(reply.gate_timeout)
