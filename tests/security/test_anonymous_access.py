"""A development server (no authentication configured) keeps the people who sign in apart from
anonymous API calls (issue 19: with no cookie, ``/sessions?user_id=alice`` returned alice's
conversations). Anonymous callers act only for user ids nobody signs in as, and see only rows
without an owner when they name none; ``ANONYMOUS_ACCESS=open`` (the default under
``ALLOW_UNAUTHENTICATED=true``) is AgentOS's open server."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from sessions.models import Run, Session
from tests.factories import make_access_token, make_memory, make_session

pytestmark = pytest.mark.django_db(transaction=True)  # runs execute on run threads, which see committed rows only

ROOT = Path(__file__).resolve().parents[2]
REFUSED = "belongs to someone who signs in"


@pytest.fixture
def guests(settings):
    settings.AGENT_OS_AUTH_MODE = "none"
    settings.ANONYMOUS_ACCESS = "guests"
    return settings


@pytest.fixture
def alice():
    get_user_model().objects.create_user(username="alice", password="pw-alice-0123456789")
    return make_session("alice", session_name="alice's plans")


def session_ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [row["session_id"] for row in response.json()["data"]]


def test_anonymous_user_id_of_an_account_does_not_read_its_sessions(client, guests, alice) -> None:
    response = client.get("/sessions", {"user_id": "alice"})
    assert response.status_code == 403
    assert REFUSED in response.json()["detail"]
    assert "alice's plans" not in response.content.decode()


def test_anonymous_without_user_id_sees_only_ownerless_sessions(client, guests, alice) -> None:
    ownerless = make_session(None, session_name="shared")
    make_session("ada", session_name="ada's")
    assert session_ids(client.get("/sessions")) == [ownerless.session_id]


def test_anonymous_cannot_read_or_write_as_an_account(client, guests, alice) -> None:
    memory = make_memory("alice", memory="alice likes tea")
    assert client.get(f"/sessions/{alice.session_id}", {"user_id": "alice"}).status_code == 403
    assert client.get(f"/sessions/{alice.session_id}").status_code == 404  # not ownerless
    assert client.get(f"/memories/{memory.memory_id}", {"user_id": "alice"}).status_code == 403
    run = client.post("/agents/assistant/runs", {"message": "hi", "stream": "false", "user_id": "alice"})
    assert (run.status_code, REFUSED in run.json()["detail"]) == (403, True)
    assert Run.objects.for_user("alice").count() == 0
    assert Session.objects.for_user("alice").count() == 1


def test_token_owners_and_service_accounts_are_refused_too(client, guests) -> None:
    make_access_token("bob")
    assert client.get("/sessions", {"user_id": "bob"}).status_code == 403
    assert client.get("/sessions", {"user_id": "sa:7"}).status_code == 403


def test_anonymous_acts_for_a_user_id_nobody_signs_in_as(client, guests, alice) -> None:
    run = client.post("/agents/assistant/runs", {"message": "hi", "stream": "false", "user_id": "ada"})
    assert (run.status_code, run.json()["status"]) == (200, "COMPLETED")
    assert session_ids(client.get("/sessions", {"user_id": "ada"})) == [run.json()["session_id"]]
    assert session_ids(client.get("/sessions")) == []


def test_the_signed_in_browser_user_sees_their_own(client, guests, alice) -> None:
    client.force_login(get_user_model().objects.get(username="alice"))
    assert session_ids(client.get("/sessions")) == [alice.session_id]


def test_an_open_server_lets_anonymous_callers_act_for_anyone(client, settings, alice) -> None:
    settings.AGENT_OS_AUTH_MODE = "none"
    settings.ANONYMOUS_ACCESS = "open"
    assert session_ids(client.get("/sessions", {"user_id": "alice"})) == [alice.session_id]


@pytest.mark.parametrize(
    ("env", "expected"),
    [({}, "guests"), ({"ALLOW_UNAUTHENTICATED": "true"}, "open"), ({"ANONYMOUS_ACCESS": "open"}, "open")],
)
def test_the_development_default_is_guests(tmp_path, env: dict, expected: str) -> None:
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("JWT_", "OS_SECURITY", "ALLOW_UNAUTH", "ANONYMOUS_ACCESS", "DEBUG"))}
    environment.update({"DJANGO_SETTINGS_MODULE": "agno_site.settings.local", "VAR_DIR": str(tmp_path), "AGNO_SITE_IGNORE_DOTENV": "true", **env})
    code = "import django; django.setup(); from django.conf import settings; print(settings.AGENT_OS_AUTH_MODE, settings.ANONYMOUS_ACCESS)"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60)
    assert result.stdout.split() == ["none", expected], result.stderr


def test_a_bad_value_stops_start_up(tmp_path) -> None:
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "agno_site.settings.local", "VAR_DIR": str(tmp_path), "ANONYMOUS_ACCESS": "everyone"}
    result = subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "ANONYMOUS_ACCESS must be guests or open" in result.stderr
