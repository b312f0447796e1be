"""Feedback on replies over the chat UI's endpoint: /chat/api/runs/{run_id}/feedback."""
from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from sessions.models import RunFeedback, RunStatus
from tests.factories import make_run, make_session, signed_in

pytestmark = pytest.mark.django_db




@pytest.fixture
def run():
    session = make_session("alice", session_id="s-alice", component_id="assistant")
    return make_run("alice", session=session, run_id="run-1", status=RunStatus.COMPLETED)


def url(run_id: str) -> str:
    return f"/chat/api/runs/{run_id}/feedback"


def put(client: Client, run_id: str, body: Any, **extra: Any):
    return client.put(url(run_id), body, content_type="application/json", **extra)


def stored(user_id: str) -> list[tuple[str, str, str, str, str]]:
    return list(RunFeedback.objects.for_user(user_id).values_list("run_id", "session_id", "component_id", "rating", "comment"))


def test_a_rating_is_stored_changed_and_withdrawn(alice, run) -> None:
    first = put(alice, "run-1", {"rating": "up"})
    assert first.status_code == 200
    body = first.json()
    assert {key: body[key] for key in ("run_id", "session_id", "rating", "comment")} == {
        "run_id": "run-1", "session_id": "s-alice", "rating": "up", "comment": "",
    }
    assert body["created_at"].endswith("Z") and body["updated_at"].endswith("Z")
    assert stored("alice") == [("run-1", "s-alice", "assistant", "up", "")]

    changed = put(alice, "run-1", {"rating": "down", "comment": "It got the date wrong."})
    assert changed.status_code == 200 and changed.json()["rating"] == "down"
    assert stored("alice") == [("run-1", "s-alice", "assistant", "down", "It got the date wrong.")]  # one row per run
    assert alice.get(url("run-1")).json()["comment"] == "It got the date wrong."

    assert alice.delete(url("run-1")).status_code == 204
    assert stored("alice") == []
    assert alice.get(url("run-1")).status_code == 404
    assert alice.delete(url("run-1")).status_code == 204  # withdrawing twice is no error


def test_the_session_lists_its_ratings_for_the_page_to_show_again(alice, run) -> None:
    other = make_run("alice", session=run.session, run_id="run-2", status=RunStatus.COMPLETED)
    put(alice, "run-1", {"rating": "up"})
    put(alice, other.pk, {"rating": "down", "comment": "meh"})
    body = alice.get("/chat/api/sessions/s-alice/feedback").json()
    assert [(item["run_id"], item["rating"], item["comment"]) for item in body["data"]] == [("run-1", "up", ""), ("run-2", "down", "meh")]


def test_another_users_run_and_session_are_404_and_nothing_is_written(bob, run) -> None:
    for response in (
        put(bob, "run-1", {"rating": "down", "comment": "spite"}),
        bob.get(url("run-1")),
        bob.delete(url("run-1")),
        bob.get("/chat/api/sessions/s-alice/feedback"),
    ):
        assert response.status_code == 404
        assert response.json()["detail"] in ("Run not found", "Session not found")
    assert stored("bob") == [] and stored("alice") == []


def test_bobs_withdrawal_never_touches_alices_rating(alice, bob, run) -> None:
    put(alice, "run-1", {"rating": "up"})
    assert bob.delete(url("run-1")).status_code == 404
    assert stored("alice") == [("run-1", "s-alice", "assistant", "up", "")]


def test_a_missing_run_is_404(alice) -> None:
    response = put(alice, "no-such-run", {"rating": "up"})
    assert (response.status_code, response.json()) == (404, {"detail": "Run not found"})


@pytest.mark.parametrize(
    "body",
    [{}, {"rating": "sideways"}, {"rating": None}, {"rating": "up", "comment": "x" * 2001}, {"rating": "up", "comment": 5 * [1]}, ["up"], "up"],
)
def test_bad_input_is_a_422_in_the_detail_shape(alice, run, body) -> None:
    response = put(alice, "run-1", body)
    assert response.status_code == 422
    assert isinstance(response.json()["detail"], list) and response.json()["detail"][0]["loc"][0] == "body"
    assert stored("alice") == []


def test_malformed_json_is_a_422(alice, run) -> None:
    response = alice.put(url("run-1"), "{not json", content_type="application/json")
    assert response.status_code == 422
    assert "detail" in response.json()


def test_without_a_browser_login_it_is_a_401_even_on_an_open_server(client, run) -> None:
    response = put(client, "run-1", {"rating": "up"})
    assert response.status_code == 401 and "detail" in response.json()
    assert client.get("/chat/api/sessions/s-alice/feedback").status_code == 401
    assert stored("alice") == []


def test_a_write_without_the_csrf_token_is_refused(django_user_model, run) -> None:
    strict = signed_in("alice", enforce_csrf_checks=True)
    response = put(strict, "run-1", {"rating": "up"})
    assert response.status_code == 403 and "CSRF" in response.json()["detail"]
    strict.get("/chat/")  # the chat page sets the CSRF cookie
    token = strict.cookies["csrftoken"].value
    assert put(strict, "run-1", {"rating": "up"}, HTTP_X_CSRFTOKEN=token).status_code == 200


def test_a_bearer_token_is_not_accepted_here(client, run, settings) -> None:
    response = client.put(url("run-1"), {"rating": "up"}, content_type="application/json", HTTP_AUTHORIZATION="Bearer anything")
    assert response.status_code == 401


def test_the_endpoint_is_not_in_the_agentos_document(client) -> None:
    assert not [path for path in client.get("/openapi.json").json()["paths"] if path.startswith("/chat")]


def test_feedback_goes_with_the_session_when_it_is_deleted(alice, run) -> None:
    put(alice, "run-1", {"rating": "up"})
    assert alice.delete("/sessions/s-alice").status_code == 204
    assert stored("alice") == []
