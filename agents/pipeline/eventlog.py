"""A running run's events: numbered, published to followers at once, written in batches.

Background and inline runs keep their events the same way; a follower on any replica reads the
database and then the live events, in ``event_index`` order (agents.pipeline.tail). Batches are
written by the run's own thread while events keep coming, and by the process's watch thread
when the run goes quiet (a slow model, a tool), so a follower that missed a live event always
finds it in the database soon after. The watch writes the events of every quiet run fed on an
event loop (``LoopFed``: the loop only appends, so the watch and the run's end are its only
writers) in one transaction and one statement (``write_quiet``): at hundreds of runs in flight,
a transaction per run was most of the watch's work. A log fed by its run's own thread flushes
itself under its lock, as that thread does.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max

from core.db import release_connections
from sessions.models import Run, RunEvent
from sessions.services.runs import run_events_append, run_events_append_indexed

from engine import TERMINAL_EVENTS
from jobs.services.watch import TICK_SECONDS

from .live import publish
from .observers import run_started

logger = logging.getLogger("agno_site.runs")

EventFilter = Callable[[dict[str, Any]], bool]

# How often a quiet run's events are written: at each of the watch's ticks.
FLUSH_SECONDS = TICK_SECONDS


class EventLog:
    """The event sink of a run. ``write_batch`` is the one place a batch is written; a subclass
    may guard it (a background job writes only while its attempt holds the job)."""

    flush_seconds = FLUSH_SECONDS

    def __init__(self, run: Run, *, first_index: int = 0, forward: Callable[[dict[str, Any]], None] | None = None, keeps: EventFilter | None = None) -> None:
        self.run, self.forward, self.keeps = run, forward, keeps
        self.next_index = first_index
        self.buffer: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.last_flush = time.monotonic()
        # Every event, kept or not, to what the run-start observers follow it with (its trace).
        self.observers = run_started(run)

    def __call__(self, event: dict[str, Any]) -> None:
        for observe in self.observers:
            observe(event)
        if self.keeps is not None and not self.keeps(event):
            if self.forward is not None:
                self.forward(event)
            return
        with self.lock:
            indexed = {**event, "event_index": self.next_index}
            self.next_index += 1
            self.buffer.append(indexed)
        # The caller's stream gets the event with its index, as a follower does: a client that
        # loses the stream resumes from the last index it saw, on any replica.
        if self.forward is not None:
            self.forward(indexed)
        publish(self.run.pk, indexed)
        if event.get("event") not in TERMINAL_EVENTS and time.monotonic() - self.last_flush >= self.flush_seconds:
            self.flush()

    # Written by the watch together with other runs' (``write_quiet``) instead of by ``tick``.
    batched = False

    def tick(self, now: float) -> None:
        """From the watch thread: write a quiet run's events (a subclass also renews a lease
        here). A batched log's are the watch's to write, with ``write_quiet``."""
        if not self.batched and self.flush_due(now):
            self.flush()

    def flush_due(self, now: float) -> bool:
        return now - self.last_flush >= self.flush_seconds

    def may_write(self) -> bool:
        """Whether this log's events may still be written, asked inside the transaction that
        writes them (a background attempt that lost its job may not)."""
        return True

    def flush(self) -> None:
        with self.lock:
            self.take_arrived()
            if self.buffer:
                self.write_batch()
            self.last_flush = time.monotonic()
        release_connections()  # back to waiting on the model (or to the watch's next tick)

    def take_arrived(self) -> None:
        """Move events that arrived without the lock into the buffer (lock held); see LoopFed."""

    def write_batch(self) -> None:
        """Insert the buffered events (lock held)."""
        self.write_buffer()

    def write_buffer(self) -> None:
        """Insert the buffered events, in the caller's transaction if there is one (lock held)."""
        if self.buffer:
            run_events_append_indexed([(self.run, self.buffer)])  # each row numbered by its own event_index
            self.buffer.clear()


