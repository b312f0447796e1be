"""Failed authentication is throttled per client address: guessing credentials costs the window.

After AUTH_FAILURE_LIMIT refused credentials from one address, every credential from it, valid or
not, is refused with 429 and Retry-After until the window has room; other addresses are unaffected.
The counters are the rate limits' (core.api.throttling): per process, or in Redis with REDIS_URL.
"""
from __future__ import annotations

import asyncio
import os
import uuid

import pytest
import redis
from channels.testing import WebsocketCommunicator

from agents.consumers import RunSocket
from core.api import throttling
from core.auth import OPERATOR
from core.services.tokens import access_token_create
from tests.conftest import require_service

from .conftest import OTHER_SECRET, auth, token

pytestmark = pytest.mark.django_db

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
START = 1_000_000.0 * 60  # the start of a minute


class Clock:
    def __init__(self) -> None:
        self.now = START


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(throttling, "clock", lambda: clock.now)
    return clock


@pytest.fixture(params=["local", "redis"])
def limited(request, jwt_server, clock):
    """A JWT server allowing 3 failures a minute per address, counted in the process or in Redis."""
    jwt_server.AUTH_FAILURE_LIMIT = "3/minute"
    jwt_server.TRUSTED_PROXIES = []
    jwt_server.REDIS_URL = None
    if request.param == "redis":
        client = redis.Redis.from_url(REDIS_URL, socket_timeout=2)
        try:
            client.ping()
        except redis.RedisError as exc:
            require_service("Redis", f"cannot reach {REDIS_URL}: {exc}")
        jwt_server.REDIS_URL = REDIS_URL
        yield jwt_server
        keys = list(client.scan_iter("throttle:authfail:*"))
        if keys:
            client.delete(*keys)
        client.close()
    else:
        yield jwt_server


def new_address() -> str:
    # Addresses of their own: the counters outlive a test (in the process, or in Redis).
    return f"2001:db8::{uuid.uuid4().hex[:4]}:{uuid.uuid4().hex[:4]}"


def statuses(client, credentials: list[str], address: str, **extra: str) -> list[int]:
    return [client.get("/sessions", REMOTE_ADDR=address, **auth(value), **extra).status_code for value in credentials]


def test_after_the_limit_even_a_valid_token_gets_429_until_the_window_passes(client, limited, clock) -> None:
    attacker, neighbour = new_address(), new_address()
    forged = [token("alice", key=OTHER_SECRET) for _ in range(3)]
    assert statuses(client, forged, attacker) == [401, 401, 401]
    refused = client.get("/sessions", REMOTE_ADDR=attacker, **auth(token("alice")))
    assert refused.status_code == 429
    assert refused.json() == {"detail": "Too many requests"}
    assert 0 < int(refused["Retry-After"]) <= 61
    assert statuses(client, [token("bob")], neighbour) == [200]  # another address is unaffected
    clock.now += 120  # both windows over
    assert statuses(client, [token("alice")], attacker) == [200]


def test_successes_do_not_count(client, limited) -> None:
    address = new_address()
    assert statuses(client, [token("alice")] * 5, address) == [200] * 5
    assert statuses(client, [token("alice", key=OTHER_SECRET)] * 3 + [token("alice")], address) == [401, 401, 401, 429]


def test_bad_access_tokens_count(client, limited) -> None:
    address = new_address()
    _, real = access_token_create(user_id="alice", name="bot", kind="service", scopes=["sessions:read"], granted_by=OPERATOR)
    guesses = [f"agno_pat_{uuid.uuid4().hex}" for _ in range(3)]
    assert statuses(client, guesses, address) == [401, 401, 401]
    assert statuses(client, [real], address) == [429]


def test_bad_security_keys_count(client, limited) -> None:
    limited.JWT_VERIFICATION_KEYS = []
    limited.AGENT_OS_AUTH_MODE = "security_key"
    limited.OS_SECURITY_KEY = "the-right-key-0123456789"
    address = new_address()
    assert statuses(client, ["guess-1", "guess-2", "guess-3", "the-right-key-0123456789"], address) == [401, 401, 401, 429]


def test_a_made_up_x_forwarded_for_does_not_reset_the_count(client, limited) -> None:
    address = new_address()
    forged = token("alice", key=OTHER_SECRET)
    answers = [client.get("/sessions", REMOTE_ADDR=address, HTTP_X_FORWARDED_FOR=f"198.51.100.{n}", **auth(forged)).status_code for n in range(4)]
    assert answers == [401, 401, 401, 429]


def test_the_websocket_counts_and_refuses_the_same_way(limited) -> None:
    address = new_address()

    async def authenticate(credential: str) -> dict:
        socket = WebsocketCommunicator(RunSocket.as_asgi(), "/ws/runs")
        socket.scope["client"] = (address, 50000)
        await socket.connect()
        await socket.receive_json_from()  # connected
        await socket.send_json_to({"action": "authenticate", "token": credential})
        answer = await socket.receive_json_from()
        await socket.disconnect()
        return answer

    async def attempts() -> list[dict]:
        return [await authenticate(value) for value in [token("alice", key=OTHER_SECRET)] * 3 + [token("alice")]]

    answers = asyncio.run(attempts())
    assert [answer["error_type"] for answer in answers[:3]] == ["invalid_token"] * 3
    assert answers[3]["event"] == "auth_error" and answers[3]["error_type"] == "rate_limited"
    assert answers[3]["error"] == "Too many failed authentication attempts" and 0 < answers[3]["retry_after"] <= 61
