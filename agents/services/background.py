"""Executing a claimed job: the same runtime and recording as an inline run, plus a lease.

Events get a per-run ``event_index``, are published live at once and flushed to the database
every few hundred milliseconds (fenced: only while this worker still holds the job). A
heartbeat thread renews the lease; if the lease is lost (the reaper gave the job to another
worker), the run is stopped and nothing more is written. The final write (run row, session,
memories, remaining events, job status) is one fenced transaction.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any

from django.conf import settings
from django.db import connections, transaction
from django.db.models import Max

from core.statements import Select, pipelined
from core.tenancy import scope_queryset
from sessions.models import Run, RunEvent, RunStatus, Session
from sessions.services.runs import run_events_append, run_record_update

from ..models import Job
from ..runtime import TERMINAL_EVENTS
from .cancellation import cancel_local, forget_local
from .jobs import job_fence, job_heartbeat, job_settle_fenced
from .live import publish
from .runs import PreparedRun, RunRequest, _drive, agent_entry, prepare_for_owner

logger = logging.getLogger("agno_site.jobs")

FLUSH_SECONDS = 0.2


class _Lease(threading.Thread):
    """Renews the job's lease every third of its length; stops the run if it is lost or too long."""

    def __init__(self, job: Job, worker: str) -> None:
        super().__init__(name=f"lease-{job.pk[:8]}", daemon=True)
        self.job, self.worker = job, worker
        self.stop = threading.Event()
        self.lost = False
        self.deadline = time.monotonic() + settings.AGENTOS_BACKGROUND_TIMEOUT_SECONDS

    def run(self) -> None:
        interval = max(1.0, settings.AGENTOS_BACKGROUND_LEASE_SECONDS / 3)
        try:
            while not self.stop.wait(interval):
                if not job_heartbeat(job_id=self.job.pk, worker=self.worker, attempt=self.job.attempt):
                    self.lost = True
                    cancel_local(self.job.pk)
                    return
                if time.monotonic() > self.deadline:
                    logger.warning("job %s ran past AGENTOS_BACKGROUND_TIMEOUT_SECONDS; cancelling it", self.job.pk)
                    cancel_local(self.job.pk)
        finally:
            connections.close_all()  # this thread's own connection; the thread ends here


class _Events:
    """Numbers, publishes and (fenced) flushes a run's events.

    Events are written in batches, at most ``FLUSH_SECONDS`` after they happen: by the run thread
    when events keep coming, and by a flusher thread when the run goes quiet (a slow model, a
    tool, a pause), so a follower that missed the live event always finds it in the database.
    """

    def __init__(self, run: Run, job: Job, worker: str, first_index: int) -> None:
        self.run, self.job, self.worker = run, job, worker
        self.next_index = first_index
        self.buffer: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.last_flush = time.monotonic()
        self.fenced_out = False
        self._stop = threading.Event()
        self._flusher = threading.Thread(target=self._flush_while_quiet, name=f"events-{run.pk[:8]}", daemon=True)

    def start(self) -> None:
        self._flusher.start()

    def stop(self) -> None:
        self._stop.set()
        self._flusher.join(timeout=5)

    def __call__(self, event: dict[str, Any]) -> None:
        with self.lock:
            indexed = {**event, "event_index": self.next_index}
            self.next_index += 1
            self.buffer.append(indexed)
        publish(self.run.pk, indexed)
        if event.get("event") not in TERMINAL_EVENTS and time.monotonic() - self.last_flush >= FLUSH_SECONDS:
            self.flush()

    def _flush_while_quiet(self) -> None:
        try:
            while not self._stop.wait(FLUSH_SECONDS):
                if time.monotonic() - self.last_flush >= FLUSH_SECONDS:
                    self.flush()
        finally:
            connections.close_all()  # this thread's own connection

    def flush(self) -> None:
        with self.lock:
            if not self.buffer or self.fenced_out:
                return
            with transaction.atomic():
                if job_fence(self.job.pk, self.worker, self.job.attempt) is None:
                    self.fenced_out = True
                    return
                self.write_buffer()
            self.last_flush = time.monotonic()

    def write_buffer(self) -> None:
        """Insert the buffered events (inside the caller's fenced transaction, lock held)."""
        if self.buffer:
            payloads = [{key: value for key, value in event.items() if key != "event_index"} for event in self.buffer]
            run_events_append(run=self.run, events=payloads, first_index=self.buffer[0]["event_index"])
            self.buffer.clear()


