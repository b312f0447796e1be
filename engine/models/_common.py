"""Helpers shared by the SDK-backed providers."""
from __future__ import annotations

import asyncio
import json
import os
import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from engine.errors import FatalModelError, MissingCredentialsError, ModelError, RetryableModelError

C = TypeVar("C")

# 408 and 409 are what upstream load balancers answer when they shed load; the SDKs retry them too.
RETRYABLE_STATUSES = frozenset({408, 409, 429})


def required_env(value: str | None, variable: str, provider: str) -> str:
    """Return ``value`` or the environment variable, or raise an error naming the variable."""
    resolved = value or os.environ.get(variable)
    if not resolved:
        raise MissingCredentialsError(
            f"{variable} is not set: export it to use {provider} models "
            "(or choose the offline model, offline:demo)",
            provider=provider,
        )
    return resolved


def status_error(provider: str, status: int, body: object, fallback: str) -> ModelError:
    message = body_message(body) or fallback
    cls = RetryableModelError if status >= 500 or status in RETRYABLE_STATUSES else FatalModelError
    return cls(message, provider=provider, status_code=status)


def body_message(body: object) -> str:
    """The human message inside a provider error body (``{"error": {"message": ...}}`` or flatter)."""
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and isinstance(inner.get("message"), str):
            return inner["message"]
        if isinstance(body.get("message"), str):
            return body["message"]
    if isinstance(body, str):
        return body
    return ""


def http_pools() -> int:
    """How many connection pools (SDK clients) a provider spreads its calls over, per process
    and event loop (``MODEL_HTTP_POOLS``, default 8)."""
    try:
        return max(1, int(os.environ.get("MODEL_HTTP_POOLS", "8")))
    except ValueError:
        return 8


def pool_limits() -> Any:
    """A provider client's connection bounds: the SDKs' own bound on connections (1,000), all
    of them kept alive between calls. The SDKs' default of 100 idle connections made a process
    with more calls than that in flight close and reopen a TCP connection (a TLS handshake,
    against a real provider) for most of its calls."""
    import httpx2  # the SDKs' HTTP client

    return httpx2.Limits(max_connections=1000, max_keepalive_connections=1000)


def call_timeout(seconds: float) -> Any:
    """A provider client's timeout, as the SDKs' HTTP client's own ``Timeout``: given a number,
    that client builds one for every call, checking it against ``typing.SupportsFloat``, a
    runtime protocol whose ``isinstance`` costs more than the rest of the call's timeout handling
    (3 % of the event loop's time at c=8 on the instant model)."""
    import httpx2

    return httpx2.Timeout(seconds)


# Calls in flight on one pool before the next pool is used.
POOL_CALLS = 32


class LoopClients(Generic[C]):
    """Async SDK clients per (process, event loop). A forked process (Celery's prefork pool)
    must not write into its parent's pooled connections: both would read each other's answers.
    An async client's connections are bound to the loop that opened them, so each thread's loop
    (the sync facade) and the server's loop get their own.

    Each client has a connection pool of its own, and a pool looks at every one of its
    connections whenever a call starts or ends (httpcore): one pool for hundreds of calls in
    flight spent an eighth of the event loop's time there (256 streams on a slow model,
    bench/README.md). So a call takes the first client with fewer than ``POOL_CALLS`` calls in
    flight (light traffic keeps to one pool and its warm connections), else a new client, up to
    ``http_pools()``, else the least busy one."""

    def __init__(self, make: Callable[[], C]) -> None:
        self._make = make
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[int, list[list[Any]]]] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def take(self) -> tuple[C, Callable[[], None]]:
        """A client for one call, and what to call once the call has ended (its response closed)."""
        loop = asyncio.get_running_loop()
        pid = os.getpid()
        with self._lock:
            entry = self._pools.get(loop)
            if entry is None or entry[0] != pid:
                entry = self._pools[loop] = (pid, [])
        pools = entry[1]  # [client, calls in flight]; used on this loop's thread only
        chosen = next((pool for pool in pools if pool[1] < POOL_CALLS), None)
        if chosen is None:
            if len(pools) < http_pools():
                chosen = [self._make(), 0]
                pools.append(chosen)
            else:
                chosen = min(pools, key=lambda pool: pool[1])
        chosen[1] += 1
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                chosen[1] -= 1

        return chosen[0], release


async def whole_answer(client: Any, path: str, body: Mapping[str, Any], provider: str) -> dict[str, Any]:
    """An SDK's untyped call for a whole answer, which must be a JSON object. The SDKs hand back
    any other body as text (the HTML page of a wrong base URL or a proxy), which would read as an
    empty answer, and let a JSON content type over a body that is not JSON escape as ValueError."""
    try:
        answer = await client.post(path, body=body, cast_to=object)
    except ValueError as exc:
        raise FatalModelError(f"{provider} sent an answer that is not JSON: {exc}", provider=provider) from None
    if not isinstance(answer, dict):
        raise FatalModelError(f"{provider} sent an answer that is not JSON: {str(answer)[:200]!r}", provider=provider)
    return answer


def image_url(image: Mapping[str, Any]) -> str | None:
    """A URL for an input image dict (``url``, or base64 ``content`` plus ``mime_type``)."""
    if image.get("url"):
        return str(image["url"])
    if image.get("content"):
        mime = image.get("mime_type") or "image/png"
        return f"data:{mime};base64,{image['content']}"
    return None


def parse_arguments(arguments: str) -> dict[str, Any]:
    """Tool-call arguments as a dict for providers that want an object (Anthropic ``input``)."""
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def schema_title(schema: Mapping[str, Any]) -> str:
    title = str(schema.get("title") or "output")
    return "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in title)[:64]


# Reading the SDKs' untyped answers: JSON as it came off the wire, whatever a compatible server put
# in a field (a null, a list where an object belongs) reads as empty, never as an error.


def json_object(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def json_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def json_int(value: Any) -> int:
    return value if isinstance(value, int) else 0
