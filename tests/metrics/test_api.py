"""GET /metrics, POST /metrics/refresh and GET /metrics/refresh/status in AgentOS's shapes:
scopes, two users kept apart, the shared bucket for admins, errors as {"detail": ...}."""
from __future__ import annotations

from datetime import datetime, timezone as dt_timezone

import pytest

from jobs.models import Job
from metrics.models import MetricsAggregate
from tests.agents.conftest import wait_for
from tests.factories import make_session
from tests.security.conftest import auth, token

from .conftest import seed_run

pytestmark = pytest.mark.django_db

UTC = dt_timezone.utc
AT = datetime(2026, 11, 30, 9, 42, 53, tzinfo=UTC)
ADMIN = ["agent_os:admin"]
READ_WRITE = ["metrics:read", "metrics:write"]


def as_(user: str, scopes: list[str] | None = None) -> dict[str, str]:
    return auth(token(user, READ_WRITE if scopes is None else scopes))


@pytest.fixture
def usage(jwt_server):
    seed_run("alice", AT, tokens=(20, 10), duration=0.27)
    seed_run("bob", AT, tokens=(7, 3), model=("claude-sonnet", "Anthropic"))
    seed_run(None, AT, session=make_session(None))
    return jwt_server


def refreshed(client, user: str = "root", scopes: list[str] | None = ADMIN) -> list[dict]:
    response = client.post("/metrics/refresh", **as_(user, scopes))
    assert response.status_code == 200, response.content
    return response.json()


