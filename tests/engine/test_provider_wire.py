"""Provider calls against raw sockets (OpenAI's; Anthropic's too where it applies): what a real
server or proxy may do on the wire that the scripted fake never does (CRLF cut between reads, an
idle connection closed, a silent server, an answer that is not JSON, a body that breaks off, a
proxy, a forked worker)."""
from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable

import pytest

from engine import get_model
from engine.errors import FatalModelError, RetryableModelError
from engine.models.base import TextDelta, Usage
from tests.fakes.openai_server import Reply


class RawServer:
    """Accepts connections; ``serve(conn, request_bytes)`` answers each request as it likes and
    returns whether to keep the connection open for another."""

    def __init__(self, serve: Callable[[socket.socket, bytes], bool]) -> None:
        self.serve = serve
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.requests: list[tuple[bytes, tuple[str, int]]] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, peer = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._connection, args=(conn, peer), daemon=True).start()

    def _connection(self, conn: socket.socket, peer: tuple[str, int]) -> None:
        with conn:
            while True:
                request = _read_request(conn)
                if not request:
                    return
                self.requests.append((request, peer))
                if not self.serve(conn, request):
                    return

    def close(self) -> None:
        self.sock.close()


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return b""
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        body += conn.recv(65536)
    return head + b"\r\n\r\n" + body


