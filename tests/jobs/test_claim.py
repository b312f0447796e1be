"""The claim (jobs.services.claims.job_claim), driven directly: which queued job a worker may take."""
from __future__ import annotations

import pytest

from jobs.models import Job, JobStatus
from jobs.services.claims import job_claim
from jobs.services.jobs import job_settle_fenced, job_submit
from sessions.models import Run, RunStatus

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def no_worker(settings):
    settings.EMBEDDED_WORKER = False  # only these tests claim
    settings.AGENTOS_BACKGROUND_MAX_CONCURRENCY = 10
    settings.AGENTOS_BACKGROUND_MAX_PER_USER = 10


def queue(user: str | None, session_id: str) -> str:
    accepted = job_submit(
        owner_id=user, session=None, session_id=session_id, component_id="assistant",
        payload={}, input={"input_content": "hi"}, stream=False,
    )
    return accepted.job.pk


def finish(job_id: str) -> None:
    job = Job.objects.unscoped("test").get(pk=job_id)
    assert job_settle_fenced(job=job, worker=job.locked_by, run_status=RunStatus.COMPLETED)


def test_the_oldest_ready_job_is_taken_and_its_run_starts() -> None:
    first, second = queue("alice", "s1"), queue("bob", "s2")
    claimed = job_claim(worker="w1", lease_seconds=30)
    assert claimed.pk == first
    assert (claimed.status, claimed.locked_by, claimed.attempt) == (JobStatus.RUNNING, "w1", 1)
    assert claimed.lease_expires_at > claimed.started_at
    assert Run.objects.unscoped("test").get(pk=first).status == RunStatus.RUNNING
    assert Job.objects.unscoped("test").get(pk=second).status == JobStatus.QUEUED


def test_a_session_runs_one_job_at_a_time_in_submission_order() -> None:
    first, second, other = queue("alice", "s1"), queue("alice", "s1"), queue("alice", "s2")
    assert job_claim(worker="w").pk == first
    assert job_claim(worker="w").pk == other  # s1 is busy: its second job waits, s2's goes
    assert job_claim(worker="w") is None
    finish(first)
    assert job_claim(worker="w").pk == second


def test_the_global_cap_and_the_per_user_cap_hold(settings) -> None:
    settings.AGENTOS_BACKGROUND_MAX_CONCURRENCY = 2
    settings.AGENTOS_BACKGROUND_MAX_PER_USER = 1
    alice_1, alice_2, bob, carol = queue("alice", "a1"), queue("alice", "a2"), queue("bob", "b1"), queue("carol", "c1")
    assert [job_claim(worker="w").pk, job_claim(worker="w").pk] == [alice_1, bob]  # alice_2 waits on her cap
    assert job_claim(worker="w") is None  # two run: the global cap
    finish(bob)
    assert job_claim(worker="w").pk == carol  # alice_2 is older, but alice is at her cap
    finish(alice_1)
    assert job_claim(worker="w").pk == alice_2
    assert job_claim(worker="w") is None


def test_jobs_without_a_user_share_one_per_user_cap(settings) -> None:
    settings.AGENTOS_BACKGROUND_MAX_PER_USER = 1
    first, second = queue(None, "n1"), queue(None, "n2")
    assert job_claim(worker="w").pk == first
    assert job_claim(worker="w") is None
    finish(first)
    assert job_claim(worker="w").pk == second


def test_a_capped_users_backlog_never_holds_back_another_user(settings) -> None:
    """However many of one capped user's jobs wait in front, the next user's job is found."""
    settings.AGENTOS_BACKGROUND_MAX_PER_USER = 1
    assert job_claim(worker="w") is None
    busy = queue("alice", "a0")
    assert job_claim(worker="w").pk == busy
    for n in range(60):
        queue("alice", f"a{n + 1}")
    bobs = queue("bob", "b1")
    assert job_claim(worker="w").pk == bobs


