"""Cancellation intents: instant within a process, visible to every process through the database.

A run checks ``is_cancelled()`` between steps, and per streamed token: a dict lookup, never a
query. The process's watch thread (jobs.services.watch) asks the database for the intents of
every run executing in the process at once, one query every ``POLL_SECONDS``
(``cancel_poll``), so a cancel sent to any replica reaches the process running the run within
that interval, whatever the number of runs in flight. (A query per run, a check after every
streamed token, was a fifth of a streamed run's CPU at 128 in flight: bench/README.md.)

An intent names whose run it may stop (``user_id``; None: whoever owns it), and a run obeys only
the intents that name its owner or nobody, so a caller who learns another user's run id still
cannot stop it, before or after the run is recorded.
"""
from __future__ import annotations

import threading

from django.db import IntegrityError, transaction

from core.db import release_connections

from ..models import CancelIntent

ANY_OWNER = None
# run id -> the owners whose run it may stop (ANY_OWNER: whoever's).
_local: dict[str, set[str | None]] = {}
# The runs executing in this process whose intents the watch's poll asks for: run id -> [owner,
# the checkers enrolled for it (a workflow's parallel branches check their parent run's too)].
_polled: dict[str, list] = {}
_lock = threading.Lock()
# How often the watch asks the database for the intents of the process's runs.
POLL_SECONDS = 0.5
# Run ids asked for in one statement (SQLite's bound on a statement's variables is far above).
_POLL_CHUNK = 500


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


class CancelChecker:
    """``is_cancelled()`` for ``owner``'s run executing in this process: a dict lookup. From its
    first check until ``release()`` or the run's end (``forget_local``), the watch's poll also
    asks the database for the run's intents, so a cancel sent to another process reaches it."""

    __slots__ = ("run_id", "owner", "enrolled")

    def __init__(self, run_id: str, owner: str | None) -> None:
        self.run_id, self.owner, self.enrolled = run_id, owner, False

    def __call__(self) -> bool:
        if not self.enrolled:
            self.enrolled = True
            with _lock:
                _polled.setdefault(self.run_id, [self.owner, 0])[1] += 1
        return _applies(_local.get(self.run_id, ()), self.owner)

    def release(self) -> None:
        """This checker is done (its run goes on elsewhere): stop polling for it."""
        if self.enrolled:
            self.enrolled = False
            with _lock:
                entry = _polled.get(self.run_id)
                if entry is not None:
                    entry[1] -= 1
                    if entry[1] <= 0:
                        del _polled[self.run_id]


def cancel_checker(run_id: str, owner: str | None) -> CancelChecker:
    return CancelChecker(run_id, owner)


def cancel_poll() -> int:
    """Ask the database once for the intents of every run this process executes (the watch
    thread calls this every ``POLL_SECONDS``); an intent that applies to its run's owner stops
    the run at its next check. Returns the number of runs newly cancelled."""
    with _lock:
        polled = {run_id: entry[0] for run_id, entry in _polled.items()}
    if not polled:
        return 0
    found = 0
    ids = list(polled)
    try:
        for start in range(0, len(ids), _POLL_CHUNK):
            intents = CancelIntent.objects.unscoped("keyed by run id; bound to each run's owner below").filter(
                run_id__in=ids[start:start + _POLL_CHUNK]
            ).values_list("run_id", "user_id")
            for run_id, user_id in intents:
                if user_id is ANY_OWNER or user_id == polled[run_id]:
                    with _lock:
                        if run_id not in _polled:
                            continue  # it ended meanwhile: nothing left to stop
                        owners = _local.setdefault(run_id, set())
                        found += user_id not in owners
                        owners.add(user_id)
    finally:
        release_connections()
    return found


def cancel_local(run_id: str) -> None:
    """Cancel within this process only (a streaming client went away, a lease was lost)."""
    with _lock:
        _local.setdefault(run_id, set()).add(ANY_OWNER)


def cancelled_locally(run_id: str) -> bool:
    """Whether this process has been told to stop ``run_id`` (e.g. its stream's client left)."""
    with _lock:
        return bool(_local.get(run_id))


def forget_local(run_id: str) -> None:
    """The run has ended here: forget its intents and stop polling for them."""
    with _lock:
        _local.pop(run_id, None)
        _polled.pop(run_id, None)
