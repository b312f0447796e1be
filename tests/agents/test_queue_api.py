"""/queue: an operator's view of every user's jobs, and requeue through the console's retry
(jobs.services.jobs.job_requeue). Only an admin, or the open server without RBAC, gets in."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.models import Job, JobStatus
from sessions.models import Run
from tests.factories import make_cancel_intent, make_job, make_run, make_session
from tests.security.conftest import USER_SCOPES, auth, jwt_server, token  # noqa: F401 (jwt_server: a fixture)

pytestmark = pytest.mark.django_db

ADMIN = auth(token("root", ["agent_os:admin"]))
LONG_AGO = timezone.now() - timedelta(hours=1)


def jobs_of(response) -> list[str]:
    return [job["id"] for job in response.json()["data"]]


@pytest.fixture
def jobs(db):
    """Alice's failed job (with its run), bob's queued one, and alice's cancelled one."""
    alice = make_session("alice", session_id="alice-s")
    failed = make_job("alice", id="alice-failed", session=alice, status=JobStatus.FAILED, attempt=1, error="worker lost", completed_at=LONG_AGO, created_at=LONG_AGO)
    make_run("alice", session=alice, run_id="alice-failed", status="ERROR")
    make_job("bob", id="bob-queued", status=JobStatus.QUEUED, created_at=LONG_AGO + timedelta(minutes=1))
    make_job("alice", id="alice-cancelled", session=alice, status=JobStatus.CANCELLED, attempt=1, completed_at=LONG_AGO, created_at=LONG_AGO + timedelta(minutes=2))
    return failed