def test_accepting_and_claiming_cost_a_fixed_handful_of_statements() -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    queue("bob", "b1")
    with CaptureQueriesContext(connection) as new_session:
        queue("alice", "s1")
    with CaptureQueriesContext(connection) as known_session:
        queue("alice", "s1")
    with CaptureQueriesContext(connection) as claim:
        job_claim(worker="w")

    def statements(captured) -> list[str]:
        return [query["sql"].split(None, 1)[0].upper() for query in captured.captured_queries]

    # Accepting: the queue lock, the depth and per-user share check (one statement), the session,
    # the session's active jobs, then the job, the run index and the run. A new session is first
    # counted against the owner's MAX_SESSIONS_PER_USER, then inserted ON CONFLICT DO NOTHING (a
    # concurrent request may create it first), so it needs no savepoint. SQLite's lock is its
    # BEGIN IMMEDIATE; PostgreSQL's an advisory lock (a SELECT). In a session with runs, the run
    # then follows the conversation's active branch (one UPDATE, nothing read back).
    lock = ["SELECT"] if connection.vendor == "postgresql" else []
    assert statements(new_session) == [
        "BEGIN", *lock, "SELECT", "SELECT", "SELECT", "INSERT", "SELECT", "INSERT", "UPDATE", "INSERT", "COMMIT",
    ]
    assert statements(known_session) == ["BEGIN", *lock, "SELECT", "SELECT", "SELECT", "INSERT", "UPDATE", "INSERT", "UPDATE", "COMMIT"]
    # Claiming: is anything ready (outside the lock), the lock, the claim itself, the run's status
    # (on PostgreSQL in the claim's statement, and sent with the lock in one round trip).
    claiming = ["SELECT", "WITH"] if connection.vendor == "postgresql" else ["UPDATE", "UPDATE"]
    assert statements(claim) == ["SELECT", "BEGIN", *claiming, "COMMIT"]
    # A worker working through a backlog claims the next job without looking first.
    with CaptureQueriesContext(connection) as next_claim:
        assert job_claim(worker="w2", probe=False) is not None
    assert statements(next_claim) == ["BEGIN", *claiming, "COMMIT"]
    with CaptureQueriesContext(connection) as empty:
        assert job_claim(worker="w2", probe=False) is None
    # Nothing to claim: no run to start (on PostgreSQL the same one statement).
    nothing = claiming if connection.vendor == "postgresql" else claiming[:1]
    assert statements(empty) == ["BEGIN", *nothing, "COMMIT"]


def test_settling_is_fenced_by_the_attempt_that_holds_the_job() -> None:
    job_id = queue("alice", "s1")
    claimed = job_claim(worker="w1")
    stale = Job.objects.unscoped("test").get(pk=job_id)
    assert not job_settle_fenced(job=claimed, worker="w2", run_status=RunStatus.COMPLETED)
    stale.attempt = claimed.attempt + 1  # the reaper gave the job to a later attempt
    assert not job_settle_fenced(job=stale, worker="w1", run_status=RunStatus.COMPLETED)
    assert Job.objects.unscoped("test").get(pk=job_id).status == JobStatus.RUNNING
    assert job_settle_fenced(job=claimed, worker="w1", run_status=RunStatus.ERROR, error="boom " * 1000)
    settled = Job.objects.unscoped("test").get(pk=job_id)
    assert (settled.status, len(settled.error), settled.lease_expires_at) == (JobStatus.FAILED, 2000, None)
    assert settled.completed_at is not None
    # Settled: no attempt holds it any more.
    assert not job_settle_fenced(job=claimed, worker="w1", run_status=RunStatus.COMPLETED)


@pytest.mark.postgres_only
def test_a_prepared_claim_survives_a_migration_that_adds_a_column() -> None:
    from django.db import connection

    for index in range(6):  # psycopg prepares a statement on its fifth run on a connection
        finish(_claim_one(f"p{index}"))
    queue("alice", "after")
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE agno_jobs ADD COLUMN added_by_a_later_release integer")
    try:
        claimed = job_claim(worker="w", probe=False)  # not "cached plan must not change result type"
        assert claimed is not None and claimed.session_id == "after"
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE agno_jobs DROP COLUMN added_by_a_later_release")


def _claim_one(session_id: str) -> str:
    queue("alice", session_id)
    claimed = job_claim(worker="w", probe=False)
    assert claimed is not None and claimed.session_id == session_id
    return claimed.pk
