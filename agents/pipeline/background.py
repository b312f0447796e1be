"""Executing a claimed job: the same runtime and recording as an inline run, plus a lease.

Events get a per-run ``event_index``, are published live at once and flushed to the database
every few hundred milliseconds (fenced: only while this worker still holds the job). One watch
thread per process renews the leases; if a lease is lost (the reaper gave the job to another
worker), the run is stopped and nothing more is written. The final write (run row, session,
memories, remaining events, job status) is one fenced transaction.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, transaction

from core.auth import principal_from_grant
from core.statements import Select, pipelined
from core.tenancy import scope_queryset
from sessions.models import Run, RunStatus, Session
from sessions.selectors import ATTEMPT_STARTED
from sessions.services.runs import RunRecord, run_finish

from jobs.models import Job
from engine import InvalidContinuation, Workflow
from jobs.services.cancellation import forget_local
from jobs.services.execution import Lease
from jobs.services.executor import in_run_thread
from jobs.services.jobs import job_ended, job_fence, job_settle_fenced
from jobs.services.watch import watch
from .observers import RunEnd, run_ended
from .eventlog import EventLog, LoopFed, run_error_event
from .continuation import branch_prepare_for_job, continue_prepare_for_owner, next_event_index
from .execution import replaced_input, run_aftermath, run_drive
from .runs import ComponentNotFound, PreparedRun, RunNotContinuable, RunRequest, component_entry, component_entry_pinned, prepare_for_owner

logger = logging.getLogger("agno_site.jobs")


class _Events(EventLog):
    """A background run's events, written only while this attempt still holds its job (fenced):
    a worker that lost its lease never writes over its successor's events."""

    def __init__(self, run: Run, job: Job, worker: str, first_index: int) -> None:
        super().__init__(run, first_index=first_index)
        self.job, self.worker = job, worker
        self.fenced_out = False

    def may_write(self) -> bool:
        """In the writing transaction: whether this attempt still holds its job (the row is
        locked until the transaction ends)."""
        if not self.fenced_out and job_fence(self.job.pk, self.worker, self.job.attempt) is None:
            self.fenced_out = True
        return not self.fenced_out

    def write_batch(self) -> None:
        if self.fenced_out:
            return
        with transaction.atomic():
            if self.may_write():
                self.write_buffer()



class _LoopEvents(LoopFed, _Events):
    """A background run's events, fed on the worker's event loop (written by the watch thread)."""


# The job's run and its session, in one read compiled once (the ORM compiles it on every call).
_RUN_WITH_SESSION = Select(lambda run_id, user_id: scope_queryset(Run.objects, user_id).select_related("session").filter(pk=run_id))


@dataclass
class _Execution:
    """A claimed run job, set up: what its end is written from."""

    job: Job
    worker: str
    run: Run
    events: _Events
    lease: Lease
    prepared: PreparedRun | None = None
    output: dict[str, Any] | None = None  # set already when it cannot run
    finished: Any = None


async def run_job_execute(job: Job, worker: str) -> str:
    """Run a claimed run job to its end on the worker's event loop (the run job types' execute,
    registered with the queue: jobs.registry). Waiting on the model holds no thread and no
    connection, so one worker process carries hundreds of runs. The database phases (its start,
    its end) go to the run threads; the watch thread writes its events and renews its lease.
    Returns the run's final status (or "LOST")."""
    execution = await in_run_thread(_job_begin, job, worker)
    try:
        if execution.prepared is not None:
            execution.output, execution.finished = await run_drive(execution.prepared, execution.prepared.iterate(), execution.events)
    finally:
        await in_run_thread(_job_unwatch, job)
    return await in_run_thread(_job_end, execution)


