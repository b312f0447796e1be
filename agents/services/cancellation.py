"""Cancellation intents: instant within a process, visible to every process through the database.

A run checks ``is_cancelled()`` between steps. The local check is a set lookup; the database is
asked at most every ``poll_interval`` seconds per run, so a cancel sent to any replica reaches
the process running the run within that interval.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable

from django.db import IntegrityError, transaction

from ..models import CancelIntent

_local: set[str] = set()
_lock = threading.Lock()


def cancel_request(*, run_id: str, user_id: str | None) -> None:
    """Record that ``run_id`` should stop. Idempotent; works before the run exists."""
    with _lock:
        _local.add(run_id)
    try:
        with transaction.atomic():
            CancelIntent.objects.create(run_id=run_id, user_id=user_id)
    except IntegrityError:
        pass  # already requested


def cancel_clear(*, run_id: str) -> None:
    """Forget an intent (an operator requeues a cancelled run)."""
    with _lock:
        _local.discard(run_id)
    CancelIntent.objects.unscoped("keyed by run id; the caller checked access to the run").filter(pk=run_id).delete()


# A check this long after the previous one follows a blocking step (a model or tool call), where a
# cancel is most likely to have arrived: ask the database then, whatever the poll interval.
AFTER_A_PAUSE = 0.05


def cancel_checker(run_id: str, *, poll_interval: float = 0.5, clock: Callable[[], float] = time.monotonic) -> Callable[[], bool]:
    """A cheap ``is_cancelled()`` for one run: the database is asked at most every
    ``poll_interval`` seconds while checks come quickly (a token stream), and at the first check
    after a pause (a model or tool call returned)."""
    state = {"next_poll": clock() + poll_interval, "last_check": clock(), "cancelled": False}

    def is_cancelled() -> bool:
        if state["cancelled"] or run_id in _local:
            state["cancelled"] = True
            return True
        now = clock()
        paused = now - state["last_check"] >= AFTER_A_PAUSE
        state["last_check"] = now
        if now >= state["next_poll"] or paused:
            state["next_poll"] = now + poll_interval
            if CancelIntent.objects.unscoped("keyed by run id; polled by the process running it").filter(pk=run_id).exists():
                state["cancelled"] = True
        return state["cancelled"]

    return is_cancelled


def cancel_local(run_id: str) -> None:
    """Cancel within this process only (a streaming client went away)."""
    with _lock:
        _local.add(run_id)


def cancelled_locally(run_id: str) -> bool:
    """Whether this process has been told to stop ``run_id`` (e.g. its stream's client left)."""
    with _lock:
        return run_id in _local


def forget_local(run_id: str) -> None:
    with _lock:
        _local.discard(run_id)
