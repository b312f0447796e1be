"""Following a run from any process: stored events after an index, then live ones, in order.

Events carry a per-run ``event_index``. The follower subscribes before reading the database,
emits strictly in index order (holding early live events until the gap is filled from the
database) and never twice, and ends when the run reaches a terminal or paused status and every
stored event has been sent. A new attempt of a background run starts with an announcement
(``sessions.selectors.ATTEMPT_STARTED``) numbered above anything the lost attempt can have sent:
a follower goes on from it, and the events it voids are left out of every replay. The database is polled whenever the live path is quiet, so a lost
live event, or Redis being down, only delays delivery.
"""
from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from asgiref.sync import sync_to_async

from core.db import release_connections
from core.tenancy import scope_queryset
from sessions.models import TERMINAL_STATUSES, Run, RunEvent, RunStatus
from sessions.selectors import is_attempt_started, run_events_after, superseded_dropped

from engine import TERMINAL_EVENTS
from engine.workflow import WORKFLOW_TERMINAL_EVENTS
from .live import Subscription

POLL_SECONDS = 0.25
_ENDS = set(TERMINAL_STATUSES) | {RunStatus.PAUSED}
# The events that end a run's stream (an agent's, a team's, a workflow's).
ENDING_EVENTS = TERMINAL_EVENTS | {f"Team{name}" for name in TERMINAL_EVENTS} | WORKFLOW_TERMINAL_EVENTS


def _stored_after(owner: str | None, run_id: str, after: int) -> list[dict[str, Any]]:
    rows = run_events_after(user=owner, run_id=run_id, after_index=after)
    return superseded_dropped([{**row.payload, "event_index": row.event_index} for row in rows])


def _status(owner: str | None, run_id: str) -> str | None:
    return scope_queryset(Run.objects, owner).filter(pk=run_id).values_list("status", flat=True).first()


def _ending(owner: str | None, run_id: str) -> dict[str, Any] | None:
    """An ended run's last stored event, if it is the event that ends its stream."""
    row = scope_queryset(RunEvent.objects, owner).filter(run_id=run_id).order_by("-event_index").first()
    if row is None or row.event not in ENDING_EVENTS:
        return None
    return {**row.payload, "event_index": row.event_index}


def _is_ending(event: dict[str, Any] | None) -> bool:
    return event is not None and event.get("event") in ENDING_EVENTS


async def _missing_ending(owner: str | None, run_id: str, last: dict[str, Any] | None) -> dict[str, Any] | None:
    """The ending of an ended run whose stream so far (``last``: its last event) lacks one.

    A process that died sent its followers events it had not yet stored (up to a flush's worth);
    the reaper's RunError then takes the next index after the last *stored* one, an index such a
    follower may have seen already. A stream that resumes from there must still end, so it gets
    the stored ending whatever its index."""
    if _is_ending(last):
        return None
    ending = await _read(_ending)(owner, run_id)
    if ending is None or (last is not None and ending["event_index"] == last.get("event_index")):
        return None
    return ending


def _event_count(owner: str | None, run_id: str) -> int:
    return scope_queryset(RunEvent.objects, owner).filter(run_id=run_id).count()


def _read(fn):
    """``fn`` in the request's thread, its pooled connection handed back after each call: a
    follower waits for minutes between short reads and must not hold a connection meanwhile."""

    def read(*args: Any) -> Any:
        try:
            return fn(*args)
        finally:
            release_connections()

    return sync_to_async(read)


