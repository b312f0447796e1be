"""The /schedules family on the wire: AgentOS's shapes, errors, paging, scopes and isolation."""
from __future__ import annotations

import json
import time

import pytest

from scheduler.models import Schedule
from tests.agents.conftest import wait_for
from tests.security.conftest import auth, token

pytestmark = pytest.mark.django_db



def alice() -> dict[str, str]:
    return auth(token("alice"))  # fresh: a token made at import expires in a long test run


def bob() -> dict[str, str]:
    return auth(token("bob"))
BODY = {"name": "morning", "cron_expr": "0 9 * * 1-5", "endpoint": "/agents/assistant/runs", "payload": {"message": "brief me"}, "timezone": "Europe/Paris"}


def post(client, path: str, body=None, headers=None):
    return client.post(path, data=json.dumps(body or {}), content_type="application/json", **(headers or alice()))


def patch(client, path: str, body, headers=None):
    return client.patch(path, data=json.dumps(body), content_type="application/json", **(headers or alice()))


def create(client, **fields) -> dict:
    response = post(client, "/schedules", {**BODY, **fields})
    assert response.status_code == 201, response.content
    return response.json()


def test_create_answers_201_with_the_whole_schedule(client, jwt_server) -> None:
    before = int(time.time())
    body = create(client, user_id="bob")  # an owner in the body is never read
    stored = Schedule.objects.for_user("alice").get(pk=body["id"])
    assert body == {
        "id": stored.pk, "user_id": "alice", "name": "morning", "description": None, "method": "POST",
        "endpoint": "/agents/assistant/runs", "payload": {"message": "brief me"}, "cron_expr": "0 9 * * 1-5",
        "timezone": "Europe/Paris", "timeout_seconds": 3600, "max_retries": 0, "retry_delay_seconds": 60, "enabled": True,
        "next_run_at": int(stored.next_run_at.timestamp()), "managed_by": None, "target_type": "agent", "target_id": "assistant",
        "disabled_reason": None, "created_at": body["created_at"], "updated_at": None,
    }
    assert before <= body["created_at"] <= int(time.time()) and body["next_run_at"] > before


@pytest.mark.parametrize(
    ("fields", "status", "detail"),
    [
        ({"cron_expr": "nope"}, 422, "Invalid cron expression: nope (5 fields expected: minute hour day-of-month month day-of-week)"),
        ({"timezone": "Nowhere/Land"}, 422, "Invalid timezone: Nowhere/Land"),
        ({"endpoint": "/agents/ghost/runs"}, 422, "Invalid endpoint: agent 'ghost' not found"),
        ({"payload": {"text": "no message"}}, 422, "Invalid payload for this run endpoint: message: Field required"),
    ],
)
def test_what_could_never_fire_is_a_422_with_the_reason(client, jwt_server, fields, status, detail) -> None:
    response = post(client, "/schedules", {**BODY, **fields})
    assert (response.status_code, response.json()) == (status, {"detail": detail})


def test_body_validation_is_fastapis_422(client, jwt_server) -> None:
    response = post(client, "/schedules", {"name": "x", "endpoint": "/agents/assistant/runs", "max_retries": 11})
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", "max_retries"]
    missing = post(client, "/schedules", {"cron_expr": "* * * * *"}).json()["detail"]
    assert sorted(tuple(error["loc"]) for error in missing) == [("body", "endpoint"), ("body", "name")]


def test_a_duplicate_name_is_409_but_another_user_may_use_it(client, jwt_server) -> None:
    create(client)
    assert post(client, "/schedules", BODY).json() == {"detail": "Schedule with name 'morning' already exists"}
    assert post(client, "/schedules", BODY).status_code == 409
    assert post(client, "/schedules", BODY, headers=bob()).status_code == 201


