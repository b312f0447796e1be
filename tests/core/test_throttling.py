"""core.api.throttling: the sliding-window limit, in the process and in a real Redis, failing open."""
from __future__ import annotations

import logging

import os
import threading
import uuid

import pytest
import redis
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from core.api import throttling
from core.api.throttling import LocalStore, PrincipalRateThrottle, RedisStore, hit
from core.auth import Principal
from tests.conftest import require_service

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
CLOSED_PORT_URL = "redis://127.0.0.1:1/0"
PERIOD = 60
LIMIT = 10
START = 1_000_000.0 * PERIOD  # the start of a window


class Clock:
    def __init__(self) -> None:
        self.now = START

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(throttling, "clock", lambda: clock.now)
    return clock


def _delete_keys(client: redis.Redis, pattern: str) -> None:
    keys = list(client.scan_iter(pattern))
    if keys:
        client.delete(*keys)


@pytest.fixture
def redis_client() -> redis.Redis:
    client = redis.Redis.from_url(REDIS_URL, socket_timeout=2)
    try:
        client.ping()
    except redis.RedisError as exc:
        require_service("Redis", f"cannot reach {REDIS_URL}: {exc}")
    yield client
    client.close()


@pytest.fixture
def redis_store(redis_client) -> RedisStore:
    store = RedisStore.from_url(REDIS_URL, prefix=f"test-throttle:{uuid.uuid4().hex}:")
    yield store
    _delete_keys(redis_client, f"{store.prefix}*")
    store.client.close()


@pytest.fixture(params=["local", "redis"])
def store(request):
    return LocalStore() if request.param == "local" else request.getfixturevalue("redis_store")


def hits(store, count: int, *, key: str = "user:alice") -> list[bool]:
    return [hit(store, key, limit=LIMIT, period=PERIOD).allowed for _ in range(count)]


class TestSlidingWindow:
    def test_the_limit_holds_within_one_window(self, store, clock) -> None:
        assert hits(store, LIMIT + 1) == [True] * LIMIT + [False]

    def test_buckets_are_separate(self, store, clock) -> None:
        hits(store, LIMIT)
        assert hits(store, 1, key="user:bob") == [True]

    def test_halfway_into_the_next_window_half_the_previous_count_still_counts(self, store, clock) -> None:
        hits(store, LIMIT)
        clock.advance(PERIOD * 1.5)
        assert hits(store, 6) == [True] * 5 + [False]

    def test_a_quarter_into_the_next_window_three_quarters_still_count(self, store, clock) -> None:
        hits(store, 8)
        clock.advance(PERIOD * 1.25)
        assert hits(store, 5) == [True] * 4 + [False]  # 8 × 0.75 = 6, room for 4

    def test_everything_is_forgotten_after_two_periods(self, store, clock) -> None:
        hits(store, LIMIT + 3)
        clock.advance(PERIOD * 2)
        assert hits(store, LIMIT + 1) == [True] * LIMIT + [False]

    def test_a_refused_request_uses_no_quota(self, store, clock) -> None:
        assert hits(store, LIMIT + 5) == [True] * LIMIT + [False] * 5
        clock.advance(PERIOD * 1.5)
        # Had the five refusals counted, 15 × 0.5 would leave room for 2, not 5.
        assert hits(store, 6) == [True] * 5 + [False]

    def test_retry_after_is_when_the_next_request_fits(self, store, clock) -> None:
        hits(store, LIMIT)
        clock.advance(PERIOD * 1.5)
        hits(store, 5)
        refused = hit(store, "user:alice", limit=LIMIT, period=PERIOD)
        # 10 × (1 - t/60) + 5 + 1 ≤ 10 from t = 36 s, and it is 30 s now.
        assert refused.allowed is False and refused.wait == pytest.approx(6.0)
        clock.advance(refused.wait - 0.5)
        assert hits(store, 1) == [False]
        clock.advance(0.51)
        assert hits(store, 1) == [True]

    def test_retry_after_after_a_burst_is_at_most_one_period(self, store, clock) -> None:
        hits(store, LIMIT)
        refused = hit(store, "user:alice", limit=LIMIT, period=PERIOD)
        assert refused.allowed is False and 0 < refused.wait <= PERIOD


