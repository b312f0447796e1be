"""Browser logins (chat UI and admin) lock out after repeated failures, per account and per address.

LOGIN_FAILURE_LIMIT failures (5 by default) lock the account, from every address, and the address,
for every account, for LOGIN_LOCKOUT_MINUTES (15) after the last failure: the login page says so
and answers 429, even to the right password.
"""
from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.test import AsyncClient, Client
from django.utils import timezone

pytestmark = pytest.mark.django_db

MESSAGE = "Too many failed login attempts; try again in 15 minutes."
PASSWORD = "x-long-password"
ATTACKER, ELSEWHERE = "203.0.113.66", "198.51.100.20"


@pytest.fixture
def users(settings):
    settings.TRUSTED_PROXIES = []
    make = get_user_model().objects.create_user
    return make("alice", password=PASSWORD), make("bob", password=PASSWORD)


def login(username: str, password: str, address: str, *, path: str = "/chat/login/", **extra: str):
    return Client(REMOTE_ADDR=address, **extra).post(path, {"username": username, "password": password})


def logged_in(response) -> bool:
    return response.status_code == 302 and "_auth_user_id" in response.wsgi_request.session


def test_an_account_locks_out_from_every_address(users) -> None:
    failures = [login("alice", f"guess-{n}", ATTACKER) for n in range(5)]
    assert [answer.status_code for answer in failures] == [200, 200, 200, 200, 429]
    assert MESSAGE not in failures[3].content.decode() and MESSAGE in failures[4].content.decode()
    locked = login("alice", PASSWORD, ELSEWHERE)
    assert locked.status_code == 429 and not logged_in(locked)
    assert MESSAGE in locked.content.decode() and 'role="alert"' in locked.content.decode()
    assert logged_in(login("bob", PASSWORD, ELSEWHERE))  # another account, another address


def test_an_address_locks_out_for_every_account(users) -> None:
    assert [login(f"nobody-{n}", "guess", ATTACKER).status_code for n in range(5)] == [200, 200, 200, 200, 429]
    locked = login("bob", PASSWORD, ATTACKER)
    assert locked.status_code == 429 and MESSAGE in locked.content.decode() and not logged_in(locked)
    assert logged_in(login("bob", PASSWORD, ELSEWHERE))


def test_a_made_up_x_forwarded_for_does_not_dodge_the_address_lockout(users) -> None:
    for n in range(5):
        login(f"nobody-{n}", "guess", ATTACKER, HTTP_X_FORWARDED_FOR=f"192.0.2.{n}")
    assert login("bob", PASSWORD, ATTACKER, HTTP_X_FORWARDED_FOR="192.0.2.200").status_code == 429


def test_the_admin_login_locks_out_with_the_same_message(users) -> None:
    get_user_model().objects.create_superuser("op", password=PASSWORD)
    for n in range(5):
        login("op", f"guess-{n}", ATTACKER, path="/admin/login/")
    locked = login("op", PASSWORD, ELSEWHERE, path="/admin/login/")
    assert locked.status_code == 429 and MESSAGE in locked.content.decode()
    assert 'name="password"' in locked.content.decode()  # the admin's own login page, saying why


def test_the_lockout_ends_after_its_cool_off(users) -> None:
    for n in range(5):
        login("alice", f"guess-{n}", ATTACKER)
    assert login("alice", PASSWORD, ATTACKER).status_code == 429
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))
    assert logged_in(login("alice", PASSWORD, ATTACKER))


def test_the_limit_and_cool_off_come_from_settings(users, settings) -> None:
    settings.AXES_FAILURE_LIMIT = 2
    settings.AXES_COOLOFF_TIME = timedelta(minutes=1)
    assert [login("alice", "guess", ATTACKER).status_code for _ in range(2)] == [200, 429]
    assert "try again in 1 minute." in login("alice", PASSWORD, ELSEWHERE).content.decode()


@pytest.mark.django_db(transaction=True)
def test_the_lockout_holds_on_the_async_request_path(settings) -> None:
    settings.TRUSTED_PROXIES = []
    get_user_model().objects.create_user("alice", password=PASSWORD)

    async def attempts() -> list:
        client = AsyncClient(REMOTE_ADDR=ATTACKER)
        answers = [await client.post("/chat/login/", {"username": "alice", "password": f"guess-{n}"}) for n in range(5)]
        return answers + [await client.post("/chat/login/", {"username": "alice", "password": PASSWORD})]

    answers = asyncio.run(attempts())
    assert [answer.status_code for answer in answers] == [200, 200, 200, 200, 429, 429]
    assert MESSAGE in answers[-1].content.decode()


def test_operators_see_failed_attempts_in_the_admin(users, client) -> None:
    login("alice", "guess", ATTACKER)
    client.force_login(get_user_model().objects.create_superuser("op", password=PASSWORD))
    page = client.get("/admin/axes/accessattempt/")
    assert page.status_code == 200 and ATTACKER in page.content.decode()