@pytest.fixture
def raw_server():
    servers: list[RawServer] = []

    def start(serve: Callable[[socket.socket, bytes], bool]) -> RawServer:
        servers.append(RawServer(serve))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def _completion(text: str) -> bytes:
    return json.dumps({"id": "chatcmpl-1", "choices": [{"message": {"role": "assistant", "content": text}}],
                       "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}).encode()


def _json_answer(body: bytes, *, status: str = "200 OK", close: bool = False, content_type: str = "application/json") -> bytes:
    connection = "close" if close else "keep-alive"
    return (f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
            f"Connection: {connection}\r\n\r\n").encode() + body


def _model(server: RawServer, monkeypatch, **options):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return get_model("openai:gpt-4o-mini", base_url=f"http://127.0.0.1:{server.port}/v1", **options)


def _ask(model, *, incremental: bool) -> list:
    return list(model.stream([{"role": "user", "content": "hi"}], incremental=incremental))


def test_a_stream_cut_anywhere_reads_the_same_events(raw_server, monkeypatch):
    """CRLF line ends, and an event of two data lines with the CRLF after the first cut between
    two reads (a reader that ends a line at the CR dispatches half an event)."""
    first = {"id": "chatcmpl-9", "choices": [{"delta": {"content": "Hel"}}]}
    second = {"choices": [{"delta": {"content": "lo"}}], "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}}
    text = json.dumps(second)
    half = text.index(", ") + 1
    body = (f"data: {json.dumps(first)}\r\n\r\n"
            f": a comment\r\nevent: chunk\r\ndata: {text[:half]}\r\ndata:{text[half:]}\r\n\r\n"
            "data: [DONE]\r\n\r\n").encode()
    # ``data: a\ndata: b`` is one event whose data is "a\nb": JSON allows the newline between tokens.
    cut = body.index(b"\r\n", body.index(b"data: " + text[:half].encode())) + 1  # between \r and \n

    def serve(conn: socket.socket, request: bytes) -> bool:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        for piece in (body[:7], body[7:cut], body[cut:], b""):
            conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
            time.sleep(0.02)
        return True

    server = raw_server(serve)
    chunks = _ask(_model(server, monkeypatch), incremental=True)
    assert [c for c in chunks if isinstance(c, TextDelta)] == [TextDelta("Hel"), TextDelta("lo")]
    assert Usage(input_tokens=1, output_tokens=2, total_tokens=3) in chunks


def test_a_pooled_connection_the_server_closed_is_not_reused(raw_server, monkeypatch):
    """The server answers once per connection and closes it without saying so; the next call
    must not fail on the dead connection."""

    def serve(conn: socket.socket, request: bytes) -> bool:
        conn.sendall(_json_answer(_completion("fine")))  # says keep-alive, then hangs up
        return False

    server = raw_server(serve)
    model = _model(server, monkeypatch)
    for _ in range(3):
        assert TextDelta("fine") in _ask(model, incremental=False)
        time.sleep(0.05)  # the server's close has arrived before the next call
    assert len({peer for _, peer in server.requests}) == 3


def test_connections_are_kept_between_calls(raw_server, monkeypatch):
    def serve(conn: socket.socket, request: bytes) -> bool:
        conn.sendall(_json_answer(_completion("again")))
        return True

    server = raw_server(serve)
    model = _model(server, monkeypatch)
    for _ in range(3):
        _ask(model, incremental=False)
    assert len(server.requests) == 3 and len({peer for _, peer in server.requests}) == 1


def test_the_request_carries_the_key_the_sdk_headers_and_a_json_body(raw_server, monkeypatch):
    def serve(conn: socket.socket, request: bytes) -> bool:
        conn.sendall(_json_answer(_completion("ok")))
        return True

    server = raw_server(serve)
    monkeypatch.setenv("OPENAI_ORG_ID", "org-1")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-1")
    _ask(_model(server, monkeypatch), incremental=False)
    head, _, body = server.requests[0][0].partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
    assert lines[0] == "POST /v1/chat/completions HTTP/1.1"
    assert headers["authorization"] == "Bearer sk-test"
    assert headers["openai-organization"] == "org-1" and headers["openai-project"] == "proj-1"
    assert headers["content-type"] == "application/json"
    assert json.loads(body)["messages"] == [{"role": "user", "content": "hi"}]


PAGE = b"<html>a login page</html>"


@pytest.mark.parametrize(("provider", "incremental", "content_type", "body", "says"), [
    ("openai", False, "text/html", PAGE, "not JSON.*a login page"),
    ("openai", False, "application/json", PAGE, "not JSON"),
    ("openai", True, "text/html", PAGE, "no events.*a login page"),
    ("openai", True, "text/event-stream", b"", "no events"),
    ("anthropic", False, "text/html", PAGE, "not JSON.*a login page"),
    ("anthropic", False, "application/json", PAGE, "not JSON"),
    ("anthropic", True, "text/html", PAGE, "no events"),
])
def test_an_answer_that_is_not_one_fails_the_call_with_what_came(raw_server, monkeypatch, provider, incremental, content_type, body, says):
    """A wrong base URL or a proxy's page must fail the run, not read as an empty answer."""
    def serve(conn: socket.socket, request: bytes) -> bool:
        conn.sendall(_json_answer(body, content_type=content_type))
        return True

    server = raw_server(serve)
    if provider == "openai":
        model = _model(server, monkeypatch)
    else:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        model = get_model("anthropic:claude-sonnet-4-5", base_url=f"http://127.0.0.1:{server.port}")
    with pytest.raises(FatalModelError, match=says):
        _ask(model, incremental=incremental)


def test_a_last_event_without_its_blank_line_is_read(raw_server, monkeypatch):
    body = b'data: {"choices": [{"delta": {"content": "all of it"}}]}'

    def serve(conn: socket.socket, request: bytes) -> bool:
        conn.sendall(_json_answer(body, content_type="text/event-stream", close=True))
        return False

    assert TextDelta("all of it") in _ask(_model(raw_server(serve), monkeypatch), incremental=True)


@pytest.mark.parametrize("incremental", [False, True])
def test_an_error_status_with_a_text_body_keeps_the_text(raw_server, monkeypatch, incremental):
    def serve(conn: socket.socket, request: bytes) -> bool:
        conn.sendall(_json_answer(b"upstream is down", status="502 Bad Gateway", content_type="text/plain"))
        return True

    with pytest.raises(RetryableModelError) as excinfo:
        _ask(_model(raw_server(serve), monkeypatch), incremental=incremental)
    assert excinfo.value.message == "upstream is down" and excinfo.value.status_code == 502


def test_a_silent_server_times_out_as_a_retryable_error(raw_server, monkeypatch):
    release = threading.Event()

    def serve(conn: socket.socket, request: bytes) -> bool:
        release.wait(10)
        return False

    try:
        with pytest.raises(RetryableModelError, match="timed out"):
            _ask(_model(raw_server(serve), monkeypatch, timeout=0.3), incremental=False)
    finally:
        release.set()


def test_a_stream_that_breaks_off_is_a_retryable_error(raw_server, monkeypatch):
    def serve(conn: socket.socket, request: bytes) -> bool:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        piece = b'data: {"choices": [{"delta": {"content": "Hel"}}]}\n\n'
        conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
        return False  # hangs up mid-body

    with pytest.raises(RetryableModelError, match="connection failed"):
        _ask(_model(raw_server(serve), monkeypatch), incremental=True)


def test_a_plain_http_proxy_gets_the_absolute_url(raw_server, monkeypatch):
    def serve(conn: socket.socket, request: bytes) -> bool:
        conn.sendall(_json_answer(_completion("via proxy")))
        return True

    proxy = raw_server(serve)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
    monkeypatch.setenv("NO_PROXY", "")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model = get_model("openai:gpt-4o-mini", base_url="http://models.internal:8000/v1")
    assert TextDelta("via proxy") in _ask(model, incremental=False)
    assert proxy.requests[0][0].split(b"\r\n")[0] == b"POST http://models.internal:8000/v1/chat/completions HTTP/1.1"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
@pytest.mark.parametrize(("model_name", "server_fixture"), [
    ("openai:gpt-4o-mini", "openai_server"),
    ("anthropic:claude-sonnet-4-5", "anthropic_server"),
])
def test_a_forked_process_opens_its_own_connections(request, model_name, server_fixture):
    """Celery's prefork children must not write into their parent's sockets (both providers)."""
    server = request.getfixturevalue(server_fixture)
    model = get_model(model_name)
    server.push(Reply(text="parent"))
    assert TextDelta("parent") in _ask(model, incremental=False)
    server.push(Reply(text="child"), Reply(text="parent again"))
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one call, then report how it went
        try:
            ok = TextDelta("child") in _ask(model, incremental=False)
        except BaseException:
            ok = False
        os.write(write, b"1" if ok else b"0")
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1"
    assert TextDelta("parent again") in _ask(model, incremental=False)  # the parent's pool still works
    peers = [recorded.peer for recorded in server.requests]
    assert peers[0] == peers[2] != peers[1], peers
