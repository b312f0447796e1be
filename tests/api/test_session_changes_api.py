"""The /sessions family over HTTP, changing sessions: metrics, update, rename, delete.

``client`` is an open server's caller (AgentOS without auth: every user's rows, ``user_id``
honoured as a filter); ``alice``/``bob`` are logged-in browser users, bound to their own rows
(user isolation).
"""
from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from sessions.models import Run, RunEvent, Session
from sessions.services.runs import RunRecord, run_finish, run_record
from tests.api.sessions_data import (
    AGENT_DETAIL_KEYS, CHAT_HISTORY, ISO_T0, T0, TEAM_DETAIL_KEYS, WORKFLOW_DETAIL_KEYS, agent_session, iso, stamp,
)
from tests.factories import make_session

pytestmark = pytest.mark.django_db


# --- PATCH /sessions/{id} and POST /sessions/{id}/rename -------------------------------------------

def usage(**models: tuple[str, str, int, int]) -> dict[str, Any]:
    """A run's metrics as the runtime writes them: ``model_type=(provider, id, input, output)``."""
    details = {kind: [{"input_tokens": i, "output_tokens": o, "total_tokens": i + o, "id": model, "provider": provider}]
               for kind, (provider, model, i, o) in models.items()}
    entries = [entry for kind in details.values() for entry in kind]
    tokens = {name: sum(entry[name] for entry in entries) for name in ("input_tokens", "output_tokens", "total_tokens")}
    return {**tokens, "duration": 0.5, "details": details}


def record(session_id: str, run_id: str, metrics: dict[str, Any], *, new: bool = False, status: str = "COMPLETED") -> Run:
    return run_record(RunRecord(session_id=session_id, owner_id="alice", component_id="assistant", run_id=run_id,
                                status=status, input={"input_content": "hi"}, output={"content": "ok", "metrics": metrics}), create_session=new)


class TestSessionMetrics:
    """A session's metrics are Agno's SessionMetrics: its runs' tokens added up, per model too."""

    def test_the_detail_and_the_list_add_up_every_runs_tokens_per_model(self, client: Client) -> None:
        record("s-m", "r1", usage(model=("OpenAI", "gpt-4o", 10, 5), memory_model=("OpenAI", "gpt-4o-mini", 3, 1)), new=True)
        record("s-m", "r2", usage(model=("OpenAI", "gpt-4o", 20, 7)))
        record("s-m", "r3", usage(model=("Anthropic", "claude-sonnet-4-5", 1, 1)))
        metrics = {
            "input_tokens": 34,
            "output_tokens": 14,
            "total_tokens": 48,
            "details": {
                "model": [
                    {"input_tokens": 30, "output_tokens": 12, "total_tokens": 42, "id": "gpt-4o", "provider": "OpenAI"},
                    {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2, "id": "claude-sonnet-4-5", "provider": "Anthropic"},
                ],
                "memory_model": [{"input_tokens": 3, "output_tokens": 1, "total_tokens": 4, "id": "gpt-4o-mini", "provider": "OpenAI"}],
            },
        }
        detail = client.get("/sessions/s-m").json()
        assert (detail["metrics"], detail["total_tokens"]) == (metrics, 48)
        (listed,) = client.get("/sessions").json()["data"]
        assert (listed["metrics"], listed["total_tokens"]) == (metrics, 48)

    def test_a_continued_run_adds_only_what_it_used_since(self, client: Client) -> None:
        paused = record("s-c", "r1", usage(model=("OpenAI", "gpt-4o", 10, 5)), new=True, status="PAUSED")
        run_finish(paused, RunRecord(run_id="r1", session_id="s-c", owner_id="alice", component_id="assistant", status="COMPLETED",
                                     output={"content": "done", "metrics": usage(model=("OpenAI", "gpt-4o", 25, 9))}))
        assert client.get("/sessions/s-c").json()["metrics"] == {
            "input_tokens": 25, "output_tokens": 9, "total_tokens": 34,
            "details": {"model": [{"input_tokens": 25, "output_tokens": 9, "total_tokens": 34, "id": "gpt-4o", "provider": "OpenAI"}]},
        }

    def test_recording_a_run_costs_the_same_whatever_the_sessions_length(self) -> None:
        record("s-f", "r0", usage(model=("OpenAI", "gpt-4o", 1, 1)), new=True)
        with CaptureQueriesContext(connection) as early:
            record("s-f", "r1", usage(model=("OpenAI", "gpt-4o", 1, 1)))
        for index in range(2, 32):
            record("s-f", f"r{index}", usage(model=("OpenAI", "gpt-4o", 1, 1)))
        with CaptureQueriesContext(connection) as late:
            record("s-f", "r-last", usage(model=("OpenAI", "gpt-4o", 1, 1)))
        statements = [q["sql"].split()[:3] for q in late.captured_queries]
        assert statements == [q["sql"].split()[:3] for q in early.captured_queries]
        assert ["SELECT"] not in [statement[:1] for statement in statements], statements
        assert Session.all_users.get(pk="s-f").metrics["details"]["model"][0]["total_tokens"] == 66