def _job_begin(job: Job, worker: str) -> _Execution:
    """Read the job's run and session, number its events on, watch its lease, and prepare it
    (or, if it can never run, its failed output)."""
    run = _RUN_WITH_SESSION.one(job.pk, job.user_id)
    session = run.session  # read with the run; the same owner (a run's user_id is its session's)
    # A run's first execution has no events yet; a retry or a continuation carries on numbering.
    first_index = 0 if job.job_type in ("run", "branch") and job.attempt == 1 else next_event_index(run)
    superseded_from = _superseded_from(job, first_index)
    if superseded_from is not None:
        first_index += ATTEMPT_INDEX_GAP
    events = _LoopEvents(run, job, worker, first_index)
    execution = _Execution(job=job, worker=worker, run=run, events=events, lease=Lease(job, worker))
    watch.add(job.pk, events, execution.lease)
    try:
        if superseded_from is not None:
            _announce_attempt(job, run, events, superseded_from)
        try:
            execution.prepared = _prepare(job, run, session)
            if isinstance(execution.prepared.component, Workflow):
                from .workflow_branches import JobBranches

                # Its Parallel branches run as jobs of its group (any worker's), not as its tasks.
                execution.prepared.ctx.parallel_branches = JobBranches(job, execution.lease, version=getattr(execution.prepared.entry, "version", None))
        except DatabaseError:
            raise  # the database went away: the reaper retries the job or fails it visibly
        except Exception as exc:  # it can never run: it fails now, saying why
            execution.output = _unrunnable(job, run, exc, events)
    except BaseException:
        _job_unwatch(job)
        raise
    return execution


def _job_unwatch(job: Job) -> None:
    watch.remove(job.pk)
    forget_local(job.pk)


def _job_end(execution: _Execution) -> str:
    """The job's end, fenced: its run row, session, last events, memories and the job's status."""
    job, worker, run, events, prepared = execution.job, execution.worker, execution.run, execution.events, execution.prepared
    output = execution.output or {}
    status = str(output.get("status") or RunStatus.ERROR)
    error = str(output.get("content") or "") if status == RunStatus.ERROR else ""
    with transaction.atomic():
        # Settling the job is the fence: it only matches while this attempt holds the job, and
        # it locks the row until the run's write commits with it. On PostgreSQL the BEGIN goes
        # with it, and the writes after it are sent without waiting (pipelined): two round trips
        # and the COMMIT, where each statement was one.
        with pipelined():
            if execution.lease.lost or not job_settle_fenced(job=job, worker=worker, run_status=status, error=error):
                logger.warning("job %s: lost its lease before finishing; its result is discarded", job.pk)
                return "LOST"
            with events.lock:
                events.take_arrived()
                events.write_buffer()
            run_finish(run, _record_of(
                job, run, prepared, status=status, output=output, summary=getattr(execution.finished, "session_summary", None),
                input=replaced_input(execution.finished),
            ))
        if prepared is not None:
            # Reads, then writes: not in the pipeline, whose statements go without waiting.
            run_aftermath(prepared, status, output, execution.finished)
        else:
            # A run that could not start ends all the same, and its observers are told: a
            # continuation's (its agent was removed after the pause) ends the paused run, which a
            # schedule run it paused follows.
            run_ended(RunEnd(owner_id=job.user_id, run_id=job.pk, status=status, record=None, after_pause=job.job_type == "continue"))
        # The job's own observers (its type's lifecycle hooks) follow its end.
        job_ended(job=job, status=status)
    return status


# How far above the lost attempt's last stored event a new attempt starts numbering. The lost
# attempt may have sent followers events it never stored (its last ones before it died, or all it
# sent while it ran on without knowing its lease had gone); they are below this, so a follower
# that saw them takes the new attempt's events as new, in order.
ATTEMPT_INDEX_GAP = 2**16


def _superseded_from(job: Job, first_index: int) -> int | None:
    """Where this job's earlier attempts' output begins, if this attempt is not the first
    (the worker was lost, or an operator retried it), else None."""
    if job.job_type == "continue":
        start = int(job.payload.get("resume_after", -1)) + 1
        first_attempt = job.payload.get("continued_at_attempt")
        earlier = job.attempt > first_attempt if first_attempt is not None else first_index > start
        return start if earlier else None
    return 0 if job.attempt > 1 else None