def test_a_sync_refresh_returns_the_rows_it_wrote_and_get_reads_them_in_agentos_shape(client, usage):
    written = refreshed(client, "alice", READ_WRITE)
    row = MetricsAggregate.all_users.get(user_id="alice", aggregation_period="daily")
    expected = {
        "id": "2026-11-30_daily_alice", "agent_runs_count": 1, "agent_sessions_count": 1, "team_runs_count": 0, "team_sessions_count": 0,
        "workflow_runs_count": 0, "workflow_sessions_count": 0, "users_count": 1,
        "token_metrics": {"input_tokens": 20, "output_tokens": 10, "total_tokens": 30, "audio_input_tokens": 0, "audio_output_tokens": 0,
                          "audio_total_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0, "reasoning_tokens": 0},
        "model_metrics": [{"model_id": "gpt-4o", "model_provider": "OpenAI", "count": 1, "input_tokens": 20, "output_tokens": 10, "total_tokens": 30}],
        "date": "2026-11-30T00:00:00Z",
        "created_at": row.created_at.strftime("%Y-%m-%dT%H:%M:%SZ"), "updated_at": row.updated_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "user_id": "alice", "aggregation_period": "daily", "errors_count": 0, "cost": None, "duration_p50": 0.27, "duration_p95": 0.27,
        "component_metrics": [{"component_type": "agent", "component_id": "assistant", "runs": 1, "errors": 0, "total_tokens": 30}],
        "time_zone": "UTC", "completed": True,
    }
    assert written == [expected]
    body = client.get("/metrics", {"starting_date": "2026-11-01", "ending_date": "2026-11-30"}, **as_("alice")).json()
    assert body == {"metrics": [expected], "updated_at": expected["updated_at"]}


def test_two_users_are_kept_apart_and_user_id_is_ignored_for_them(client, usage):
    refreshed(client)  # an operator's refresh: everyone's rows
    for user in ("alice", "bob"):
        for query in ({}, {"user_id": "alice" if user == "bob" else "bob"}):
            listed = client.get("/metrics", query, **as_(user)).json()["metrics"]
            assert [(item["user_id"], item["agent_runs_count"]) for item in listed] == [(user, 1)]


def test_an_admin_sees_every_user_and_the_shared_bucket_as_user_id_null(client, usage):
    refreshed(client)
    listed = client.get("/metrics", **as_("root", ADMIN)).json()["metrics"]
    assert [(item["id"], item["user_id"], item["users_count"]) for item in listed] == [
        ("2026-11-30_daily", None, 0), ("2026-11-30_daily_alice", "alice", 1), ("2026-11-30_daily_bob", "bob", 1),
    ]
    only_bob = client.get("/metrics", {"user_id": "bob"}, **as_("root", ADMIN)).json()["metrics"]
    assert [item["user_id"] for item in only_bob] == ["bob"]
    monthly = client.get("/metrics", {"aggregation_period": "monthly"}, **as_("root", ADMIN)).json()["metrics"]
    assert [(item["id"], item["date"]) for item in monthly] == [
        ("2026-11-01_monthly", "2026-11-01T00:00:00Z"), ("2026-11-01_monthly_alice", "2026-11-01T00:00:00Z"), ("2026-11-01_monthly_bob", "2026-11-01T00:00:00Z"),
    ]


def test_a_users_refresh_leaves_other_users_rows_alone(client, usage):
    refreshed(client, "bob", READ_WRITE)
    assert set(MetricsAggregate.all_users.values_list("user_id", flat=True)) == {"bob"}


def test_scopes_metrics_read_and_metrics_write(client, usage):
    no_scope = client.get("/metrics", **as_("alice", ["sessions:read"]))
    assert (no_scope.status_code, no_scope.json()) == (403, {"detail": "Insufficient permissions. Required scope(s): metrics:read"})
    read_only = client.post("/metrics/refresh", **as_("alice", ["metrics:read"]))
    assert (read_only.status_code, read_only.json()) == (403, {"detail": "Insufficient permissions. Required scope(s): metrics:write"})
    assert client.get("/metrics/refresh/status", **as_("alice", ["metrics:read"])).status_code == 200
    assert client.get("/metrics").status_code == 401


def test_bad_parameters_are_4xx_in_agentos_error_shape(client, usage):
    bad = client.get("/metrics", {"starting_date": "30-11-2026"}, **as_("alice"))
    assert bad.status_code == 422
    assert bad.json() == {"detail": [{"type": "date_from_datetime_parsing", "loc": ["query", "starting_date"],
                                      "msg": "Input should be a valid date in the format YYYY-MM-DD", "input": "30-11-2026"}]}
    backwards = client.get("/metrics", {"starting_date": "2026-12-01", "ending_date": "2026-11-01"}, **as_("alice"))
    assert (backwards.status_code, backwards.json()) == (400, {"detail": "starting_date must not be after ending_date"})
    unknown_db = client.get("/metrics/refresh/status", {"db_id": "elsewhere"}, **as_("alice"))
    assert (unknown_db.status_code, unknown_db.json()) == (404, {"detail": "No database found with id 'elsewhere'"})
    bad_flag = client.post("/metrics/refresh?background=maybe", **as_("alice"))
    assert bad_flag.status_code == 422 and bad_flag.json()["detail"][0]["loc"] == ["query", "background"]
    period = client.get("/metrics", {"aggregation_period": "weekly"}, **as_("alice"))
    assert period.status_code == 422


def test_the_status_is_idle_until_a_refresh_then_completed(client, usage):
    assert client.get("/metrics/refresh/status", **as_("alice")).json() == {"status": "idle", "started_at": None, "finished_at": None, "error": None}
    refreshed(client, "alice", READ_WRITE)
    status = client.get("/metrics/refresh/status", **as_("alice")).json()
    assert status["status"] == "completed" and status["started_at"] and status["finished_at"] and status["error"] is None
    # bob's status is his own.
    assert client.get("/metrics/refresh/status", **as_("bob")).json()["status"] == "idle"


@pytest.mark.django_db(transaction=True)
def test_a_background_refresh_runs_as_a_job_and_its_status_follows_it(client, usage, worker, settings):
    settings.EMBEDDED_WORKER = True
    started = client.post("/metrics/refresh?background=true", **as_("alice"))
    assert (started.status_code, started.json()) == (202, {"status": "started", "message": "Metrics refresh started in background"})
    again = client.post("/metrics/refresh?background=true", **as_("alice"))
    jobs = list(Job.objects.for_user("alice").filter(job_type="metrics_refresh").order_by("created_at"))
    if len(jobs) == 1:  # the second request came while the first refresh was queued or running
        assert again.json()["status"] in ("already_running", "started")
    else:  # the embedded worker had already finished the first refresh: the second starts another
        assert (len(jobs), again.json()["status"]) == (2, "started"), [job.status for job in jobs]
    worker().start().wake()

    def finished() -> dict | None:
        body = client.get("/metrics/refresh/status", **as_("alice")).json()
        return body if body["status"] in ("completed", "failed") else None

    assert wait_for(finished, timeout=90)["status"] == "completed"
    assert [item["user_id"] for item in client.get("/metrics", **as_("alice")).json()["metrics"]] == ["alice"]
    # The refresh's own status says completed when its work is stored; its job row is settled by
    # the worker a moment after the handler returns.
    done = wait_for(lambda: Job.objects.for_user("alice").filter(job_type="metrics_refresh", status="completed").order_by("created_at").first())
    assert done.progress["days_recomputed"] == 1
