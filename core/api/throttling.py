"""Request limits per token, user or client address: a sliding-window counter, 429 with Retry-After.

A limit of ``n`` requests per ``period`` is checked with two counters per bucket: the current
fixed window (``floor(now / period)``) and the one before it. The previous window's count is
weighted by the part of it still inside the sliding window that ends now, so at 30% into a window
a request is allowed while ``previous × 0.7 + current ≤ n`` (the request itself included). That is
the usual estimate of a true sliding window (it assumes the previous window's requests were spread
evenly), and it costs O(1) per request, where DRF's ``SimpleRateThrottle`` read, pickled and wrote
back a list of every request timestamp of the period, two cache round trips at O(n) CPU each.

With ``REDIS_URL`` the counters live in Redis and every replica shares them: one pipelined round
trip per request (INCR the current window, EXPIRE it after two periods, GET the previous one).
INCR is atomic, so concurrent requests on any replica each see their own count and no more than
``n`` of them pass. A denied request takes back what it added (DECR, a second round trip only then),
so being refused does not use up quota. Without ``REDIS_URL`` a lock-guarded dict in the process
does the same for that process alone.

Redis unreachable or failing lets the request through (logged at most every 30 s): a lost limit for
a while is better than an API that answers 500 to everything.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import NamedTuple, Protocol

import redis
from django.conf import settings
from redis.backoff import NoBackoff
from redis.retry import Retry
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle

from core.addresses import client_address
from core.auth import Principal
from core.logging import Throttle

logger = logging.getLogger("agno_site.throttle")

# The clock the windows are cut from (tests set it).
clock = time.time

# A throttle must not hold a request up for long: Redis gets this long to answer, then the request
# goes through unlimited, and after a failure Redis is left alone for a while before the next try.
REDIS_TIMEOUT_SECONDS = 0.5
REDIS_RETRY_AFTER_SECONDS = 5.0


class Verdict(NamedTuple):
    allowed: bool
    # When refused: seconds until a request of this bucket would be allowed (at most one period).
    wait: float | None = None


ALLOWED = Verdict(True)


class Store(Protocol):
    def add(self, key: str, *, window: int, period: int) -> tuple[int, int] | None:
        """Count one request in ``window``; return (previous window's count, this window's), or
        None when the counts are unavailable."""

    def remove(self, key: str, *, window: int, period: int) -> None:
        """Take back one request counted by ``add`` in ``window``."""

    def counts(self, key: str, *, window: int, period: int) -> tuple[int, int] | None:
        """(previous window's count, this window's) without counting anything; None: unavailable."""


class LocalStore:
    """The counters of one process. One entry per bucket (its window and the two counts), and
    entries whose windows are both over are dropped once per window, so memory follows the number
    of buckets used in the last two periods."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (key, period) -> [window, count in window, count in window - 1]
        self._buckets: dict[tuple[str, int], list[int]] = {}
        self._next_sweep = 0.0

    def __len__(self) -> int:
        return len(self._buckets)

    def add(self, key: str, *, window: int, period: int) -> tuple[int, int]:
        with self._lock:
            if window * period >= self._next_sweep:
                self._sweep(window * period)
                self._next_sweep = (window + 1) * period
            bucket = self._buckets.get((key, period))
            if bucket is None or bucket[0] < window - 1:
                bucket = self._buckets[(key, period)] = [window, 0, 0]
            elif bucket[0] == window - 1:
                bucket[:] = [window, 0, bucket[1]]
            # bucket[0] > window only when the clock stepped back: it counts in the later window.
            bucket[1] += 1
            return bucket[2], bucket[1]

    def remove(self, key: str, *, window: int, period: int) -> None:
        with self._lock:
            bucket = self._buckets.get((key, period))
            if bucket is not None and bucket[0] == window and bucket[1] > 0:
                bucket[1] -= 1

    def counts(self, key: str, *, window: int, period: int) -> tuple[int, int]:
        with self._lock:
            bucket = self._buckets.get((key, period))
            if bucket is None or bucket[0] < window - 1:
                return 0, 0
            if bucket[0] == window - 1:
                return bucket[1], 0
            return bucket[2], bucket[1]

    def _sweep(self, now: float) -> None:
        # A bucket last used in window w still counts until w + 2 begins.
        forgotten = [key for key, (window, _, _) in self._buckets.items() if (window + 2) * key[1] <= now]
        for key in forgotten:
            del self._buckets[key]