def _next_event_index(run: Run) -> int:
    top = scope_queryset(RunEvent.objects, run.user_id).filter(run_id=run.pk).aggregate(top=Max("event_index"))["top"]
    return 0 if top is None else top + 1


# The job's run and its session, in one read compiled once (the ORM compiles it on every call).
_RUN_WITH_SESSION = Select(lambda run_id, user_id: scope_queryset(Run.objects, user_id).select_related("session").filter(pk=run_id))


def job_execute(job: Job, worker: str) -> str:
    """Run a claimed job to its end. Returns the run's final status (or "LOST")."""
    run = _RUN_WITH_SESSION.one(job.pk, job.user_id)
    session = run.session  # read with the run; the same owner (a run's user_id is its session's)
    # A run's first execution has no events yet; a retry or a continuation carries on numbering.
    first_index = 0 if job.job_type == "run" and job.attempt == 1 else _next_event_index(run)
    events = _Events(run, job, worker, first_index)
    lease = _Lease(job, worker)
    lease.start()
    events.start()
    try:
        output, finished, prepared = _execute(job, run, session, events)
    finally:
        events.stop()
        lease.stop.set()
        lease.join(timeout=5)
        forget_local(job.pk)
    status = str(output.get("status") or RunStatus.ERROR)
    error = str(output.get("content") or "") if status == RunStatus.ERROR else ""
    with transaction.atomic():
        # Settling the job is the fence: it only matches while this attempt holds the job, and
        # it locks the row until the run's write commits with it. On PostgreSQL the BEGIN goes
        # with it, and the writes after it are sent without waiting (pipelined): two round trips
        # and the COMMIT, where each statement was one.
        with pipelined():
            if lease.lost or not job_settle_fenced(job=job, worker=worker, run_status=status, error=error):
                logger.warning("job %s: lost its lease before finishing; its result is discarded", job.pk)
                return "LOST"
            with events.lock:
                events.write_buffer()
            run_record_update(
                run=run,
                status=status,
                output=output,
                session_state=output.get("session_state"),
                summary=getattr(finished, "session_summary", None),
            )
        if prepared.memory_store is not None:
            prepared.memory_store.flush()
    return status


def _execute(job: Job, run: Run, session: Session, events: _Events) -> tuple[dict[str, Any], Any, PreparedRun]:
    payload = dict(job.payload)
    if job.job_type == "continue":
        from .runs import continue_prepare_for_owner

        # The claim moved the run to RUNNING; its stored output is still the paused one.
        prepared = continue_prepare_for_owner(run=run, session=session, tools=payload.get("tools"), require_paused=False)
        run_iter = prepared.agent.continue_run(run.run_data, tools=prepared.decisions, ctx=prepared.ctx, stream_events=payload.get("stream_events", True))
    else:
        request = RunRequest(**{key: value for key, value in payload.items() if key in RunRequest.__dataclass_fields__})
        entry = agent_entry(job.component_id, version=request.version)
        # Token by token only when the submission streams; a stream=false background run is
        # polled, and its events (structural ones, and the answer) still reach any follower.
        prepared = prepare_for_owner(entry=entry, owner_id=job.user_id, session=session, session_id=session.pk, request=request, run_id=job.pk, followed=job.stream)
        run_iter = prepared.agent.start_run(request.message, prepared.ctx, stream_events=request.stream_events, images=request.images, files=request.files)
    output, _events, finished = _drive(prepared, run_iter, events)
    return output, finished, prepared
