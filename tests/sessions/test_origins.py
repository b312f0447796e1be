"""Every run says where it came from, and the chat's conversation list is conversations only:
the chat and API clients' sessions, not those evals and schedules make (GET /sessions?origin=)."""
from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from sessions.models import Run, RunOrigin, RunStatus, Session
from tests.factories import make_run, make_session

pytestmark = pytest.mark.django_db(transaction=True)

CONVERSATIONS = {"origin": "chat,api"}


def made_by(origin: str, user: str = "alice", **fields: Any) -> Session:
    session = make_session(user, origin=origin, **fields)
    make_run(user, session=session, status=RunStatus.COMPLETED, origin=origin)
    return session


def names(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [item["session_id"] for item in response.json()["data"]]


def test_a_browser_run_is_the_chats_and_a_clients_is_the_apis(alice) -> None:
    said = alice.post("/agents/assistant/runs", {"message": "hello", "session_id": "s-chat", "stream": "false"})
    assert said.status_code == 200, said.content
    client = Client().post("/agents/assistant/runs", {"message": "hello", "session_id": "s-api", "user_id": "carol", "stream": "false"})
    assert client.status_code == 200, client.content
    assert (Run.objects.for_user("alice").get(session_id="s-chat").origin, Session.objects.for_user("alice").get(pk="s-chat").origin) == ("chat", "chat")
    assert Run.objects.for_user("carol").get(session_id="s-api").origin == "api"
    # Exposed beside AgentOS's keys, on the run and on the session.
    [run] = alice.get("/sessions/s-chat/runs").json()
    assert run["origin"] == "chat"
    assert [item["origin"] for item in alice.get("/sessions").json()["data"]] == ["chat"]


def test_the_conversation_list_leaves_out_eval_and_schedule_sessions(alice) -> None:
    talk = made_by(RunOrigin.CHAT)
    script = made_by(RunOrigin.API)
    made_by(RunOrigin.EVAL)
    fired = made_by(RunOrigin.SCHEDULE)
    made_by(RunOrigin.CHAT, user="bob")
    assert sorted(names(alice.get("/sessions", CONVERSATIONS))) == sorted([talk.pk, script.pk])
    assert names(alice.get("/sessions", {"origin": "schedule"})) == [fired.pk]
    assert len(names(alice.get("/sessions"))) == 4  # without the filter, every session of hers
    # Searching the conversations keeps to them too.
    assert names(alice.get("/sessions", {**CONVERSATIONS, "q": "nothing like this"})) == []


def test_an_unknown_origin_is_a_422(alice) -> None:
    response = alice.get("/sessions", {"origin": "chat,robots"})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "origin"]
    # A run's own origins (a member's, a step's) are not a session's.
    assert alice.get("/sessions", {"origin": "team_member"}).status_code == 422


def test_an_edit_keeps_its_source_runs_origin(alice) -> None:
    first = alice.post("/agents/assistant/runs", {"message": "I like tea", "session_id": "s-chat", "stream": "false"}).json()
    edited = Client().post(f"/agents/assistant/runs/{first['run_id']}/continue", {
        "session_id": "s-chat", "user_id": "alice", "input": "I like coffee", "continue_from": "1", "fork": "true", "stream": "false",
    })
    assert edited.status_code == 200, edited.content
    assert Run.objects.for_user("alice").get(pk=edited.json()["run_id"]).origin == "chat"