class LoopFed:
    """For an event log fed on an event loop (put before the EventLog class it adapts): an event
    costs the loop an append and a publish, never a wait. The loop takes no lock and writes
    nothing; the watch thread (``write_quiet``) and the run's end take what has arrived and write
    it."""

    batched = True

    @property
    def flush_together(self) -> Callable[[list[EventLog]], None]:
        """How the watch writes the logs it found due: all in one statement (``write_quiet``)."""
        return write_quiet

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.arrived: deque[dict[str, Any]] = deque()  # appended on the loop, taken by the writer

    def __call__(self, event: dict[str, Any]) -> None:
        for observe in self.observers:
            observe(event)
        if self.keeps is not None and not self.keeps(event):
            if self.forward is not None:
                self.forward(event)
            return
        indexed = {**event, "event_index": self.next_index}  # numbered by the loop alone
        self.next_index += 1
        self.arrived.append(indexed)
        if self.forward is not None:
            self.forward(indexed)
        publish(self.run.pk, indexed)

    def take_arrived(self) -> None:
        while self.arrived:
            self.buffer.append(self.arrived.popleft())


def write_quiet(logs: list[EventLog]) -> None:
    """Write the buffered events of ``logs`` (batched logs the watch found due) in one
    transaction and one statement, each log's lock held until then, so that no other writer of
    a log (its run's end, an explicit ``flush``) comes between taking its events and storing
    them. A log whose events may no longer be written (``may_write``) drops them. If the write
    fails, every log gets its events back, to be written at a later tick or with its run's end;
    if it fails on a conflict (one run's events collide with rows written for it elsewhere, as
    the reaper's verdict on a run it gave up), each run is written on its own, so one run cannot
    hold the others' back, and the events that cannot be stored are dropped with a warning."""
    logs = sorted(logs, key=lambda log: log.run.pk)  # job rows fenced in one order
    for log in logs:
        log.lock.acquire()
    try:
        taken: list[tuple[EventLog, list[dict[str, Any]]]] = []
        now = time.monotonic()
        for log in logs:
            log.take_arrived()
            events, log.buffer = log.buffer, []
            log.last_flush = now
            if events:
                taken.append((log, events))
        if not taken:
            return
        try:
            with transaction.atomic():
                run_events_append_indexed((log.run, events) for log, events in taken if log.may_write())
        except IntegrityError:
            _write_each(taken)
        except BaseException:
            for log, events in taken:
                log.buffer[:0] = events
            raise
    finally:
        for log in logs:
            log.lock.release()
        release_connections()


def _write_each(taken: list[tuple[EventLog, list[dict[str, Any]]]]) -> None:
    for log, events in taken:
        try:
            with transaction.atomic():
                if log.may_write():
                    run_events_append_indexed([(log.run, events)])
        except IntegrityError:
            logger.warning("run %s: %d event(s) collide with stored ones and are dropped", log.run.pk, len(events))
        except BaseException:
            log.buffer[:0] = events
            raise


def payloads(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events as stored: their index is the row's ``event_index``, not part of the payload."""
    return [{key: value for key, value in event.items() if key != "event_index"} for event in events]


def run_error_event(*, run_id: str, session_id: str, agent_id: str, content: str, error_type: str, **extra: Any) -> dict[str, Any]:
    """A RunError the services raise themselves (the runtime's own come from its EventFactory):
    a run that failed outside its loop, could not start, or lost its server."""
    return {
        "created_at": int(time.time()), "event": "RunError", "agent_id": agent_id, **extra, "run_id": run_id,
        "session_id": session_id, "nested_depth": 0, "content": content, "error_type": error_type,
    }


def run_error_ending(*, run: Run, session_id: str, component_id: str, content: str, error_type: str) -> dict[str, Any]:
    """The RunError that ends a run its process can no longer end (the reaper's verdict on a lost
    worker or server), in the caller's transaction: stored at the next index after the run's last
    stored event, and published to followers on every replica once the transaction commits.
    Returns the event, with its ``event_index``."""
    event = run_error_event(run_id=run.pk, session_id=session_id, agent_id=component_id, content=content, error_type=error_type)
    top = RunEvent.objects.unscoped("the reaper ends every user's lost runs").filter(run_id=run.pk).aggregate(top=Max("event_index"))["top"]
    index = 0 if top is None else top + 1
    run_events_append(run=run, events=[event], first_index=index)
    indexed = {**event, "event_index": index}
    transaction.on_commit(lambda: publish(run.pk, indexed))
    return indexed