def _announce_attempt(job: Job, run: Run, events: _Events, superseded_from: int) -> None:
    """The new attempt's first event, stored before anything else of it: followers and replays
    drop the output of the earlier attempts (``sessions.selectors.superseded_dropped``)."""
    events({
        "created_at": int(time.time()), "event": "CustomEvent", "name": ATTEMPT_STARTED, "agent_id": job.component_id,
        "run_id": job.pk, "session_id": run.session_id, "attempt": job.attempt, "superseded_from_index": superseded_from,
    })
    events.flush()


def _record_of(job: Job, run: Run, prepared: PreparedRun | None, **fields: Any) -> RunRecord:
    """The job's run as the sessions service writes its end (also for a job that never ran)."""
    output = fields["output"]
    if prepared is not None:
        return prepared.record(session_state=output.get("session_state"), **fields)
    return RunRecord(run_id=run.pk, session_id=run.session_id, owner_id=run.user_id, component_id=run.component_id, session_type=run.run_type, **fields)


def _prepare(job: Job, run: Run, session: Session) -> PreparedRun:
    """The job's agent and context, ready to iterate."""
    payload = dict(job.payload)
    if job.job_type == "branch":
        # A continuation in a new run (this job's): the loop runs again on the source run's transcript.
        return branch_prepare_for_job(job=job, session=session)
    if job.job_type == "continue":
        # The claim moved the run to RUNNING; its stored output is still the paused one.
        prepared = continue_prepare_for_owner(
            run=run, session=session, tools=payload.get("tools"), require_paused=False, stream_events=payload.get("stream_events", True),
            factory_input=payload.get("factory_input"),  # the run's own, as it was submitted
        )
        prepared.ctx.principal = principal_from_grant(payload.get("principal"))
        return prepared
    request = RunRequest(**{key: value for key, value in payload.items() if key in RunRequest.__dataclass_fields__})
    # A draft runs only when an admin submitted it (the API marks the payload); a job that pins
    # a draft without that mark finds nothing, as a missing version.
    if payload.get("draft_allowed") and request.version is not None:
        entry = component_entry_pinned(job.component_id, kind=job.component_type, version=request.version)
    else:
        entry = component_entry(job.component_id, kind=job.component_type, version=request.version)
    # Token by token only when the submission streams; a stream=false background run is
    # polled, and its events (structural ones, and the answer) still reach any follower.
    prepared = prepare_for_owner(entry=entry, owner_id=job.user_id, session=session, session_id=session.pk, request=request, stored=run, followed=job.stream)
    # Its tools act with the submitter's rights as they were accepted (None: a job from before grants were kept).
    prepared.ctx.principal = principal_from_grant(payload.get("principal"))
    return prepared


def _unrunnable(job: Job, run: Run, exc: Exception, events: _Events) -> dict[str, Any]:
    """The output of a job that cannot start, and its RunError event (sent to any follower).

    Its agent was deactivated or deleted after the run was accepted, or the run it continues can
    no longer be continued; retrying would fail the same way, so it is not retried."""
    if isinstance(exc, ComponentNotFound):
        message = f"{exc.kind.capitalize()} {job.component_id} is no longer available: it was deactivated or removed after this run was accepted"
        error_type = f"{exc.kind}_not_found"
    elif isinstance(exc, (RunNotContinuable, InvalidContinuation)):
        message, error_type = str(exc), "invalid_continuation"
    else:
        logger.exception("job %s could not be prepared", job.pk)
        message, error_type = f"Internal error while preparing the run ({type(exc).__name__})", "internal_error"
    events(run_error_event(run_id=job.pk, session_id=run.session_id, agent_id=job.component_id, content=message, error_type=error_type))
    return {**(run.run_data or {}), "run_id": job.pk, "session_id": run.session_id, "status": RunStatus.ERROR, "content": message}
