"""Fetch URLs for the model, without letting it reach the server's private network (SSRF).

Every hop (the first URL and each redirect) is checked: http/https only, the host is resolved and
refused when any address is loopback, private, link-local, multicast, reserved or otherwise not
globally routable, unless the host or network is in ``allow_hosts``. The connection then goes to
the address that was checked, so a DNS answer that changes between check and connect (rebinding)
cannot redirect it. Proxy environment variables are ignored for the same reason.
``timeout`` is a wall-clock deadline for the whole call (redirects, connect, TLS, headers, body),
not a per-read socket timeout that a trickling server could renew forever.
"""
from __future__ import annotations

import http.client
import ipaddress
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import SplitResult, urljoin, urlsplit

from engine.tools.function import tool
from engine.tools.toolkit import Toolkit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript", "application/xhtml")


class FetchRefused(PermissionError):
    """The URL, or an address it resolves to, is not allowed."""


@dataclass(frozen=True)
class Fetched:
    url: str  # after redirects
    status: int
    content_type: str
    body: bytes
    truncated: bool


class HttpFetchTools(Toolkit):
    id = "http"
    name = "http"

    def __init__(
        self,
        *,
        timeout: float = 10.0,
        max_bytes: int = 200_000,
        max_redirects: int = 5,
        allow_hosts: Iterable[str] | str = (),
        user_agent: str = "AgnoSite-HttpFetch/1.0",
        **kwargs: object,
    ) -> None:
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects
        self.user_agent = user_agent
        self._hosts: set[str] = set()
        self._networks: list[IPNetwork] = []
        if isinstance(allow_hosts, str):  # "a.example, 10.0.0.0/8" from an environment variable
            allow_hosts = [part for part in allow_hosts.split(",") if part.strip()]
        for entry in allow_hosts:
            entry = entry.strip()
            try:
                self._networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                self._hosts.add(entry.strip().lower().rstrip("."))
        super().__init__(**kwargs)  # type: ignore[arg-type]

    @tool
    def fetch_url(self, url: str) -> str:
        """Fetch a web page or API response with an HTTP GET and return its text.

        Args:
            url: Absolute http:// or https:// URL.
        """
        fetched = self.fetch(url)
        return json.dumps(
            {
                "url": fetched.url,
                "status": fetched.status,
                "content_type": fetched.content_type,
                "truncated": fetched.truncated,
                "content": _decode(fetched.body, fetched.content_type),
            },
            ensure_ascii=False,
        )

    def fetch(self, url: str) -> Fetched:
        """GET ``url`` with every hop checked (the guard above); the body as bytes, at most
        ``max_bytes`` of it (``truncated`` says there was more). Also what the knowledge base
        fetches remote contents with."""
        current = url
        deadline = time.monotonic() + self.timeout  # for the whole call, redirects included
        for _ in range(self.max_redirects + 1):
            parts = _check_url(current)
            address = self._checked_address(parts)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"Fetching {parts.hostname} took longer than {self.timeout}s")
            status, content_type, location, body, truncated = self._get(parts, address, remaining)
            if status in REDIRECT_STATUSES and location:
                current = urljoin(current, location)
                continue
            return Fetched(url=current, status=status, content_type=content_type, body=body, truncated=truncated)
        raise FetchRefused(f"Too many redirects (more than {self.max_redirects})")

    def check_url(self, url: str) -> str:
        """The address ``url`` may be reached at, or FetchRefused: the guard alone, for clients
        that connect by other means (MCP servers over HTTP, engine.tools.mcp)."""
        return self._checked_address(_check_url(url))

    def _checked_address(self, parts: SplitResult) -> str:
        host = (parts.hostname or "").lower().rstrip(".")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            addresses: list[IPAddress] = [ipaddress.ip_address(host)]
        except ValueError:
            try:
                infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except socket.gaierror as exc:
                raise OSError(f"Could not resolve {host}: {exc}") from None
            addresses = list(dict.fromkeys(ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos))
        if host not in self._hosts:
            # Every address must pass: connecting to the first good one while another is private
            # would let a hostile DNS record choose the target.
            for address in addresses:
                label = _forbidden(address)
                if label and not any(_unmapped(address) in net for net in self._networks):
                    raise FetchRefused(
                        f"Refusing to fetch {host}: it resolves to {address} ({label} address) "
                        "(allow it explicitly with allow_hosts)"
                    )
        return str(addresses[0])

    def _get(self, parts: SplitResult, address: str, timeout: float) -> tuple[int, str, str | None, bytes, bool]:
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        deadline = _Deadline(timeout)
        connection: http.client.HTTPConnection
        if parts.scheme == "https":
            connection = _PinnedHTTPSConnection(host, port, address, timeout, deadline)
        else:
            connection = _PinnedHTTPConnection(host, port, address, timeout, deadline)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        # The socket timeout bounds each read, not the request: a server trickling a byte at a
        # time would hold the call for as long as it likes. At the deadline a timer shuts the
        # socket down, which ends whatever is blocked on it (connect, TLS handshake, headers, body).
        deadline.start()
        try:
            try:
                connection.request(
                    "GET", target, headers={"User-Agent": self.user_agent, "Accept": "*/*", "Accept-Encoding": "identity"}
                )
                response = connection.getresponse()
                body = bytearray()
                while len(body) <= self.max_bytes:
                    chunk = response.read(min(65536, self.max_bytes + 1 - len(body)))
                    if not chunk:
                        break
                    body.extend(chunk)
            except (OSError, http.client.HTTPException):
                if deadline.expired:
                    raise TimeoutError(f"Fetching {host} took longer than {self.timeout}s") from None
                raise
            if deadline.expired:  # the shutdown can read as a clean end of the body
                raise TimeoutError(f"Fetching {host} took longer than {self.timeout}s")
            truncated = len(body) > self.max_bytes
            content_type = response.getheader("Content-Type", "") or ""
            return response.status, content_type, response.getheader("Location"), bytes(body[: self.max_bytes]), truncated
        finally:
            deadline.cancel()
            connection.close()