class TestUpdateSession:
    def test_updates_the_given_fields_and_answers_with_explicit_nulls(self, client: Client) -> None:
        stamp(make_session("alice", session_id="s", component_id="assistant", metadata={"old": True}))
        response = client.patch(
            "/sessions/s",
            {
                "session_name": "Renamed",
                "session_state": {"step": 2},
                "metadata": {"new": True},
                "summary": {"summary": "We planned.", "topics": ["plans"], "updated_at": "2026-11-30T10:00:00Z"},
            },
            content_type="application/json",
        )
        assert response.status_code == 200
        session = Session.all_users.get(pk="s")
        assert response.json() == {
            "user_id": "alice",
            "agent_session_id": "s",
            "session_id": "s",
            "session_name": "Renamed",
            "session_summary": {"summary": "We planned.", "topics": ["plans"], "updated_at": "2026-11-30T10:00:00+00:00"},
            "session_state": {"step": 2},
            "agent_id": "assistant",
            "total_tokens": None,
            "agent_data": None,
            "metrics": {},
            "metadata": {"new": True},
            "chat_history": [],
            "created_at": ISO_T0,
            "updated_at": iso(session.updated_at),
        }
        assert session.updated_at > T0

    def test_fields_left_out_or_null_are_kept(self, client: Client) -> None:
        make_session("alice", session_id="s", session_name="Keep", session_state={"a": 1}, metadata={"m": 1})
        body = client.patch("/sessions/s", {"session_state": None}, content_type="application/json").json()
        assert (body["session_name"], body["session_state"], body["metadata"]) == ("Keep", {"a": 1}, {"m": 1})

    def test_type_shapes_the_answer(self, client: Client) -> None:
        make_session("alice", session_id="s", session_type="team", component_id="crew")
        assert list(client.patch("/sessions/s?type=team", {}, content_type="application/json").json()) == TEAM_DETAIL_KEYS
        assert list(client.patch("/sessions/s?type=workflow", {}, content_type="application/json").json()) == WORKFLOW_DETAIL_KEYS
        assert list(client.patch("/sessions/s", {}, content_type="application/json").json()) == TEAM_DETAIL_KEYS

    def test_a_summary_without_text_is_422(self, client: Client) -> None:
        make_session("alice", session_id="s")
        response = client.patch("/sessions/s", {"summary": {"topics": ["x"]}}, content_type="application/json")
        assert (response.status_code, response.json()) == (
            422,
            {"detail": [{"type": "missing", "loc": ["body", "summary", "summary"], "msg": "Field required", "input": None}]},
        )

    def test_a_missing_body_is_422(self, client: Client) -> None:
        make_session("alice", session_id="s")
        response = client.generic("PATCH", "/sessions/s")
        assert (response.status_code, response.json()) == (
            422,
            {"detail": [{"type": "missing", "loc": ["body"], "msg": "Field required", "input": None}]},
        )

    def test_unknown_session_is_404(self, client: Client) -> None:
        response = client.patch("/sessions/nope", {"session_name": "x"}, content_type="application/json")
        assert (response.status_code, response.json()) == (404, {"detail": "Session with id 'nope' not found"})

    def test_outsider_gets_404_and_changes_nothing(self, bob: Client) -> None:
        make_session("alice", session_id="s", session_name="Alice's")
        response = bob.patch("/sessions/s", {"session_name": "Bob's now"}, content_type="application/json")
        assert response.status_code == 404
        assert Session.all_users.get(pk="s").session_name == "Alice's"