class TestRedis:
    def test_concurrent_requests_allow_exactly_the_limit(self, redis_store, clock) -> None:
        limit, threads, each = 100, 8, 40
        start = threading.Barrier(threads)
        allowed: list[int] = []

        def client() -> None:
            start.wait()
            allowed.append(sum(hit(redis_store, "user:alice", limit=limit, period=PERIOD).allowed for _ in range(each)))

        workers = [threading.Thread(target=client) for _ in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(30)
        assert sum(allowed) == limit
        # Every refusal took back its count.
        window = int(START // PERIOD)
        assert int(redis_store.client.get(f"{redis_store.prefix}user:alice:{PERIOD}:{window}")) == limit

    def test_counters_expire_after_two_periods(self, redis_store, clock) -> None:
        hits(redis_store, 1)
        window = int(START // PERIOD)
        ttl = redis_store.client.ttl(f"{redis_store.prefix}user:alice:{PERIOD}:{window}")
        assert PERIOD < ttl <= 2 * PERIOD

    def test_redis_down_lets_requests_through_and_warns_once(self, clock, caplog) -> None:
        store = RedisStore.from_url(CLOSED_PORT_URL)
        # The handler goes on the logger itself, enabled: a test before this one may have
        # configured logging (a dictConfig disables the loggers it does not name, and agno_site's
        # may not propagate to caplog's root handler).
        throttle_logger = logging.getLogger("agno_site.throttle")
        was_disabled, throttle_logger.disabled = throttle_logger.disabled, False
        throttle_logger.addHandler(caplog.handler)
        try:
            with caplog.at_level("WARNING", logger="agno_site.throttle"):
                assert hits(store, LIMIT + 5) == [True] * (LIMIT + 5)
        finally:
            throttle_logger.removeHandler(caplog.handler)
            throttle_logger.disabled = was_disabled
        records = {id(record): record for record in caplog.records}.values()  # once even if both handlers saw it
        warnings = [record.getMessage() for record in records if record.name == "agno_site.throttle"]
        assert len(warnings) == 1 and warnings[0].startswith("rate limits unavailable, requests are let through: Redis: ")


class TestThrottleClass:
    """Through DRF's throttle protocol (allow_request, wait) and the API's 429."""

    def check(self, principal: Principal | None, address: str) -> PrincipalRateThrottle:
        request = Request(APIRequestFactory().get("/agents", REMOTE_ADDR=address))
        if principal is not None:
            request.user = principal
        throttle = PrincipalRateThrottle()
        throttle.allow_request(request, view=None)
        return throttle

    def test_one_bucket_per_token_else_user_else_address(self, settings, clock) -> None:
        settings.REDIS_URL = None
        settings.RATE_LIMIT_USER = settings.RATE_LIMIT_ANONYMOUS = "1/minute"
        user, address = f"user-{uuid.uuid4().hex}", f"test-{uuid.uuid4().hex}"
        callers = [
            Principal(user_id=user, via="jwt"),
            Principal(user_id=user, token_id=7_000_000_007, via="token"),  # a token has its own bucket
            Principal(via="none"),
        ]
        first = [self.check(principal, address).verdict.allowed for principal in callers]
        again = [self.check(principal, address) for principal in callers]
        assert first == [True, True, True]
        assert [throttle.verdict.allowed for throttle in again] == [False, False, False]
        assert all(0 < throttle.wait() <= PERIOD for throttle in again)

    def test_the_rates_are_read_on_every_request(self, settings, clock) -> None:
        settings.REDIS_URL = None
        settings.RATE_LIMIT_USER = "1/minute"
        alice = Principal(user_id=f"user-{uuid.uuid4().hex}", via="jwt")
        assert self.check(alice, "127.0.0.1").verdict.allowed is True
        assert self.check(alice, "127.0.0.1").verdict.allowed is False
        settings.RATE_LIMIT_USER = "3/minute"
        assert self.check(alice, "127.0.0.1").verdict.allowed is True

    @pytest.mark.django_db
    def test_the_api_limits_through_redis_when_configured(self, client, settings, redis_client, clock) -> None:
        settings.REDIS_URL = REDIS_URL
        settings.RATE_LIMIT_ANONYMOUS = "2/minute"
        address = f"test-{uuid.uuid4().hex}"
        try:
            answers = [client.get("/agents", REMOTE_ADDR=address) for _ in range(3)]
            assert [answer.status_code for answer in answers] == [200, 200, 429]
            assert answers[2].json() == {"detail": "Too many requests"}
            assert 0 < int(answers[2]["Retry-After"]) <= PERIOD + 1
            window = int(START // PERIOD)
            assert redis_client.get(f"throttle:addr:{address}:{PERIOD}:{window}") == b"2"
        finally:
            _delete_keys(redis_client, f"throttle:addr:{address}:*")

    @pytest.mark.django_db
    def test_a_made_up_x_forwarded_for_does_not_make_a_new_anonymous_bucket(self, client, settings, clock) -> None:
        settings.REDIS_URL = None
        settings.RATE_LIMIT_ANONYMOUS = "2/minute"
        settings.TRUSTED_PROXIES = []
        address = f"test-{uuid.uuid4().hex}"
        answers = [client.get("/agents", REMOTE_ADDR=address, HTTP_X_FORWARDED_FOR=f"198.51.100.{n}") for n in range(3)]
        assert [answer.status_code for answer in answers] == [200, 200, 429]

    @pytest.mark.django_db
    def test_behind_a_trusted_proxy_each_forwarded_client_has_its_own_bucket(self, client, settings, clock) -> None:
        settings.REDIS_URL = None
        settings.RATE_LIMIT_ANONYMOUS = "1/minute"
        settings.TRUSTED_PROXIES = ["10.0.0.0/8"]
        proxy = "10.0.0.2"
        # Addresses of their own: the buckets outlive a test.
        clients = [f"2001:db8::{uuid.uuid4().hex[:4]}", f"2001:db8:1::{uuid.uuid4().hex[:4]}"]
        first = [client.get("/agents", REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR=f"1.1.1.1, {ip}").status_code for ip in clients]
        again = client.get("/agents", REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR=f"2.2.2.2, {clients[0]}")
        assert first == [200, 200] and again.status_code == 429

    @pytest.mark.django_db
    def test_the_api_answers_with_redis_down(self, client, settings, clock, caplog) -> None:
        settings.REDIS_URL = CLOSED_PORT_URL
        settings.RATE_LIMIT_ANONYMOUS = "1/minute"
        with caplog.at_level("WARNING", logger="agno_site.throttle"):
            assert [client.get("/agents").status_code for _ in range(3)] == [200, 200, 200]
        assert "rate limits unavailable" in caplog.text


class TestLocalStoreMemory:
    def test_buckets_of_past_windows_are_dropped(self, clock) -> None:
        store = LocalStore()
        for window in range(6):
            for ident in range(500):
                hit(store, f"addr:{window}-{ident}", limit=LIMIT, period=PERIOD)
            assert len(store) == min(window + 1, 2) * 500  # this window's and the previous one's
            clock.advance(PERIOD)
        clock.advance(PERIOD)
        hit(store, "addr:late", limit=LIMIT, period=PERIOD)
        assert len(store) == 1