class _Deadline:
    """Shuts a call's socket down when its time is up.

    It holds the socket itself, as the connection hands it over: http.client drops the socket from
    the connection object (``connection.sock = None``) as soon as a response says the connection
    will close (HTTP/1.0, ``Connection: close``, a body that ends with the connection), while the
    response goes on reading from it. A socket attached after the deadline is shut at once.
    """

    def __init__(self, timeout: float) -> None:
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._expired = False
        self._timer = threading.Timer(timeout, self._expire)
        self._timer.daemon = True

    @property
    def expired(self) -> bool:
        return self._expired

    def start(self) -> None:
        self._timer.start()

    def cancel(self) -> None:
        self._timer.cancel()

    def attach(self, sock: socket.socket) -> None:
        with self._lock:
            self._sock = sock
            if self._expired:
                _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self._expired = True
            if self._sock is not None:
                _shut(self._sock)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # already closed by the fetch itself
        pass


def _check_url(url: str) -> SplitResult:
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https"):
        raise FetchRefused(f"Only http and https URLs can be fetched, not {parts.scheme or 'a relative URL'!r}")
    if not parts.hostname:
        raise FetchRefused("The URL has no host")
    try:
        parts.port  # noqa: B018 - validates the port
    except ValueError:
        raise FetchRefused("The URL has an invalid port") from None
    return parts


def _unmapped(address: IPAddress) -> IPAddress:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _forbidden(address: IPAddress) -> str | None:
    address = _unmapped(address)
    for label, flag in (
        # Most specific first: link-local and loopback ranges are also "private" to ipaddress.
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("unspecified", address.is_unspecified),
        ("reserved", address.is_reserved),
        ("private", address.is_private),
    ):
        if flag:
            return label
    return None if address.is_global else "non-global"


def _decode(body: bytes, content_type: str) -> str:
    media = content_type.split(";")[0].strip().lower()
    if media and not media.startswith(TEXT_TYPES) and not media.endswith(("+json", "+xml")):
        return f"<{len(body)} bytes of {media} not shown>"
    charset = "utf-8"
    for param in content_type.split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip('"')
    try:
        return body.decode(charset, errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


class _PinnedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, host: str, port: int, address: str, timeout: float, deadline: _Deadline) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address
        self._deadline = deadline

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)
        self._deadline.attach(self.sock)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, host: str, port: int, address: str, timeout: float, deadline: _Deadline) -> None:
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self._address = address
        self._deadline = deadline

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        # SNI and certificate checks use the host name while the socket goes to the checked address.
        # The handshake runs once the deadline holds the socket, so its shutdown can end it too.
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host, do_handshake_on_connect=False)
        self._deadline.attach(self.sock)
        self.sock.do_handshake()
