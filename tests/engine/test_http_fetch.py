"""HttpFetchTools refuses private destinations unless allow-listed; fetches from a local server."""
from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from engine import FetchRefused, HttpFetchTools


class Pages(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/hello":
            self._send(200, "text/plain; charset=utf-8", "hello from a local page".encode())
        elif self.path == "/big":
            self._send(200, "text/plain", b"x" * 5000)
        elif self.path == "/json":
            self._send(200, "application/json", b'{"ok": true}')
        elif self.path == "/image":
            self._send(200, "image/png", b"\x89PNG....")
        elif self.path == "/to-hello":
            self._redirect("/hello")
        elif self.path == "/to-private":
            self._redirect("http://10.0.0.8/admin")
        elif self.path == "/loop":
            self._redirect("/loop")
        else:
            self._send(404, "text/plain", b"not here")

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _redirect(self, location: str) -> None:
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def fetch(kit: HttpFetchTools, url: str) -> dict:
    return json.loads(kit.functions()[0].execute({"url": url}))


@pytest.mark.parametrize(
    ("url", "label"),
    [
        ("http://127.0.0.1:8080/", "127.0.0.1 (loopback"),
        ("http://localhost/", "(loopback"),
        ("http://[::1]/", "::1 (loopback"),
        ("http://10.1.2.3/", "10.1.2.3 (private"),
        ("http://192.168.0.10/", "192.168.0.10 (private"),
        ("http://172.16.5.4/", "172.16.5.4 (private"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 (link-local"),
        ("http://[fe80::1]/", "fe80::1 (link-local"),
        ("http://224.0.0.1/", "224.0.0.1 (multicast"),
        ("http://240.0.0.1/", "240.0.0.1 (reserved"),
        ("http://0.0.0.0/", "0.0.0.0 (unspecified"),
        ("http://[::ffff:127.0.0.1]/", "(loopback"),
        ("http://100.64.0.1/", "100.64.0.1 (non-global"),
    ],
)
def test_private_and_special_destinations_are_refused(url, label):
    with pytest.raises(FetchRefused, match=f"Refusing to fetch .*{re.escape(label)} address"):
        HttpFetchTools().functions()[0].execute({"url": url})


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/x", "gopher://x", "/relative/path", "http://"])
def test_only_absolute_http_urls_are_fetched(url):
    with pytest.raises(FetchRefused):
        HttpFetchTools().functions()[0].execute({"url": url})


def test_allow_listed_host_is_fetched(site):
    assert fetch(HttpFetchTools(allow_hosts=["127.0.0.1"]), f"{site}/hello") == {
        "url": f"{site}/hello", "status": 200, "content_type": "text/plain; charset=utf-8", "truncated": False,
        "content": "hello from a local page",
    }


def test_allow_listed_network_is_fetched(site):
    assert fetch(HttpFetchTools(allow_hosts=["127.0.0.0/8"]), f"{site}/json")["content"] == '{"ok": true}'
    assert fetch(HttpFetchTools(allow_hosts="example.org, 127.0.0.0/8"), f"{site}/json")["status"] == 200


def test_redirects_are_followed_and_re_checked(site):
    kit = HttpFetchTools(allow_hosts=["127.0.0.1"])

    assert fetch(kit, f"{site}/to-hello")["url"] == f"{site}/hello"
    with pytest.raises(FetchRefused, match=r"10\.0\.0\.8 \(private address\)"):
        fetch(kit, f"{site}/to-private")
    with pytest.raises(FetchRefused, match="Too many redirects"):
        fetch(kit, f"{site}/loop")


def test_body_is_capped_at_max_bytes_and_binary_is_not_shown(site):
    kit = HttpFetchTools(allow_hosts=["127.0.0.1"], max_bytes=1000)

    big = fetch(kit, f"{site}/big")
    assert (big["truncated"], len(big["content"])) == (True, 1000)
    assert fetch(kit, f"{site}/image")["content"] == "<8 bytes of image/png not shown>"
    assert fetch(kit, f"{site}/missing")["status"] == 404


TRICKLE_INTERVAL = 0.3  # well inside the socket timeout, so only a wall-clock deadline ends the call
TRICKLED_BYTES = 200  # a minute of trickling: a call the deadline does not end outlives the test's wait
# How each path answers before trickling one byte at a time. Under HTTP/1.0, ``Connection: close``
# or a body delimited by the end of the connection, http.client hands the socket over to the
# response and drops it from the connection object; the deadline must still reach it.
TRICKLE_HEADS = {
    "headers": b"HTTP/1.1 200 OK\r\n",  # the headers themselves trickle
    "body": b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % TRICKLED_BYTES,
    "http10-headers": b"HTTP/1.0 200 OK\r\n",
    "http10": b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % TRICKLED_BYTES,
    "http10-until-close": b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n",
    "close": b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: %d\r\n\r\n"
    % TRICKLED_BYTES,
    "until-close": b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n",
    "chunked": b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n",
    "chunked-close": b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n"
    b"Connection: close\r\n\r\n",
}


class Trickler:
    """A server that answers with the head of ``TRICKLE_HEADS[path]``, then trickles the rest one
    byte at a time for a minute. ``finished`` is set when some connection sent all of it."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.finished = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.workers: list[threading.Thread] = []

    def serve(self, conn: socket.socket) -> None:
        with conn:
            request = b""
            while b"\r\n\r\n" not in request:
                data = conn.recv(4096)
                if not data:
                    return
                request += data
            path = request.split(b" ", 2)[1].decode().lstrip("/")
            head = TRICKLE_HEADS[path]
            try:
                conn.sendall(head)
                for _ in range(TRICKLED_BYTES):
                    if self.stop.wait(TRICKLE_INTERVAL):
                        return
                    conn.sendall(b"1\r\nx\r\n" if path.startswith("chunked") else b"x")
                if path.startswith("chunked"):
                    conn.sendall(b"0\r\n\r\n")
            except OSError:  # the client gave up
                return
            self.finished.set()

    def accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            worker = threading.Thread(target=self.serve, args=(conn,), daemon=True)
            worker.start()
            self.workers.append(worker)


@pytest.fixture
def trickling() -> Iterator[Trickler]:
    server = Trickler()
    acceptor = threading.Thread(target=server.accept, daemon=True)
    acceptor.start()
    yield server
    server.stop.set()
    try:
        server.listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
    except OSError:
        pass
    server.listener.close()
    for worker in [acceptor, *server.workers]:
        worker.join(timeout=5)


@pytest.mark.parametrize("part", list(TRICKLE_HEADS))
def test_timeout_is_a_deadline_for_the_whole_request_whatever_the_protocol(trickling, part):
    kit = HttpFetchTools(allow_hosts=["127.0.0.1"], timeout=1.0)
    outcome: list[BaseException | dict] = []

    def call() -> None:
        try:
            outcome.append(fetch(kit, f"{trickling.url}/{part}"))
        except BaseException as exc:  # noqa: BLE001 - the outcome is what the test reads
            outcome.append(exc)

    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    caller.join(timeout=20)  # generous; without the deadline the call lasts the minute of trickling

    assert not caller.is_alive(), "the call outlived its 1 s deadline"
    assert not trickling.finished.is_set()
    assert len(outcome) == 1 and isinstance(outcome[0], TimeoutError), outcome
    assert str(outcome[0]) == "Fetching 127.0.0.1 took longer than 1.0s"
