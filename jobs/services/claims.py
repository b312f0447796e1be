"""The claim: a worker takes the oldest queued job that may start now, under the queue's caps
and its sessions' order, in one statement under the queue lock."""
from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from core.statements import Update, instances, pipelined
from core.tenancy import unscoped
from sessions.models import Run, RunStatus

from ..models import Job, JobStatus
from ..selectors import queue_jobs
from .jobs import queue_lock


# The claim, as one statement: the oldest ready job that may start now, taken. A job may start
# when fewer than the global cap run, fewer than the per-user cap of its user run, nothing runs in
# its session, and no older ready job of its session waits before it (one run at a time per
# session, in submission order). Jobs of one group do not wait for each other, only for the rest
# of their session; a job outside any session waits for none. A paused run does not hold its
# session: it waits for a decision that may take days, and the conversation goes on meanwhile;
# once decided, it queues behind what runs in the session then.
# A workflow's parallel branch (``parent_job_id`` set) is exempt from the session rule: its parent
# holds the session's turn and waits for it (a branch queued behind the session's next run would
# never start). Under the caps it takes its parent's place: the parent waits holding no thread, and
# counting it would deadlock a user at the cap. Nor does a workflow run wait for its own branches
# (its second attempt, after its worker died, goes on waiting for them). The outer global check is the cheap common case;
# the inner one is exact. Under the queue lock, so the caps hold across workers.
# {now} is the clock; {lease_until} the lease's end.
_CLAIM_JOB = """
UPDATE agno_jobs
SET status = %(running)s, locked_by = %(worker)s, lease_expires_at = {lease_until},
    attempt = attempt + 1, started_at = {now}, updated_at = {now}
WHERE status = %(queued)s
  AND ((SELECT COUNT(*) FROM agno_jobs g WHERE g.status = %(running)s) < %(global_cap)s
       OR EXISTS (SELECT 1 FROM agno_jobs p WHERE p.status = %(queued)s AND p.parent_job_id <> '' AND p.available_at <= {now}))
  AND id = (
    SELECT j.id FROM agno_jobs j
    WHERE j.status = %(queued)s AND j.available_at <= {now}
      AND (j.session_id = '' OR j.parent_job_id <> '' OR NOT EXISTS (
        SELECT 1 FROM agno_jobs b WHERE b.session_id = j.session_id AND b.status = %(running)s AND b.parent_job_id <> j.id
          AND (j.group_id = '' OR b.group_id <> j.group_id)))
      AND (j.session_id = '' OR j.parent_job_id <> '' OR NOT EXISTS (
        SELECT 1 FROM agno_jobs e
        WHERE e.session_id = j.session_id AND e.status = %(queued)s AND e.available_at <= {now}
          AND (j.group_id = '' OR e.group_id <> j.group_id)
          AND (e.created_at < j.created_at OR (e.created_at = j.created_at AND e.id < j.id))))
      AND (SELECT COUNT(*) FROM agno_jobs c WHERE c.status = %(running)s AND c.id <> j.parent_job_id) < %(global_cap)s
      AND (
        SELECT COUNT(*) FROM agno_jobs u
        WHERE u.status = %(running)s AND (u.user_id = j.user_id OR (u.user_id IS NULL AND j.user_id IS NULL))
          AND u.id <> j.parent_job_id
      ) < %(user_cap)s
    ORDER BY j.created_at, j.id
    LIMIT 1)
RETURNING {columns}
"""
# The job's columns by name, never *: a prepared statement's result must keep its shape when a
# later migration adds a column (PostgreSQL: "cached plan must not change result type").
_JOB_COLUMNS = ", ".join(field.column for field in Job._meta.concrete_fields)
# SQLite: the clock is read once the transaction holds the write lock (BEGIN IMMEDIATE), so a
# job that finished while this claim waited cannot appear to overlap the one taking its place.
_CLAIM = _CLAIM_JOB.format(now="%(now)s", lease_until="%(lease_until)s", columns=_JOB_COLUMNS)
# PostgreSQL: the claim and its run's start in one statement, sent with the queue lock without
# waiting for it (pipelined). The clock is the server's, read as the statement runs: after the
# lock is granted, and after every commit the statement's snapshot sees.
_CLAIM_AND_START = """
WITH clock AS MATERIALIZED (SELECT clock_timestamp() AS now),
claimed AS ({claim}),
started AS (
  UPDATE agno_runs SET status = %(run_running)s, updated_at = claimed.started_at, started_at = claimed.started_at
  FROM claimed WHERE agno_runs.run_id = claimed.id AND agno_runs.status IN (%(run_pending)s, %(run_running)s))
SELECT * FROM claimed
""".format(claim=_CLAIM_JOB.format(
    now="(SELECT now FROM clock)",
    lease_until="(SELECT now FROM clock) + make_interval(secs => %(lease_seconds)s)",
    columns=_JOB_COLUMNS,
).strip())


def job_claim(*, worker: str, lease_seconds: int | None = None, probe: bool = True) -> Job | None:
    """Claim the oldest job that may start now, or None. Caps and session order hold.

    ``probe``: first look, without the queue lock, whether anything is ready. Nothing is the usual
    answer to the extra drain tasks a burst of submissions sends; a worker that has just finished
    a job of a backlog skips the look (``probe=False``): there is most likely more.
    """
    lease = lease_seconds or settings.AGENTOS_BACKGROUND_LEASE_SECONDS
    if probe and not queue_jobs().filter(status=JobStatus.QUEUED, available_at__lte=timezone.now()).exists():
        return None
    params = {
        "queued": JobStatus.QUEUED, "running": JobStatus.RUNNING, "worker": worker,
        "global_cap": settings.AGENTOS_BACKGROUND_MAX_CONCURRENCY, "user_cap": settings.AGENTOS_BACKGROUND_MAX_PER_USER,
    }
    # Every user's jobs: the queue spans them all (the statement names the rows it takes).
    with transaction.atomic(), unscoped("the queue's claim: the oldest ready job of any user, under the caps"):
        if connection.vendor == "postgresql":
            # BEGIN, the lock and the claim in one round trip, the COMMIT in another.
            params.update(lease_seconds=lease, run_running=RunStatus.RUNNING, run_pending=RunStatus.PENDING)
            with connection.cursor() as cursor:
                with pipelined():
                    queue_lock()
                    cursor.execute(_CLAIM_AND_START, params)
                return next(iter(instances(Job, cursor)), None)  # read once the block has its answers
        queue_lock()
        now = timezone.now()
        moment = connection.ops.adapt_datetimefield_value  # as the ORM writes them (SQLite: text)
        params.update(now=moment(now), lease_until=moment(now + timedelta(seconds=lease)))
        with connection.cursor() as cursor:
            cursor.execute(_CLAIM, params)
            claimed = next(iter(instances(Job, cursor)), None)
        if claimed is not None:
            # Its run starts (a retried job's run may still say RUNNING from the lost attempt).
            _RUN_STARTED.row(claimed.pk, [RunStatus.RUNNING, now, now], [claimed.user_id, (RunStatus.PENDING, RunStatus.RUNNING)])
    return claimed


_RUN_STARTED = Update(Run, ["status", "updated_at", "started_at"], where=["user_id", "status"])