async def resume(run: Run, after: int = -1) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """A run the caller may see, from ``after``: ``("event", event)`` items and AgentOS's controls.

    Controls are ``("replay" | "catch_up" | "subscribed", data)``: an ended run replays its stored
    events; a queued or running one catches up from the database and is then followed live.
    SSE frames them as ``event:`` frames, the WebSocket as JSON messages.
    """
    owner = run.user_id or None
    events = await _read(_stored_after)(owner, run.pk, after)
    if run.status in _ENDS:
        ending = await _missing_ending(owner, run.pk, events[-1] if events else None) if after >= 0 else None
        if ending is not None:
            events.append(ending)
        if not events and after < 0 and await _read(_event_count)(owner, run.pk) == 0:
            yield "replay", {
                "run_id": run.pk, "status": run.status, "total_events": 0,
                "message": f"Run {run.status} with no stored events: a run submitted without streaming keeps only its final output.",
            }
            return
        yield "replay", {
            "run_id": run.pk, "status": run.status, "total_events": len(events),
            "message": "Run completed. Replaying stored events from database.",
        }
        for event in events:
            yield "event", event
        return
    total = await _read(_event_count)(owner, run.pk)
    yield "catch_up", {
        "run_id": run.pk, "status": "running", "missed_events": len(events), "current_event_count": total,
        "message": f"Catching up on {len(events)} missed events.",
    }
    for event in events:
        after = event["event_index"]
        yield "event", event
    if _is_ending(events[-1] if events else None) and await _read(_status)(owner, run.pk) in _ENDS:
        # It ended (or paused) between reading its status and its events: the catch-up carried
        # the ending, which is the stream's last frame; there is nothing left to subscribe to.
        return
    yield "subscribed", {
        "run_id": run.pk, "status": "running", "current_event_count": total,
        "message": "Subscribed to agent run. Receiving live events.",
    }
    # The run may have ended between reading its status and its events: the catch-up then
    # carried its ending already, and the follow must not send it again.
    async for event in follow(run.pk, owner, after, sent=events[-1] if events else None):
        yield "event", event


async def follow(run_id: str, owner: str | None, after: int = -1, *, sent: dict[str, Any] | None = None) -> AsyncIterator[dict[str, Any]]:
    """Yield the run's events with ``event_index`` > ``after`` until the run ends (``sent``:
    the last event the caller has already sent, the one at ``after``)."""
    pending: dict[int, dict[str, Any]] = {}
    last: dict[str, Any] | None = sent  # the last event sent
    async with Subscription(run_id) as live:
        stored = await _read(_stored_after)(owner, run_id, after)
        for event in stored:
            pending[event["event_index"]] = event
        while True:
            after = _past_announced(pending, after)
            while after + 1 in pending:
                after += 1
                last = pending.pop(after)
                yield last
            pending = {index: event for index, event in pending.items() if index > after}
            event = await live.get(timeout=POLL_SECONDS)
            if event is not None and "event_index" in event:
                if event["event_index"] > after:
                    pending[event["event_index"]] = event
                if after + 1 in pending or is_attempt_started(event):
                    continue
            # Quiet, or a gap: the database has every event that was flushed.
            for stored_event in await _read(_stored_after)(owner, run_id, after):
                pending.setdefault(stored_event["event_index"], stored_event)
            if after + 1 in pending or _past_announced(pending, after) != after:
                continue
            status = await _read(_status)(owner, run_id)
            if status is None:
                return
            if status in _ENDS:
                # The final write commits the last events with the status: one more read gets them.
                for stored_event in await _read(_stored_after)(owner, run_id, after):
                    pending.setdefault(stored_event["event_index"], stored_event)
                after = _past_announced(pending, after)
                for index in sorted(pending):
                    if index > after:
                        after = index
                        last = pending[index]
                        yield last
                ending = await _missing_ending(owner, run_id, last)
                if ending is not None:
                    yield ending
                return


def _past_announced(pending: dict[int, dict[str, Any]], after: int) -> int:
    """Where to go on from: just before the latest new attempt's announcement among ``pending``
    (what came before it is void, and the lost attempt can never store the gap), else ``after``.
    Pending events before it are dropped."""
    announced = [index for index, event in pending.items() if index > after and is_attempt_started(event)]
    if not announced:
        return after
    start = max(announced)
    for index in [index for index in pending if index < start]:
        del pending[index]
    return start - 1