def test_patch_writes_the_allow_list_and_names_every_other_key(client, jwt_server) -> None:
    schedule = create(client)
    refused = patch(client, f"/schedules/{schedule['id']}", {"name": "x", "user_id": "bob", "created_by_run_id": "r", "target_id": "hitl-agent"})
    assert refused.status_code == 422
    assert refused.json()["detail"].startswith("Cannot update created_by_run_id, target_id, user_id: only ")
    updated = patch(client, f"/schedules/{schedule['id']}", {"name": "evening", "cron_expr": "0 18 * * *", "description": None, "max_retries": 2})
    assert updated.status_code == 200
    body = updated.json()
    assert (body["name"], body["cron_expr"], body["max_retries"], body["user_id"]) == ("evening", "0 18 * * *", 2, "alice")
    assert body["updated_at"] is not None and body["next_run_at"] != schedule["next_run_at"]
    assert patch(client, f"/schedules/{schedule['id']}", {"cron_expr": "every day"}).json() == {"detail": "Invalid cron expression: every day (5 fields expected: minute hour day-of-month month day-of-week)"}


def test_enable_and_disable_answer_the_trimmed_state(client, jwt_server) -> None:
    schedule = create(client)
    disabled = post(client, f"/schedules/{schedule['id']}/disable")
    assert disabled.status_code == 200
    assert disabled.json() == {"id": schedule["id"], "name": "morning", "enabled": False, "next_run_at": None, "updated_at": disabled.json()["updated_at"]}
    assert post(client, f"/schedules/{schedule['id']}/trigger").json() == {"detail": "Schedule is disabled"}
    enabled = post(client, f"/schedules/{schedule['id']}/enable").json()
    assert enabled["enabled"] is True and enabled["next_run_at"] == schedule["next_run_at"]


def test_the_list_is_the_callers_page_envelope(client, jwt_server) -> None:
    for name in ("a", "b", "c"):
        create(client, name=name)
    create(client, name="off")
    post(client, f"/schedules/{Schedule.objects.for_user('alice').get(name='off').pk}/disable")
    post(client, "/schedules", {**BODY, "name": "bobs"}, headers=bob())
    listed = client.get("/schedules", **alice()).json()
    assert [item["name"] for item in listed["data"]] == ["off", "c", "b", "a"]
    assert listed["meta"] == {"page": 1, "limit": 100, "total_pages": 1, "total_count": 4, "search_time_ms": 0.0}
    paged = client.get("/schedules", {"limit": 2, "page": 2, "enabled": "true"}, **alice()).json()
    assert [item["name"] for item in paged["data"]] == ["a"] and paged["meta"]["total_count"] == 3
    assert client.get("/schedules", {"limit": 1001}, **alice()).status_code == 422
    assert client.get("/schedules", {"page": 0, "limit": 5}, **alice()).status_code == 422


def test_another_users_schedule_is_a_404_everywhere(client, jwt_server) -> None:
    schedule = create(client)
    path = f"/schedules/{schedule['id']}"
    answers = [
        client.get(path, **bob()), patch(client, path, {"name": "mine"}, headers=bob()), client.delete(path, **bob()),
        post(client, f"{path}/enable", headers=bob()), post(client, f"{path}/disable", headers=bob()), post(client, f"{path}/trigger", headers=bob()),
        client.get(f"{path}/runs", **bob()), client.get(f"{path}/runs/any", **bob()),
    ]
    assert [(a.status_code, a.json()) for a in answers][:7] == [(404, {"detail": "Schedule not found"})] * 7
    assert answers[7].status_code == 404
    assert client.get("/schedules", **bob()).json()["data"] == []
    assert Schedule.objects.for_user("alice").get(pk=schedule["id"]).name == "morning"


