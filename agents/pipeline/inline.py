"""Inline and streamed runs exist from their first moment.

A run started by a request (JSON or SSE) is committed RUNNING, with the user's input, before its
model is called; its events are numbered, published to any follower and written in batches as it
goes, so ``/resume`` works from every replica; the process's watch thread renews the run's
heartbeat (its row's ``updated_at``) while it executes. If the process dies, the reaper finds the
run RUNNING with a stale heartbeat and no background job, and fails it saying the server was lost:
nothing a user sent is ever missing, and no run stays RUNNING for ever.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from core.db import release_connections
from sessions.models import Run, RunStatus
from sessions.services.runs import run_transition

from jobs.models import Job, JobStatus
from engine.events import CONTENT_DELTAS
from jobs.services.cancellation import cancel_local
from .eventlog import EventLog, LoopFed, payloads, run_error_ending

logger = logging.getLogger("agno_site.runs")

# An inline run is written at most this long after its events happen: followers on other replicas
# tail the database when the live path is quiet, and a crash loses at most this much of a stream
# (the run itself, and its input, are already stored).
INLINE_FLUSH_SECONDS = 0.5

SERVER_LOST = "The server running this run stopped before it finished (it crashed or was killed); the run did not complete"


class InlineRecorder(EventLog):
    """The event log of an inline run, which also forwards each event to the caller's stream and
    renews the run's heartbeat while it executes.

    A non-streamed run keeps all but the per-token RunContent deltas (its RunCompleted carries
    the whole answer). The last batch is written with the run's final row (``take_remaining``),
    in that transaction.
    """

    flush_seconds = INLINE_FLUSH_SECONDS

    def __init__(self, run: Run, *, streamed: bool, forward: Callable[[dict[str, Any]], None] | None, first_index: int = 0) -> None:
        super().__init__(run, first_index=first_index, forward=forward, keeps=None if streamed else _not_a_delta)
        self.given_up = False  # the reaper failed the run while it still executed here

    def may_write(self) -> bool:
        return not self.given_up  # the reaper has written the run's end; nothing more is its

    def write_batch(self) -> None:
        if not self.may_write():
            self.buffer.clear()
            return
        super().write_batch()

    @staticmethod
    def beats_together(recorders: list[InlineRecorder]) -> None:
        """From the watch thread, every heartbeat interval: renew the heartbeat (the row's
        ``updated_at``) of every inline run this process executes, in one statement. A run the
        reaper gave up meanwhile (this process stalled) is stopped, as a background run that
        lost its lease stops; its end is already recorded."""
        ids = [recorder.run.pk for recorder in recorders]
        running = Run.objects.unscoped("the watch renews the runs this process executes, whoever's").filter(pk__in=ids, status=RunStatus.RUNNING)
        try:
            if running.update(updated_at=timezone.now()) == len(ids):
                return
            alive = set(running.values_list("pk", flat=True))
        finally:
            release_connections()
        for recorder in recorders:
            if recorder.run.pk not in alive:
                recorder.given_up = True
                cancel_local(recorder.run.pk)

    def take_remaining(self) -> tuple[list[dict[str, Any]], int]:
        """The events not yet written and the index of the first, for the run's final write."""
        with self.lock:
            self.take_arrived()
            remaining, self.buffer = self.buffer, []
        first = remaining[0]["event_index"] if remaining else self.next_index
        return payloads(remaining), first


class LoopRecorder(LoopFed, InlineRecorder):
    """The event log of an inline run driven on the web server's event loop."""


def _not_a_delta(event: dict[str, Any]) -> bool:
    return event.get("event") not in CONTENT_DELTAS


def inline_runs_reap(*, now: Any = None, trusted: bool | None = None) -> list[str]:
    """Fail the inline runs whose process is gone: RUNNING, no background job, and no heartbeat
    for AGENTOS_PROCESS_LOST_AFTER_SECONDS (a whole lease in a pass that does not trust
    heartbeats: ``trusted``, the pass's ``reaper_pass`` verdict; None: this call records the
    pass). Each ends ERROR with the reason, and a RunError event ends any follower's stream.
    Returns their ids."""
    from jobs.services.liveness import reaper_pass

    now = now or timezone.now()
    if trusted is None:
        trusted = reaper_pass(now=now)
    lease = settings.AGENTOS_BACKGROUND_LEASE_SECONDS
    silence = min(settings.AGENTOS_PROCESS_LOST_AFTER_SECONDS, lease) if trusted else lease
    stale_before = now - timedelta(seconds=silence)
    # A run whose job is queued or running is its job's lease's to reap; a paused background run
    # continued inline (its job stays paused) is reaped as any inline run.
    jobs = Job.objects.unscoped("a background run is reaped by its job's lease").filter(pk=OuterRef("pk"), status__in=(JobStatus.QUEUED, JobStatus.RUNNING))
    lost = list(
        Run.objects.unscoped("the reaper looks at every user's runs")
        .filter(status=RunStatus.RUNNING, updated_at__lt=stale_before)
        .exclude(Exists(jobs))
        .values_list("pk", "user_id", "session_id", "component_id", "run_data")
    )
    failed = []
    for run_id, user_id, session_id, component_id, run_data in lost:
        with transaction.atomic():
            data = {**(run_data or {}), "status": RunStatus.ERROR, "content": SERVER_LOST}
            if not run_transition(run_id=run_id, expected=RunStatus.RUNNING, to=RunStatus.ERROR, error=SERVER_LOST, content=SERVER_LOST, run_data=data):
                continue  # it finished meanwhile
            run_error_ending(run=Run(pk=run_id, user_id=user_id), session_id=session_id, component_id=component_id, content=SERVER_LOST, error_type="server_lost")
        failed.append(run_id)
    if failed:
        logger.warning("reaper: %d inline run(s) failed after their server was lost", len(failed))
    return failed
