"""HttpFetchTools refuses private destinations unless allow-listed; fetches from a local server."""
from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agents.runtime import FetchRefused, HttpFetchTools


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
TRICKLED_BYTES = 20  # 6 s of trickling: far past the 1 s deadline


@pytest.fixture
def trickling() -> Iterator[str]:
    """A server that answers with a status line, then trickles the rest one byte at a time:
    the headers (``/headers``) or, after complete headers, the body (``/body``)."""
    stop = threading.Event()
    listener = socket.create_server(("127.0.0.1", 0))
    workers: list[threading.Thread] = []

    def serve(conn: socket.socket) -> None:
        with conn:
            request = b""
            while b"\r\n\r\n" not in request:
                data = conn.recv(4096)
                if not data:
                    return
                request += data
            if request.startswith(b"GET /headers "):
                conn.sendall(b"HTTP/1.1 200 OK\r\n")
            else:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % TRICKLED_BYTES)
            for _ in range(TRICKLED_BYTES):
                if stop.wait(TRICKLE_INTERVAL):
                    return
                try:
                    conn.sendall(b"x")
                except OSError:  # the client gave up
                    return

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            worker = threading.Thread(target=serve, args=(conn,), daemon=True)
            worker.start()
            workers.append(worker)

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    try:
        listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
    except OSError:
        pass
    listener.close()
    for worker in [acceptor, *workers]:
        worker.join(timeout=5)


@pytest.mark.parametrize("part", ["headers", "body"])
def test_timeout_is_a_deadline_for_the_whole_request(trickling, part):
    kit = HttpFetchTools(allow_hosts=["127.0.0.1"], timeout=1.0)

    started = time.monotonic()
    with pytest.raises(TimeoutError, match=r"^Fetching 127\.0\.0\.1 took longer than 1\.0s$"):
        fetch(kit, f"{trickling}/{part}")
    assert time.monotonic() - started < 3.0