def test_scopes_gate_each_route(client, jwt_server) -> None:
    reader = auth(token("alice", ["schedules:read"]))
    assert client.get("/schedules", **reader).status_code == 200
    refused = post(client, "/schedules", BODY, headers=reader)
    assert refused.json() == {"detail": "Insufficient permissions. Required scope(s): schedules:write"}
    writer = auth(token("alice", ["schedules:write"]))
    assert post(client, "/schedules", BODY, headers=writer).json()["detail"] == "Insufficient permissions. Required scope(s): agents:run"
    schedule = create(client)
    assert client.delete(f"/schedules/{schedule['id']}", **writer).json() == {"detail": "Insufficient permissions. Required scope(s): schedules:delete"}


@pytest.mark.django_db(transaction=True)
def test_trigger_then_read_the_fire_and_its_run(client, jwt_server, worker) -> None:
    schedule = create(client, cron_expr="")
    fired = post(client, f"/schedules/{schedule['id']}/trigger")
    assert fired.status_code == 200
    body = fired.json()
    assert set(body) == {"id", "schedule_id", "user_id", "attempt", "scheduled_for", "triggered_at", "completed_at", "status", "status_code", "run_id", "session_id", "error", "input", "output", "requirements", "created_at"}
    assert (body["schedule_id"], body["user_id"], body["attempt"], body["status"], body["status_code"]) == (schedule["id"], "alice", 1, "running", 202)
    assert isinstance(body["triggered_at"], int) and body["input"] == {"input_content": "brief me"}
    assert isinstance(body["scheduled_for"], int) and body["scheduled_for"] <= body["triggered_at"]  # a trigger is for the moment it was asked

    def done():
        listed = client.get(f"/schedules/{schedule['id']}/runs", **alice()).json()
        return listed if listed["data"][0]["status"] != "running" else None

    listed = wait_for(done)
    [run] = listed["data"]
    assert (run["id"], run["status"], run["error"], run["run_id"]) == (body["id"], "success", None, body["run_id"])
    assert isinstance(run["completed_at"], int) and "brief me" in run["output"]["content"]
    assert client.get(f"/schedules/{schedule['id']}/runs/{run['id']}", **alice()).json() == run
    polled = client.get(f"/agents/assistant/runs/{run['run_id']}", {"session_id": run["session_id"]}, **alice()).json()
    assert polled["status"] == "COMPLETED" and polled["user_id"] == "alice"
    assert client.delete(f"/schedules/{schedule['id']}", **alice()).status_code == 204
    assert client.get(f"/schedules/{schedule['id']}/runs/{run['id']}", **alice()).status_code == 404


@pytest.mark.django_db(transaction=True)
def test_every_body_parses_as_agentos_own_response_models(client, jwt_server, worker) -> None:
    """Agno 3.1.10's pydantic models of the /schedules router (what its own UI and clients read)."""
    from agno.os.routers.schedules.schema import ScheduleResponse, ScheduleRunResponse, ScheduleStateResponse
    from agno.os.schema import PaginatedResponse

    schedule = create(client)
    ScheduleResponse.model_validate(schedule, strict=True)
    ScheduleResponse.model_validate(client.get(f"/schedules/{schedule['id']}", **alice()).json(), strict=True)
    PaginatedResponse[ScheduleResponse].model_validate(client.get("/schedules", **alice()).json())
    ScheduleResponse.model_validate(patch(client, f"/schedules/{schedule['id']}", {"description": "d"}).json(), strict=True)
    fired = post(client, f"/schedules/{schedule['id']}/trigger").json()
    ScheduleRunResponse.model_validate(fired, strict=True)
    PaginatedResponse[ScheduleRunResponse].model_validate(client.get(f"/schedules/{schedule['id']}/runs", **alice()).json())
    ScheduleRunResponse.model_validate(client.get(f"/schedules/{schedule['id']}/runs/{fired['id']}", **alice()).json(), strict=True)
    ScheduleStateResponse.model_validate(post(client, f"/schedules/{schedule['id']}/disable").json(), strict=True)
    ScheduleStateResponse.model_validate(post(client, f"/schedules/{schedule['id']}/enable").json(), strict=True)