class TestRenameSession:
    def test_renames_and_answers_with_explicit_nulls(self, client: Client) -> None:
        agent_session()
        response = client.post("/sessions/s-agent/rename", {"session_name": "Tools"}, content_type="application/json")
        assert response.status_code == 200
        body = response.json()
        assert list(body) == AGENT_DETAIL_KEYS
        assert (body["session_name"], body["chat_history"]) == ("Tools", CHAT_HISTORY)
        assert Session.all_users.get(pk="s-agent").session_name == "Tools"

    def test_an_empty_name_is_allowed(self, client: Client) -> None:
        make_session("alice", session_id="s", session_name="x")
        assert client.post("/sessions/s/rename", {"session_name": ""}, content_type="application/json").json()["session_name"] == ""

    @pytest.mark.parametrize(
        ("body", "error"),
        [
            ({}, {"type": "missing", "loc": ["body", "session_name"], "msg": "Field required", "input": None}),
            ({"session_name": None}, {"type": "null", "loc": ["body", "session_name"], "msg": "Input should be a valid string", "input": None}),
        ],
    )
    def test_session_name_is_required(self, client: Client, body: dict[str, Any], error: dict[str, Any]) -> None:
        make_session("alice", session_id="s")
        response = client.post("/sessions/s/rename", body, content_type="application/json")
        assert (response.status_code, response.json()) == (422, {"detail": [error]})

    def test_outsider_gets_404(self, bob: Client) -> None:
        make_session("alice", session_id="s", session_name="mine")
        response = bob.post("/sessions/s/rename", {"session_name": "hijacked"}, content_type="application/json")
        assert (response.status_code, response.json()) == (404, {"detail": "Session with id 's' not found"})
        assert Session.all_users.get(pk="s").session_name == "mine"


# --- DELETE /sessions/{id} and DELETE /sessions ---------------------------------------------------

class TestDeleteSessions:
    def test_deletes_a_session_with_its_runs_and_events(self, client: Client) -> None:
        session = agent_session()
        run = Run.all_users.get(session=session)
        RunEvent.all_users.create(run=run, user_id="alice", event_index=0, event="RunStarted", payload={})
        response = client.delete("/sessions/s-agent")
        assert (response.status_code, response.content) == (204, b"")
        assert not Session.all_users.filter(pk="s-agent").exists()
        assert not Run.all_users.filter(pk=run.pk).exists()
        assert not RunEvent.all_users.filter(run_id=run.pk).exists()

    def test_unknown_ids_are_204(self, client: Client) -> None:
        assert client.delete("/sessions/nope").status_code == 204

    def test_outsider_cannot_delete(self, bob: Client) -> None:
        make_session("alice", session_id="s")
        assert bob.delete("/sessions/s").status_code == 204
        assert Session.all_users.filter(pk="s").exists()

    def test_open_callers_user_id_filters_what_is_deleted(self, client: Client) -> None:
        make_session("alice", session_id="s")
        client.delete("/sessions/s?user_id=bob")
        assert Session.all_users.filter(pk="s").exists()
        client.delete("/sessions/s?user_id=alice")
        assert not Session.all_users.filter(pk="s").exists()

    def test_deleting_media_too_deletes_the_session_as_no_media_is_stored(self, client: Client) -> None:
        make_session("alice", session_id="s")
        assert client.delete("/sessions/s?delete_media=maybe").status_code == 422
        assert Session.all_users.filter(pk="s").exists()
        assert client.delete("/sessions/s?delete_media=true").status_code == 204
        assert not Session.all_users.filter(pk="s").exists()

    def test_bulk_delete_reads_a_json_body(self, client: Client) -> None:
        for session_id in ("a", "b", "c"):
            make_session("alice", session_id=session_id)
        response = client.delete(
            "/sessions", {"session_ids": ["a", "b", "zzz"], "session_types": ["agent", "team", "agent"]}, content_type="application/json"
        )
        assert response.status_code == 204
        assert list(Session.all_users.values_list("pk", flat=True)) == ["c"]

    def test_bulk_delete_skips_sessions_outside_the_callers_scope(self, bob: Client) -> None:
        make_session("alice", session_id="a")
        make_session("bob", session_id="b")
        bob.delete("/sessions", {"session_ids": ["a", "b"], "session_types": ["agent", "agent"]}, content_type="application/json")
        assert list(Session.all_users.values_list("pk", flat=True)) == ["a"]

    def test_bulk_delete_needs_as_many_types_as_ids(self, client: Client) -> None:
        make_session("alice", session_id="a")
        response = client.delete("/sessions", {"session_ids": ["a"], "session_types": ["agent", "team"]}, content_type="application/json")
        assert (response.status_code, response.json()) == (400, {"detail": "Session IDs and session types must have the same length"})
        assert Session.all_users.filter(pk="a").exists()

    @pytest.mark.parametrize(
        ("body", "loc"),
        [
            (None, ["body"]),
            ({"session_types": ["agent"]}, ["body", "session_ids"]),
            ({"session_ids": [], "session_types": []}, ["body", "session_ids"]),
            ({"session_ids": ["a"], "session_types": ["robot"]}, ["body", "session_types", 0]),
        ],
    )
    def test_bulk_delete_validates_its_body(self, client: Client, body: dict[str, Any] | None, loc: list[Any]) -> None:
        response = client.delete("/sessions", body, content_type="application/json") if body is not None else client.delete("/sessions")
        assert response.status_code == 422
        assert response.json()["detail"][0]["loc"] == loc
