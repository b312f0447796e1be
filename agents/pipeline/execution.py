"""Executing a run: one async execute for every caller, and its thin sync facade.

``run_execute`` drives a begun run (``runs.run_begin``) to its end on the calling event loop, its
events numbered, published and written in batches as it goes (agents.pipeline.inline), and records
its end in one transaction (run row, session, last events, memories, what its observers write). A
provider failure or a bug in a tool ends the run as ERROR with its reason, never a lost run.

The web server awaits it on its loop; its database phases go to the run threads. A caller
without an event loop (a test, the shell, an eval, a benchmark) calls ``run_execute_here``, which
drives the same coroutine on its thread's loop with each database phase in the caller's own thread
and transaction (``jobs.services.executor.drive_here``): the run's rows are written on the
caller's connection, so a caller inside a transaction sees them, and the run sees the caller's.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction

from sessions.models import Run, RunStatus
from sessions.services.runs import run_finish

from jobs.services.cancellation import forget_local
from jobs.services.executor import drive_here, driven_here, in_run_thread, in_run_thread_to_the_end
from jobs.services.jobs import job_follow_run
from jobs.services.watch import watch
from .continuation import mark_regenerated
from .eventlog import run_error_event
from .hooks import child_hooks_enqueue, hooks_enqueue
from .inline import SERVER_LOST, InlineRecorder, LoopRecorder
from .observers import RunEnd, run_ended
from .runs import PreparedRun, run_begin

logger = logging.getLogger("agno_site.runs")

EventSink = Callable[[dict[str, Any]], None]


def _internal_error(prepared: PreparedRun, run_iter: Any, exc: Exception) -> tuple[dict[str, Any], dict[str, Any]]:
    """The output and RunError event of a run whose loop raised (a bug, never the model's error)."""
    logger.error("run %s failed unexpectedly", prepared.run_id, exc_info=exc)
    output = dict(getattr(run_iter, "output", None) or {})
    message = f"Internal error while running the agent ({type(exc).__name__})"
    output.update({"run_id": prepared.run_id, "session_id": prepared.session_id, "status": RunStatus.ERROR, "content": message})
    error_event = run_error_event(
        run_id=prepared.run_id, session_id=prepared.session_id, agent_id=prepared.component.id,
        agent_name=prepared.component.name, content=message, error_type="internal_error",
    )
    return output, error_event


def replaced_input(finished: Any) -> dict[str, Any]:
    """The input a run's pre-hooks changed (masked), which replaces what the caller sent in the
    stored run; empty when they changed nothing."""
    return dict(getattr(finished, "replaced_input", None) or {})


def run_aftermath(prepared: PreparedRun, status: str, output: dict[str, Any] | None = None, finished: Any = None) -> None:
    """What a run's end changes beyond its own rows, in the end's transaction: the run a completed
    regeneration replaces, the memories it made, the job of its background post-hooks (from the
    ``finished`` run iterator), and what the run-end observers write (agents.pipeline.observers:
    approvals' rows of its paused or decided ``@approval`` tool calls, from ``output``; the
    schedule run of a paused run a schedule fired)."""
    hooks_enqueue(prepared, getattr(finished, "background_hooks", ()))
    child_hooks_enqueue(prepared, getattr(finished, "child_background_hooks", ()))
    if prepared.replaces and status == RunStatus.COMPLETED:
        mark_regenerated(owner_id=prepared.owner_id, run_id=prepared.replaces)
    if prepared.memory_store is not None:
        prepared.memory_store.flush()
    run_ended(RunEnd(
        owner_id=prepared.owner_id, run_id=prepared.run_id, status=status,
        record=prepared.record(status=status, output=output) if output is not None else None, after_pause=prepared.continues_in_place,
    ))


def run_watch(prepared: PreparedRun, run: Run, *, batches_here: bool = False) -> LoopRecorder:
    """The event log of a begun run that an event loop will drive, already in the watch's care
    (its batches and heartbeat): made in the thread that began the run, so that driving it costs
    the loop no thread hop before its first event. ``batches_here``: its batches are the driving
    caller's to write (``HereRecorder``)."""
    kind = HereRecorder if batches_here else LoopRecorder
    recorder = kind(run, streamed=prepared.streamed, forward=None, first_index=prepared.first_event_index)
    watch.add(run.pk, recorder)
    return recorder


@dataclass(frozen=True)
class Opened:
    """A run started up to its first event (``run_open``): its iterator, for the rest, or what
    its first step raised (a bug, recorded as the run's error when it is driven)."""

    run_iter: Any
    failure: Exception | None = None


def run_open(prepared: PreparedRun, recorder: LoopRecorder, on_event: EventSink | None) -> Opened:
    """Start a run that an event loop drives, now, up to its first event, which goes to
    ``recorder`` (and through it to ``on_event``) at once. A stream's first frame then leaves in
    the loop's step that returns its response, instead of two trips later (the driving task's
    first step, then the stream's wake-up): trips that each wait behind everything the loop has
    ready, which when many runs start together is every other run's work."""
    recorder.forward = on_event
    run_iter = None
    try:
        run_iter = prepared.iterate()
        first = run_iter.opening()
        if first is not None:
            recorder(first)
    except Exception as exc:
        return Opened(run_iter, exc)
    return Opened(run_iter)


async def run_execute(
    prepared: PreparedRun, *, run: Run, on_event: EventSink | None = None, recorder: LoopRecorder | None = None,
    opened: Opened | None = None,
) -> dict[str, Any]:
    """Run a begun run to its end on the calling event loop. Waiting on its model (a call, each
    streamed token) or on an I/O tool holds no thread and no database connection: the loop is
    shared by every run of the process. Its event batches and heartbeat are the watch thread's
    (``recorder``: from ``run_watch``; else it is watched here); its end goes to a run thread
    (``RUN_THREADS``) for the moment it takes. ``opened``: started already (``run_open``, with
    ``recorder`` and its ``on_event``). Under ``run_execute_here`` its batches are written in the
    caller's thread instead (``_batches_here``)."""
    writers: list[asyncio.Task[None]] = []
    timer: asyncio.TimerHandle | None = None
    try:
        if recorder is None:
            recorder = await in_run_thread(run_watch, prepared, run, batches_here=driven_here())
        if opened is None:
            recorder.forward = on_event
            opened = Opened(prepared.iterate())
        if isinstance(recorder, HereRecorder):
            # Only a run still going after a flush interval has batches to write before its end.
            loop = asyncio.get_running_loop()
            timer = loop.call_later(recorder.flush_seconds, lambda: writers.append(loop.create_task(_batches_here(recorder))))
        try:
            output, finished = await run_drive(prepared, opened.run_iter, recorder, opened.failure)
        except BaseException:
            await in_run_thread(watch.remove, run.pk)
            raise
        finally:
            if timer is not None:
                timer.cancel()
            for writer in writers:
                writer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await writer
        return await in_run_thread_to_the_end(_unwatch_and_end, prepared, run, recorder, output, finished)
    finally:
        forget_local(prepared.run_id)


def run_execute_here(prepared: PreparedRun, *, run: Run | None = None, on_event: EventSink | None = None) -> dict[str, Any]:
    """``run_execute`` for a caller without an event loop: begun here unless ``run`` was
    (``run_begin``), driven on this thread's loop, its database phases and event batches in this
    thread and its transaction. Returns the RunOutput dict."""
    try:
        run = run or run_begin(prepared)
    except BaseException:
        forget_local(prepared.run_id)
        raise
    return drive_here(run_execute(prepared, run=run, on_event=on_event))


class HereRecorder(LoopRecorder):
    """The event log of a run driven by ``run_execute_here``: its batches are written by the
    caller's thread (``_batches_here``), never by the watch's connection, which could not see a
    run its caller has not committed (a test's transaction, an eval's)."""

    batched = False
    beats_together = None  # its heartbeat is its caller's to renew too

    def tick(self, now: float) -> None:
        """The watch writes none of its events (it still polls the run's cancel intents)."""


async def _batches_here(recorder: HereRecorder) -> None:
    """While a ``run_execute_here`` run goes on: its events arrived so far, written every flush
    interval, and its heartbeat renewed every heartbeat interval, in the caller's thread, as the
    watch does for a server's run."""
    beat_every = min(settings.AGENTOS_PROCESS_HEARTBEAT_SECONDS, settings.AGENTOS_BACKGROUND_LEASE_SECONDS / 3)
    next_beat = time.monotonic() + beat_every - recorder.flush_seconds  # it starts a flush interval in
    while True:
        await in_run_thread(recorder.flush)
        if time.monotonic() >= next_beat:
            next_beat = time.monotonic() + beat_every
            await in_run_thread(InlineRecorder.beats_together, [recorder])
        await asyncio.sleep(recorder.flush_seconds)


def _unwatch_and_end(prepared: PreparedRun, run: Run, recorder: InlineRecorder, output: dict[str, Any], finished: Any) -> dict[str, Any]:
    watch.remove(run.pk)
    return _run_end(prepared, run, recorder, output, finished)


async def run_drive(prepared: PreparedRun, run_iter: Any, sink: EventSink, failure: Exception | None = None) -> tuple[dict[str, Any], Any]:
    """Iterate the runtime on the calling event loop, each event to ``sink``; an unexpected
    exception (or ``failure``, one its opening raised) becomes a RunError. Returns the output and
    the finished run iterator. Inline and background runs are driven by this one loop."""
    try:
        if failure is not None:
            raise failure
        async for event in run_iter:
            sink(event)
        return run_iter.output, run_iter
    except Exception as exc:
        output, error_event = _internal_error(prepared, run_iter, exc)
        sink(error_event)
        return output, run_iter


def _run_end(prepared: PreparedRun, run: Run, recorder: InlineRecorder, output: dict[str, Any], finished: Any) -> dict[str, Any]:
    """Write an inline run's end: its row, its session, its last events and memories, in one
    transaction (and the run it regenerates, or the paused job it continues)."""
    if recorder.given_up:
        logger.warning("run %s was failed by the reaper while it ran here; its result is discarded", run.pk)
        return {**output, "status": RunStatus.ERROR, "content": SERVER_LOST}
    events, first_index = recorder.take_remaining()
    status = str(output.get("status") or RunStatus.ERROR)
    with transaction.atomic():
        run_finish(run, prepared.record(
            status=status, output=output, events=events, first_event_index=first_index, input=replaced_input(finished),
            session_state=output.get("session_state"), summary=getattr(finished, "session_summary", None),
        ))
        if prepared.continues_in_place:
            job_follow_run(run_id=run.pk, run_status=status)  # a paused background run, continued here
        run_aftermath(prepared, status, output, finished)
    return output


__all__ = [
    "HereRecorder",
    "Opened",
    "replaced_input",
    "run_aftermath",
    "run_drive",
    "run_execute",
    "run_execute_here",
    "run_open",
    "run_watch",
]
