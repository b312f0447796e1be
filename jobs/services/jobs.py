"""The durable job queue: accept, heartbeat, finish, cancel, continue, requeue (the claim is
``claims.py``, the reaper ``reaper.py``, the reads ``jobs.selectors``).

The database is the truth. Accepting a background run commits the job row and the run's
PENDING row together; workers (Celery or the embedded one) are told on commit. A claim is a
conditional update under the queue lock, so the global cap, the per-user cap and "one run at a
time per session" hold however many workers race. Terminal writes are fenced on
(locked_by, attempt): a worker that lost its lease cannot overwrite its successor's result.
"""
from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Q
from django.utils import timezone

from core.statements import Insert, Update
from sessions.models import Run, RunOrigin, RunStatus, Session
from sessions.services.runs import run_create, run_transition, session_get_or_create

from ..models import JOB_TO_RUN_STATUS, Job, JobStatus
from ..selectors import queue_jobs
from ..registry import job_hooks_call, job_type_execute, job_type_handler, job_type_registered
from .cancellation import cancel_clear, cancel_request
from .executor import drive_here, in_run_thread

logger = logging.getLogger("agno_site.jobs")

ACTIVE = (JobStatus.QUEUED, JobStatus.RUNNING)
STRATEGIES = ("enqueue", "reject", "interrupt")
IDEMPOTENCY_KEY_MAX = 512


class QueueFull(Exception):
    def __init__(self, detail: str = "Job queue is full") -> None:
        super().__init__(detail)


class SessionBusy(Exception):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"A run is already in progress in session {session_id}; retry later or use session_strategy=enqueue or interrupt")


class IdempotencyConflict(Exception):
    pass


class DuplicateJob(Exception):
    """A job with this idempotency key was accepted already (``job``): nothing new was queued."""

    def __init__(self, job: Job) -> None:
        super().__init__(f"job {job.pk} was accepted under this idempotency key already")
        self.job = job


@dataclass(frozen=True)
class Accepted:
    job: Job
    run_status: str
    duplicate: bool


def worker_name() -> str:
    import os
    import socket

    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


# The queue lock's key: a transaction-scoped advisory lock, the same number in every process.
QUEUE_LOCK_KEY = 0x61676E6F2D6A6F62  # "agno-job"


