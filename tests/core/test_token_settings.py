"""The Access tokens page (/chat/tokens/): each person sees and revokes only their own tokens."""
from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from core.auth import OPERATOR
from core.models import AccessToken, TokenKind
from core.services.tokens import access_token_create
from tests.factories import make_schedule

pytestmark = pytest.mark.django_db



def token(owner: str, name: str, **fields: Any) -> AccessToken:
    return access_token_create(name=name, user_id=owner, scopes="agents:read", granted_by=OPERATOR, **fields)[0]


def test_the_page_lists_the_users_own_tokens_and_service_accounts_only(alice) -> None:
    token("alice", "laptop")
    token("alice", "cron-bot", kind=TokenKind.SERVICE)
    token("bob", "bobs-laptop")
    page = alice.get("/chat/tokens/").content.decode()
    assert "laptop" in page and "cron-bot" in page and "Service account" in page
    assert "bobs-laptop" not in page
    assert Client().get("/chat/tokens/").status_code == 302  # signed out: to the login page


def test_revoking_stops_the_token_and_disables_the_schedules_created_with_it(alice) -> None:
    laptop = token("alice", "laptop")
    schedule = make_schedule("alice", grant={"user_id": "alice", "scopes": ["agents:run"], "via": "token", "token_id": laptop.pk})
    untouched = make_schedule("alice", grant={"user_id": "alice", "scopes": [], "via": "session"})
    answer = alice.post("/chat/tokens/", {"token_id": str(laptop.pk)}, follow=True)
    assert "Revoked “laptop”" in answer.content.decode()
    laptop.refresh_from_db()
    assert laptop.revoked_at is not None
    schedule.refresh_from_db()
    untouched.refresh_from_db()
    assert schedule.enabled is False and schedule.disabled_reason.startswith("credential_revoked: the personal token 'laptop' it fires with was revoked")
    assert untouched.enabled is True
    # Revoking it again changes nothing and says so.
    first = laptop.revoked_at
    assert "already revoked" in alice.post("/chat/tokens/", {"token_id": str(laptop.pk)}, follow=True).content.decode()
    laptop.refresh_from_db()
    assert laptop.revoked_at == first


def test_another_users_token_is_refused_like_a_missing_one(alice, bob) -> None:
    theirs = token("alice", "laptop")
    for value in (str(theirs.pk), "999999", "not-a-number", "9" * 40, ""):
        answer = bob.post("/chat/tokens/", {"token_id": value}, follow=True)
        assert answer.status_code == 200 and "not one of yours" in answer.content.decode(), value
    theirs.refresh_from_db()
    assert theirs.revoked_at is None
