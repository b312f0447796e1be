"""Reads of sessions and runs, always through the caller's scope (core.tenancy.scope_queryset)."""
from __future__ import annotations

from typing import Any

from core.tenancy import scope_queryset

from .models import Run, RunEvent, RunStatus, Session

# Agno leaves these out of the model's history window (they never produced a usable answer).
_NOT_IN_HISTORY = (RunStatus.PAUSED, RunStatus.CANCELLED, RunStatus.ERROR, RunStatus.REGENERATED)


def session_get(*, user: Any, session_id: str) -> Session | None:
    return scope_queryset(Session.objects, user).filter(pk=session_id).first()


def run_get(*, user: Any, run_id: str, session_id: str | None = None) -> Run | None:
    runs = scope_queryset(Run.objects, user).filter(pk=run_id)
    if session_id is not None:
        runs = runs.filter(session_id=session_id)
    return runs.first()


def run_history(*, user: Any, session_id: str, limit: int, exclude_run_id: str | None = None) -> list[dict[str, Any]]:
    """The last ``limit`` finished top-level runs of a session, oldest first, as RunOutput dicts.

    Read by run index through the (session_id, run_index) index: the cost depends on ``limit``,
    never on the session's length.
    """
    if limit <= 0:
        return []
    runs = (
        scope_queryset(Run.objects, user)
        .filter(session_id=session_id, parent_run_id__isnull=True)
        .exclude(status__in=_NOT_IN_HISTORY)
    )
    if exclude_run_id:
        runs = runs.exclude(pk=exclude_run_id)
    rows = list(runs.order_by("-run_index").values_list("run_data", flat=True)[:limit])
    rows.reverse()
    return rows


def run_events_after(*, user: Any, run_id: str, after_index: int | None) -> list[RunEvent]:
    events = scope_queryset(RunEvent.objects, user).filter(run_id=run_id)
    if after_index is not None:
        events = events.filter(event_index__gt=after_index)
    return list(events.order_by("event_index"))
