"""Cancellation intents: instant within a process, visible to every process through the database.

A run checks ``is_cancelled()`` between steps. The local check is a dict lookup; the database is
asked at most every ``poll_interval`` seconds per run, so a cancel sent to any replica reaches
the process running the run within that interval.

An intent names whose run it may stop (``user_id``; None: whoever owns it), and a run obeys only
the intents that name its owner or nobody, so a caller who learns another user's run id still
cannot stop it, before or after the run is recorded.
"""
from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor

from django.db import IntegrityError, transaction
from django.db.models import Q

from core.db import release_connections

from ..models import CancelIntent

ANY_OWNER = None
# run id -> the owners whose run it may stop (ANY_OWNER: whoever's).
_local: dict[str, set[str | None]] = {}
_lock = threading.Lock()
# The run loop calls is_cancelled on its event loop, where the ORM refuses to run: the poll's one
# query goes to these threads. A few suffice: a poll is one indexed lookup, every poll_interval.
_poll_pool: ThreadPoolExecutor | None = None
_poll_pool_pid = 0


def _poll_threads() -> ThreadPoolExecutor:
    global _poll_pool, _poll_pool_pid
    with _lock:
        # A forked child (Celery's prefork pool) inherits the pool object but none of its threads.
        if _poll_pool is None or _poll_pool_pid != os.getpid():
            _poll_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="agno-cancel-poll")
            _poll_pool_pid = os.getpid()
        return _poll_pool


def _applies(owners: set[str | None], owner: str | None) -> bool:
    return ANY_OWNER in owners or (owner is not None and owner in owners)


def cancel_request(*, run_id: str, user_id: str | None) -> None:
    """Record that ``run_id`` should stop if it is ``user_id``'s (None: whoever's run it is).
    Idempotent; works before the run exists."""
    with _lock:
        _local.setdefault(run_id, set()).add(user_id)
    if CancelIntent.objects.unscoped("keyed by run id and the requester's bound").filter(run_id=run_id, user_id=user_id).exists():
        return
    try:
        with transaction.atomic():
            CancelIntent.objects.create(run_id=run_id, user_id=user_id)
    except IntegrityError:
        pass  # asked at the same moment by the same caller


def cancel_clear(*, run_id: str) -> None:
    """Forget an intent (an operator requeues a cancelled run)."""
    with _lock:
        _local.pop(run_id, None)
    CancelIntent.objects.unscoped("keyed by run id; the caller checked access to the run").filter(run_id=run_id).delete()


# A check this long after the previous one follows a blocking step (a model or tool call), where a
# cancel is most likely to have arrived: ask the database then, whatever the poll interval.
AFTER_A_PAUSE = 0.05


def cancel_checker(run_id: str, owner: str | None, *, poll_interval: float = 0.5, clock: Callable[[], float] = time.monotonic) -> Callable[[], bool | Awaitable[bool]]:
    """A cheap ``is_cancelled()`` for ``owner``'s run: the database is asked at most every
    ``poll_interval`` seconds while checks come quickly (a token stream), and at the first check
    after a pause (a model or tool call returned). Called on a running event loop, a check that
    asks the database returns an awaitable (the query runs in a poll thread)."""
    state = {"next_poll": clock() + poll_interval, "last_check": clock(), "cancelled": False}
    binding = Q(user_id__isnull=True) if owner is None else Q(user_id__isnull=True) | Q(user_id=owner)

    def is_cancelled() -> bool:
        if state["cancelled"] or _applies(_local.get(run_id, ()), owner):
            state["cancelled"] = True
            return True
        now = clock()
        paused = now - state["last_check"] >= AFTER_A_PAUSE
        state["last_check"] = now
        if now >= state["next_poll"] or paused:
            state["next_poll"] = now + poll_interval
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return poll()
            return loop.run_in_executor(_poll_threads(), poll)
        return state["cancelled"]

    def poll() -> bool:
        try:
            if CancelIntent.objects.unscoped("keyed by run id, bound to its owner").filter(binding, run_id=run_id).exists():
                state["cancelled"] = True
        finally:
            release_connections()  # the run goes back to waiting on its model
        return state["cancelled"]

    return is_cancelled


def cancel_local(run_id: str) -> None:
    """Cancel within this process only (a streaming client went away, a lease was lost)."""
    with _lock:
        _local.setdefault(run_id, set()).add(ANY_OWNER)


def cancelled_locally(run_id: str) -> bool:
    """Whether this process has been told to stop ``run_id`` (e.g. its stream's client left)."""
    with _lock:
        return bool(_local.get(run_id))


def forget_local(run_id: str) -> None:
    with _lock:
        _local.pop(run_id, None)