def queue_lock() -> None:
    """Serialize claims and admissions until the transaction ends.

    PostgreSQL: a transaction-scoped advisory lock (no row to read or keep; sent without waiting
    for its answer when pipelined, and the next statement's snapshot is still taken after it is
    granted). SQLite: nothing to do, every transaction begins IMMEDIATE and so holds the database's
    one write lock already.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [QUEUE_LOCK_KEY])


def _existing_for_key(scope: str, key: str) -> Job | None:
    return queue_jobs().filter(idempotency_scope=scope, idempotency_key=key).first()


def _check_duplicate(job: Job, *, component_id: str, stream: bool) -> None:
    if job.component_id != component_id:
        raise IdempotencyConflict("Idempotency-Key was already used by a different component; reuse a key only to retry the identical submission")
    if job.stream != stream and not job.stream:
        raise IdempotencyConflict(f"Idempotency-Key was used by a non-streaming submission; poll run {job.id} instead of attaching a stream")
    if job.stream != stream:
        raise IdempotencyConflict(f"Idempotency-Key was used by a streaming submission of run {job.id}; resume it instead")


def job_submit(
    *,
    owner_id: str | None,
    session: Session | None,
    session_id: str,
    component_id: str,
    payload: dict[str, Any],
    input: dict[str, Any],
    stream: bool,
    component_type: str = "agent",
    idempotency_key: str | None = None,
    strategy: str = "enqueue",
    run_id: str | None = None,
    job_type: str = "run",
    group_id: str = "",
    origin: str = RunOrigin.API,
    redoes: Run | None = None,
) -> Accepted:
    """Accept a background run: the job and the PENDING run row (and a new session), in one transaction.
    ``origin``: where the run comes from; ``redoes``: the run it answers again in its place (an
    edit, a regeneration), see sessions.services.runs.run_create."""
    now = timezone.now()
    scope = owner_id or ""
    key = idempotency_key or None
    with transaction.atomic():
        queue_lock()
        if key is not None:
            existing = _existing_for_key(scope, key)
            if existing is not None and existing.created_at < now - timedelta(seconds=settings.AGENTOS_IDEMPOTENCY_TTL_SECONDS):
                queue_jobs().filter(pk=existing.pk).update(idempotency_key=None)  # expired: the key is free again
                existing = None
            if existing is not None:
                _check_duplicate(existing, component_id=component_id, stream=stream)
                status = Run.objects.unscoped("the job's own run").filter(pk=existing.pk).values_list("status", flat=True).first()
                return Accepted(existing, status or JOB_TO_RUN_STATUS[existing.status], duplicate=True)
        _check_queue_room(owner_id)
        if session is None:
            session, _created = session_get_or_create(
                user=owner_id, owner_id=owner_id, session_id=session_id, component_id=component_id, session_type=component_type,
                origin=origin,
            )
        busy = list(queue_jobs().filter(session_id=session.pk, status__in=ACTIVE).values_list("id", "status"))
        if busy and strategy == "reject":
            raise SessionBusy(session.pk)
        if busy and strategy == "interrupt":
            for job_id, status in busy:
                if status == JobStatus.RUNNING:
                    cancel_request(run_id=job_id, user_id=owner_id)  # its worker stops at the next step
                else:
                    job_cancel(job_id=job_id, reason="interrupted by a newer run in the session")
        job = Job(
            id=run_id or str(uuid.uuid4()),
            job_type=job_type,
            user_id=owner_id,
            component_id=component_id,
            component_type=component_type,
            session_id=session.pk,
            group_id=group_id,
            payload=payload,
            stream=stream,
            max_attempts=settings.AGENTOS_BACKGROUND_MAX_ATTEMPTS,
            idempotency_scope=scope,
            idempotency_key=key,
            created_at=now,
            updated_at=now,
            available_at=now,
        )
        if key is None and run_id is None:
            _JOB_INSERT.instance(job)  # a fresh uuid: nothing to collide with, no savepoint needed
        else:
            try:
                with transaction.atomic():
                    job.save(force_insert=True)
            except IntegrityError:
                raise IdempotencyConflict("Idempotency-Key is being used by a concurrent submission; retry") from None
        run_create(
            session=session, run_id=job.id, run_type=component_type, component_id=component_id, input=input, status=RunStatus.PENDING, created_at=now,
            origin=origin, redoes=redoes,
        )
        transaction.on_commit(dispatch)
    return Accepted(job, RunStatus.PENDING, duplicate=False)


_JOB_INSERT = Insert(Job)


def job_enqueue(
    *, job_type: str, owner_id: str | None, payload: dict[str, Any], session_id: str = "", group_id: str = "", component_id: str = "",
    max_attempts: int | None = None, idempotency_key: str | None = None,
) -> Job:
    """Accept a job that is not a run of a component (knowledge ingestion, a metrics refresh): no
    run row, and a session only if it has one. Its type's registered execute (jobs.registry) executes it; the
    queue's caps, lease, reaper and the owner's queue share hold for it as for runs.

    ``idempotency_key``: at most one job of this type and owner is ever accepted under it
    (DuplicateJob otherwise, checked under the queue lock, so racing processes accept one). Its
    scope is the job type's, apart from run submissions' keys (a client's Idempotency-Key)."""
    if not job_type_registered(job_type):
        raise ValueError(f"no handler is registered for jobs of type {job_type!r}")
    now = timezone.now()
    scope = f"{job_type}/{owner_id or ''}" if idempotency_key else owner_id or ""
    with transaction.atomic():
        queue_lock()
        if idempotency_key:
            existing = _existing_for_key(scope, idempotency_key)
            if existing is not None:
                raise DuplicateJob(existing)
        _check_queue_room(owner_id)
        job = Job(
            id=str(uuid.uuid4()), job_type=job_type, user_id=owner_id, component_id=component_id, session_id=session_id,
            group_id=group_id, payload=payload, max_attempts=max_attempts or settings.AGENTOS_BACKGROUND_MAX_ATTEMPTS,
            idempotency_scope=scope, idempotency_key=idempotency_key or None, created_at=now, updated_at=now, available_at=now,
        )
        _JOB_INSERT.instance(job)
        transaction.on_commit(dispatch)
    return job


# ---- execution ---------------------------------------------------------------------------------


async def job_execute(job: Job, worker: str) -> str:
    """Execute a claimed job with its type's registered execute (jobs.registry). A type nothing
    registered (a job queued by a newer release, say, or by an app since removed) fails visibly,
    with the reason recorded on the job, instead of being retried for ever."""
    execute = job_type_execute(job.job_type)
    if execute is None:
        return await in_run_thread(_job_fail_unregistered, job, worker)
    return await execute(job, worker)


def job_run(job: Job, worker: str) -> str:
    """``job_execute`` for a caller without an event loop (the shell, a test, a benchmark): the
    one async path, run to its end by the sync facade (``drive_here``: its database phases in the
    caller's thread and transaction, as for an inline run). A type with a sync body (``job_handler``)
    runs it here, in the caller's thread and transaction, where its execute would hand the same
    body to a run thread."""
    handler = job_type_handler(job.job_type)
    if handler is not None:
        return handler(job, worker)
    return drive_here(job_execute(job, worker))


def _job_fail_unregistered(job: Job, worker: str) -> str:
    error = f"No handler for jobs of type {job.job_type!r} in this worker (is it running an older release?)"
    logger.error("job %s: %s", job.pk, error)
    with transaction.atomic():
        if job_settle_fenced(job=job, worker=worker, run_status=RunStatus.ERROR, error=error):
            job_hooks_call("ended", job, status=RunStatus.ERROR)
    return RunStatus.ERROR


def job_ended(*, job: Job, status: str) -> None:
    """A job's execute wrote its end (``job_settle_fenced``, in this transaction): the observers
    of its type follow (a schedule run that a continued run had paused, say)."""
    job_hooks_call("ended", job, status=status)


def job_progress(*, job: Job, worker: str, **progress: Any) -> bool:
    """Record how far a running job has got (merged into ``Job.progress``); fenced like its end:
    False, and nothing written, once this worker no longer holds it."""
    merged = {**(job.progress or {}), **progress}
    changed = queue_jobs().filter(pk=job.pk, status=JobStatus.RUNNING, locked_by=worker, attempt=job.attempt).update(progress=merged, updated_at=timezone.now())
    if changed:
        job.progress = merged
    return bool(changed)


def _check_queue_room(owner_id: str | None) -> None:
    """Room for one more queued job of ``owner_id``: the user's share first, then the whole queue.

    The share keeps one user's backlog from filling the queue for everyone (every other user's
    submission would get 429). Under the queue lock, so concurrent submissions cannot both take
    the last place. Jobs without an owner (an open server's anonymous runs) share one share.
    """
    share, depth = settings.AGENTOS_BACKGROUND_MAX_QUEUE_PER_USER, settings.AGENTOS_BACKGROUND_MAX_QUEUE_DEPTH
    if not (share or depth):
        return
    # Both counts in one statement (the depth scan reads every queued job already).
    counts = queue_jobs().filter(status=JobStatus.QUEUED).aggregate(total=Count("pk"), mine=Count("pk", filter=Q(user_id=owner_id)))
    if share and counts["mine"] >= share:
        raise QueueFull(f"Job queue share is full for this user: at most {share} queued jobs per user (AGENTOS_BACKGROUND_MAX_QUEUE_PER_USER)")
    if depth and counts["total"] >= depth:
        raise QueueFull()


def dispatch(count: int = 1) -> None:
    """Tell the workers there is work for ``count`` of them (Celery when a broker is configured,
    else the embedded worker): one drain task each, so a backlog spreads over every free worker."""
    if count < 1:
        return
    if settings.REDIS_URL:
        from ..tasks import drain_queue

        # A drain task not taken within a few reaper passes is dropped: by then the reaper has
        # sent fresh ones for whatever could start, and stale ones would pile up in the broker.
        expires = 3 * settings.AGENTOS_REAPER_INTERVAL_SECONDS
        try:
            for _ in range(count):
                drain_queue.apply_async(expires=expires)
        except Exception:  # the broker is down: the job is committed; beat's reaper re-dispatches
            logger.warning("could not reach the broker; queued jobs wait for the next reaper pass", exc_info=True)
    else:
        from ..worker import embedded_worker

        embedded_worker().wake()


def job_heartbeat(*, job_id: str, worker: str, attempt: int) -> bool:
    """Extend the lease; False when this worker no longer holds the job (stop working on it)."""
    now = timezone.now()
    return bool(
        queue_jobs()
        .filter(pk=job_id, status=JobStatus.RUNNING, locked_by=worker, attempt=attempt)
        .update(lease_expires_at=now + timedelta(seconds=settings.AGENTOS_BACKGROUND_LEASE_SECONDS), updated_at=now)
    )


def job_fence(job_id: str, worker: str, attempt: int):
    """The job row, if (and only if) this worker's attempt still owns it; locks it for the final write."""
    return (
        queue_jobs()
        .select_for_update()
        .filter(pk=job_id, status=JobStatus.RUNNING, locked_by=worker, attempt=attempt)
        .first()
    )


def job_settle_fenced(*, job: Job, worker: str, run_status: str, error: str = "") -> bool:
    """Mark the job terminal (or paused) to match its run, only if this worker's attempt still
    holds it: False, and nothing changed, if not. In a transaction, the row stays locked until it
    commits (a fence and a settle in one statement)."""
    now = timezone.now()
    status = {
        RunStatus.COMPLETED: JobStatus.COMPLETED,
        RunStatus.PAUSED: JobStatus.PAUSED,
        RunStatus.CANCELLED: JobStatus.CANCELLED,
    }.get(run_status, JobStatus.FAILED)
    values = [status, error[:2000], None, now, None if status == JobStatus.PAUSED else now]
    return _JOB_SETTLE.row(job.pk, values, [job.user_id, JobStatus.RUNNING, worker, job.attempt]) == 1


_JOB_SETTLE = Update(Job, ["status", "error", "lease_expires_at", "updated_at", "completed_at"], where=["user_id", "status", "locked_by", "attempt"])


def job_cancel(*, job_id: str, reason: str = "cancelled before execution", owner: str | None = None) -> bool:
    """Tombstone a job that has not started (or is paused): its run ends CANCELLED at once.

    ``owner`` limits it to that user's job (an isolated caller); None: whoever's. A running job
    is not touched here; its worker sees the cancel intent at its next step.
    """
    now = timezone.now()
    with transaction.atomic():
        jobs = queue_jobs().select_for_update().filter(pk=job_id, status__in=(JobStatus.QUEUED, JobStatus.PAUSED))
        if owner is not None:
            jobs = jobs.filter(user_id=owner)
        job = jobs.first()
        if job is None:
            return False
        stage = "PENDING" if job.status == JobStatus.QUEUED else "PAUSED"
        queue_jobs().filter(pk=job.pk).update(status=JobStatus.CANCELLED, lease_expires_at=None, updated_at=now, completed_at=now)
        job_hooks_call("cancelled", job, reason=reason, stage=stage)  # its run ends CANCELLED with it
    return True


def job_cancel_paused(*, run_id: str, reason: str) -> bool:
    """A paused run ends CANCELLED now, whether it paused as a background job or inline (an
    operator's cancel): an inline one first gets the paused job it lacked, cancelled as any is."""
    with transaction.atomic():
        _job_adopt(run_id, timezone.now())
        return job_cancel(job_id=run_id, reason=reason)


def job_continue(*, job_id: str, tools: list[dict[str, Any]], stream_events: bool = True, adopt: bool = False) -> Job | None:
    """Queue a paused background run again, with the human's decisions; None if it has no paused job.

    ``adopt``: a paused run that was not a background run (it ran inline) gets a job of its own,
    so that it continues durably in the background (a resolved approval continues it so)."""
    from sessions.models import RunEvent

    now = timezone.now()
    with transaction.atomic():
        job = queue_jobs().select_for_update().filter(pk=job_id, status=JobStatus.PAUSED).first()
        if job is None and adopt:
            job = _job_adopt(job_id, now)
        if job is None:
            return None
        top = RunEvent.objects.unscoped("the job's own run").filter(run_id=job.pk).order_by("-event_index").values_list("event_index", flat=True).first()
        payload = {
            **job.payload, "tools": tools, "stream_events": stream_events, "resume_after": -1 if top is None else top,
            "continued_at_attempt": job.attempt + 1,  # a later attempt voids what this one sent
        }
        queue_jobs().filter(pk=job.pk).update(
            job_type="continue", payload=payload, status=JobStatus.QUEUED, max_attempts=job.attempt + settings.AGENTOS_BACKGROUND_MAX_ATTEMPTS,
            available_at=now, locked_by="", lease_expires_at=None, updated_at=now, completed_at=None,
        )
        # Polls read PENDING from here on, as for any accepted background run.
        run_transition(run_id=job.pk, expected=RunStatus.PAUSED, to=RunStatus.PENDING)
        transaction.on_commit(dispatch)
    return queue_jobs().get(pk=job.pk)


def _job_adopt(run_id: str, now: datetime) -> Job | None:
    """A PAUSED job for a paused run that has none (it paused inline), for ``job_continue`` to queue."""
    if queue_jobs().filter(pk=run_id).exists():
        return None  # a job of another status owns the run
    run = Run.objects.unscoped("the run a job is made for; its caller checked access").filter(pk=run_id, status=RunStatus.PAUSED).first()
    if run is None:
        return None
    job = Job(
        id=run.pk, job_type="continue", component_type=run.run_type, user_id=run.user_id, component_id=run.component_id,
        session_id=run.session_id, payload={}, stream=False, status=JobStatus.PAUSED, attempt=0,
        max_attempts=settings.AGENTOS_BACKGROUND_MAX_ATTEMPTS, idempotency_scope=run.user_id or "",
        created_at=now, updated_at=now, available_at=now,
    )
    job.save(force_insert=True)
    return job


def job_follow_run(*, run_id: str, run_status: str) -> None:
    """A paused background run was continued inline: its job follows the run's new status."""
    if run_status == RunStatus.PAUSED:
        return
    status = {RunStatus.COMPLETED: JobStatus.COMPLETED, RunStatus.CANCELLED: JobStatus.CANCELLED}.get(run_status, JobStatus.FAILED)
    now = timezone.now()
    queue_jobs().filter(pk=run_id, status=JobStatus.PAUSED).update(status=status, updated_at=now, completed_at=now)


def job_requeue(*, job_id: str, clear_cancellation: bool = True) -> Job | None:
    """An operator gives a failed or cancelled job another attempt (same run id)."""
    now = timezone.now()
    with transaction.atomic():
        job = queue_jobs().select_for_update().filter(pk=job_id, status__in=(JobStatus.FAILED, JobStatus.CANCELLED)).first()
        if job is None:
            return None
        if clear_cancellation:
            cancel_clear(run_id=job.pk)
        queue_jobs().filter(pk=job.pk).update(
            status=JobStatus.QUEUED, max_attempts=job.attempt + 1, available_at=now, locked_by="",
            lease_expires_at=None, error="", completed_at=None, updated_at=now,
        )
        job_hooks_call("requeued", job)  # its run is PENDING again
        transaction.on_commit(dispatch)
    return queue_jobs().get(pk=job.pk)