class RedisStore:
    """The counters of every replica: ``<prefix><key>:<period>:<window>`` integers in Redis."""

    def __init__(self, client: redis.Redis, *, prefix: str = "throttle:") -> None:
        self.client = client
        self.prefix = prefix
        self._failures = Throttle(30.0)
        self._resting_until = 0.0

    @classmethod
    def from_url(cls, url: str, *, prefix: str = "throttle:") -> RedisStore:
        # No retries: a retried INCR may count a request twice, and the request would wait for it.
        client = redis.Redis.from_url(
            url, socket_timeout=REDIS_TIMEOUT_SECONDS, socket_connect_timeout=REDIS_TIMEOUT_SECONDS, retry=Retry(NoBackoff(), 0)
        )
        return cls(client, prefix=prefix)

    def add(self, key: str, *, window: int, period: int) -> tuple[int, int] | None:
        if time.monotonic() < self._resting_until:
            return None
        current_key = f"{self.prefix}{key}:{period}:{window}"
        pipe = self.client.pipeline(transaction=False)
        pipe.incr(current_key)
        pipe.expire(current_key, 2 * period)
        pipe.get(f"{self.prefix}{key}:{period}:{window - 1}")
        try:
            current, _, previous = pipe.execute()
        except (redis.RedisError, OSError) as exc:
            self._failed(exc)
            return None
        return int(previous or 0), current

    def remove(self, key: str, *, window: int, period: int) -> None:
        try:
            self.client.decr(f"{self.prefix}{key}:{period}:{window}")
        except (redis.RedisError, OSError) as exc:
            self._failed(exc)  # the refusal stands; the bucket is one request fuller until the window ends

    def counts(self, key: str, *, window: int, period: int) -> tuple[int, int] | None:
        if time.monotonic() < self._resting_until:
            return None
        try:
            current, previous = self.client.mget(f"{self.prefix}{key}:{period}:{window}", f"{self.prefix}{key}:{period}:{window - 1}")
        except (redis.RedisError, OSError) as exc:
            self._failed(exc)
            return None
        return int(previous or 0), int(current or 0)

    def _failed(self, exc: Exception) -> None:
        self._resting_until = time.monotonic() + REDIS_RETRY_AFTER_SECONDS
        if self._failures.due():
            logger.warning("rate limits unavailable, requests are let through: Redis: %s", exc)


def hit(store: Store, key: str, *, limit: int, period: int) -> Verdict:
    """Count one request of ``key`` against ``limit`` per ``period`` seconds."""
    window, into = divmod(clock(), period)
    window = int(window)
    counts = store.add(key, window=window, period=period)
    if counts is None:
        return ALLOWED
    previous, current = counts
    if previous * (1 - into / period) + current <= limit:
        return ALLOWED
    store.remove(key, window=window, period=period)
    return Verdict(False, _wait(previous=previous, current=current - 1, limit=limit, period=period, into=into))


def peek(store: Store, key: str, *, limit: int, period: int) -> Verdict:
    """Whether one more request of ``key`` would be allowed, counting nothing."""
    window, into = divmod(clock(), period)
    window = int(window)
    counts = store.counts(key, window=window, period=period)
    if counts is None:
        return ALLOWED
    previous, current = counts
    if previous * (1 - into / period) + current + 1 <= limit:
        return ALLOWED
    return Verdict(False, _wait(previous=previous, current=current, limit=limit, period=period, into=into))


def _wait(*, previous: int, current: int, limit: int, period: int, into: float) -> float:
    """Seconds until one more request fits, for a bucket refused ``into`` seconds into its window
    with these counts (the refused request not among them); capped at one period, as the exact
    figure after a burst at the start of a window is up to twice that."""
    room = limit - current - 1  # what this window leaves for the previous window's weighted count
    if room >= 0 and previous > 0:
        # previous × (1 - t / period) has fallen to room at t.
        wait = period * (1 - room / previous) - into
    elif current > 0:
        # This window alone is full: in the next one it is the previous window, weighted down.
        wait = period - into + period * (1 - (limit - 1) / current)
    else:
        wait = period  # a limit of 0
    return min(max(wait, 0.0), float(period))


_store: tuple[str | None, Store] | None = None
_store_lock = threading.Lock()


def store() -> Store:
    """This process's store: Redis when ``REDIS_URL`` is set, else local. Made on first use, and
    again only if ``REDIS_URL`` changes (which only tests do)."""
    global _store
    url = settings.REDIS_URL or None
    chosen = _store
    if chosen is None or chosen[0] != url:
        with _store_lock:
            if _store is None or _store[0] != url:
                _store = (url, RedisStore.from_url(url) if url else LocalStore())
            chosen = _store
    return chosen[1]


class PrincipalRateThrottle(BaseThrottle):
    """One bucket per token, else per user, else per client address; the rates are read from
    settings on every request."""

    # DRF's "<n>/<second|minute|hour|day>" grammar, as DEFAULT_THROTTLE_RATES use it.
    parse_rate = SimpleRateThrottle.parse_rate

    def __init__(self) -> None:
        self.verdict = ALLOWED

    def allow_request(self, request, view) -> bool:
        principal = request.user if isinstance(request.user, Principal) else None
        if principal is not None and principal.token_id is not None:
            key, rate = f"token:{principal.token_id}", settings.RATE_LIMIT_USER
        elif principal is not None and principal.user_id is not None:
            key, rate = f"user:{principal.user_id}", settings.RATE_LIMIT_USER
        else:
            key, rate = f"addr:{client_address(request)}", settings.RATE_LIMIT_ANONYMOUS
        limit, period = self.parse_rate(rate)
        self.verdict = hit(store(), key, limit=limit, period=period)
        return self.verdict.allowed

    def wait(self) -> float | None:
        return self.verdict.wait


class AuthFailures:
    """Failed authentications per client address (``AUTH_FAILURE_LIMIT``), in the same store.

    Only failures count; once an address has used up the limit, ``check`` refuses every
    credential it sends, valid-looking or not, until the window has room again: otherwise a
    guesser would learn from each answer whether a guess was right. Other addresses, and the
    requests without a credential, are unaffected.
    """

    parse_rate = SimpleRateThrottle.parse_rate

    def _bucket(self, address: str | None) -> tuple[str, int, int]:
        limit, period = self.parse_rate(settings.AUTH_FAILURE_LIMIT)
        return f"authfail:{address}", limit, period

    def check(self, address: str | None) -> Verdict:
        key, limit, period = self._bucket(address)
        return peek(store(), key, limit=limit, period=period)

    def count(self, address: str | None) -> None:
        key, limit, period = self._bucket(address)
        hit(store(), key, limit=limit, period=period)


auth_failures = AuthFailures()