class TestAnAdmin:
    def test_lists_every_users_jobs_newest_first_in_agentos_shape(self, client, jwt_server, jobs) -> None:
        response = client.get("/queue/jobs", **ADMIN)
        assert jobs_of(response) == ["alice-cancelled", "bob-queued", "alice-failed"]
        failed = response.json()["data"][2]
        assert failed == {
            "id": "alice-failed", "component_type": "agent", "component_id": "assistant", "session_id": "alice-s", "job_type": "run",
            "user_id": "alice", "payload": {"message": "hi"}, "status": "failed", "attempt": 1, "max_attempts": 1, "idempotency_key": None,
            "available_at": failed["available_at"], "locked_by": None, "locked_at": None, "error": "worker lost",
            "created_at": int(LONG_AGO.timestamp()), "updated_at": failed["updated_at"], "completed_at": int(LONG_AGO.timestamp()),
        }
        assert response.json()["meta"] == {"page": 1, "limit": 20, "total_pages": 1, "total_count": 3, "search_time_ms": 0.0}

    def test_filters_sorts_and_pages(self, client, jwt_server, jobs) -> None:
        assert jobs_of(client.get("/queue/jobs?status=failed&status=cancelled", **ADMIN)) == ["alice-cancelled", "alice-failed"]
        assert jobs_of(client.get("/queue/jobs?session_id=alice-s", **ADMIN)) == ["alice-cancelled", "alice-failed"]
        assert jobs_of(client.get("/queue/jobs?user_id=bob", **ADMIN)) == ["bob-queued"]
        assert jobs_of(client.get("/queue/jobs?sort_by=created_at&sort_order=asc&limit=2&page=1", **ADMIN)) == ["alice-failed", "bob-queued"]
        assert jobs_of(client.get("/queue/jobs?sort_by=nonsense&sort_order=asc", **ADMIN)) == ["alice-failed", "bob-queued", "alice-cancelled"]

    def test_bad_input_is_a_4xx_in_agentos_shape(self, client, jwt_server, jobs) -> None:
        bogus = client.get("/queue/jobs?status=bogus", **ADMIN)
        assert (bogus.status_code, bogus.json()) == (400, {"detail": "Invalid status 'bogus'; expected one of (queued, running, paused, completed, failed, cancelled)"})
        assert client.get("/queue/jobs?limit=1001", **ADMIN).status_code == 422
        assert client.get("/queue/jobs?sort_order=up", **ADMIN).status_code == 422
        assert client.get("/queue/jobs?limit=5&page=0", **ADMIN).status_code == 422
        missing = client.get("/queue/jobs/nope", **ADMIN)
        assert (missing.status_code, missing.json()) == (404, {"detail": "Job queue job nope not found"})
        assert client.post("/queue/jobs/nope/requeue", **ADMIN).status_code == 404
        assert client.post("/queue/jobs/alice-failed/requeue?force=maybe", **ADMIN).status_code == 422

    def test_reads_one_job(self, client, jwt_server, jobs) -> None:
        assert client.get("/queue/jobs/bob-queued", **ADMIN).json()["user_id"] == "bob"

    def test_requeues_a_failed_job_and_its_run_through_the_retry_service(self, client, jwt_server, jobs) -> None:
        response = client.post("/queue/jobs/alice-failed/requeue", **ADMIN)
        body = response.json()
        assert (response.status_code, body["status"], body["attempt"], body["max_attempts"], body["error"], body["completed_at"]) == (200, "queued", 1, 2, None, None)
        assert Run.objects.for_user("alice").get(pk="alice-failed").status == "PENDING"
        again = client.post("/queue/jobs/alice-failed/requeue", **ADMIN)
        assert (again.status_code, again.json()) == (400, {"detail": "Job alice-failed not found or not in a requeueable state"})

    def test_a_job_failed_within_the_lease_needs_force(self, client, jwt_server, jobs) -> None:
        Job.objects.for_user("alice").filter(pk="alice-failed").update(completed_at=timezone.now())
        refused = client.post("/queue/jobs/alice-failed/requeue", **ADMIN)
        assert refused.status_code == 409 and refused.json()["detail"].endswith("its worker may still be executing: requeue with force=true")
        assert Job.objects.for_user("alice").get(pk="alice-failed").status == JobStatus.FAILED
        assert client.post("/queue/jobs/alice-failed/requeue?force=true", **ADMIN).json()["status"] == "queued"

    def test_a_cancel_that_still_stands_needs_clear_cancellation(self, client, jwt_server, jobs) -> None:
        make_cancel_intent("alice", run_id="alice-cancelled")
        refused = client.post("/queue/jobs/alice-cancelled/requeue", **ADMIN)
        assert (refused.status_code, refused.json()) == (409, {"detail": "Job alice-cancelled was cancelled and its cancellation still stands: requeue with clear_cancellation=true to override it"})
        assert client.post("/queue/jobs/alice-cancelled/requeue?clear_cancellation=true", **ADMIN).json()["status"] == "queued"
        from jobs.models import CancelIntent

        assert not CancelIntent.objects.unscoped("test").filter(run_id="alice-cancelled").exists()

    def test_stats_count_jobs_by_status(self, client, jwt_server, jobs) -> None:
        body = client.get("/queue/stats", **ADMIN).json()
        assert body["counts"] == {"failed": 1, "queued": 1, "cancelled": 1}
        assert body["oldest_queued_age_seconds"] >= 3540


@pytest.mark.parametrize(("method", "path"), [
    ("get", "/queue/jobs"), ("get", "/queue/jobs/alice-failed"), ("post", "/queue/jobs/alice-failed/requeue"), ("get", "/queue/stats"),
])
def test_anyone_but_an_admin_is_refused_whatever_their_scopes(client, jwt_server, jobs, method: str, path: str) -> None:
    for holder in (token("alice"), token("alice", USER_SCOPES + ["components:read", "registry:read"])):
        response = getattr(client, method)(path, **auth(holder))
        assert (response.status_code, response.json()) == (403, {"detail": "Job queue operations require an admin scope"})
    assert getattr(client, method)(path).status_code == 401
    assert Job.objects.for_user("alice").get(pk="alice-failed").status == JobStatus.FAILED


def test_the_open_server_has_no_rbac_and_its_guests_are_refused(client, settings, jobs) -> None:
    assert jobs_of(client.get("/queue/jobs")) == ["alice-cancelled", "bob-queued", "alice-failed"]
    settings.ANONYMOUS_ACCESS = "guests"
    response = client.get("/queue/stats")
    assert (response.status_code, response.json()) == (403, {"detail": "Job queue operations require an admin scope"})


def test_a_browser_user_is_refused(client, jobs, django_user_model) -> None:
    user = django_user_model.objects.create_user("carol", password="pw-123456789")
    client.force_login(user)
    assert client.get("/queue/jobs").status_code == 403
