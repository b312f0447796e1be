"""How many inline and streamed runs one user may have in progress at once (``RUN_MAX_PER_USER``).

A run takes a slot when it is accepted and gives it back when it ends (completed, failed,
cancelled, or its client gone). Over the cap a caller is refused at once (429 with
``Retry-After``) instead of waiting in line behind its own backlog, so one user's many streams
cannot take the capacity another user's run needs. Background runs are bounded by the job queue
instead (jobs.services.claims).

The count is kept per web process, in memory: the capacity it protects (the run threads today,
the event loop's model calls after the engine rewrite) is per process too, and a count that lives
with the runs cannot outlive them, as a shared counter would when a process dies holding slots.
With several replicas a user may have ``RUN_MAX_PER_USER`` runs in each.

Nothing here depends on how a run waits: the slot is taken where a run is submitted and given
back where it ends, whatever thread or coroutine that is.
"""
from __future__ import annotations

import logging
import threading

from django.conf import settings

from core.errors import DomainError

logger = logging.getLogger("agno_site.runs")

# What a refused caller is told to wait: about one short model answer.
RETRY_AFTER_SECONDS = 5


class TooManyRuns(DomainError):
    status_code, error_code, retry_after = 429, "too_many_runs", RETRY_AFTER_SECONDS

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"Too many runs in progress for this user: at most {limit} at once (RUN_MAX_PER_USER); "
            "retry when one has ended, or submit with background=true"
        )
        self.limit = limit


class RunSlots:
    """The runs in progress per key, in this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, int] = {}

    def acquire(self, key: str, *, limit: int) -> Slot:
        """A slot for ``key``, or TooManyRuns when it holds ``limit`` already (0: no limit)."""
        with self._lock:
            held = self._held.get(key, 0)
            if limit and held >= limit:
                raise TooManyRuns(limit)
            self._held[key] = held + 1
        return Slot(self, key)

    def held(self, key: str) -> int:
        with self._lock:
            return self._held.get(key, 0)

    def _give_back(self, slot: Slot) -> bool:
        with self._lock:
            if slot._released:
                return False
            slot._released = True
            left = self._held[slot.key] - 1
            if left:
                self._held[slot.key] = left
            else:
                del self._held[slot.key]  # memory follows the users with runs in progress
            return True


class Slot:
    """One run's place; ``release()`` may be called any number of times, from any thread.

    Use it as a context manager where the run ends in the same block. A slot that is dropped
    unreleased (the server discarded a prepared stream whose client left before it started) is
    released when it is collected, so it cannot stay taken.
    """

    __slots__ = ("_owner", "key", "_released")

    def __init__(self, owner: RunSlots, key: str) -> None:
        self._owner = owner
        self.key = key
        self._released = False

    def release(self) -> None:
        self._owner._give_back(self)

    def __enter__(self) -> Slot:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def __del__(self) -> None:
        if self._owner._give_back(self):
            logger.info("a run slot was dropped unreleased and is released now (its run never started)")


_slots = RunSlots()


def run_slot_key(*, owner_id: str | None, client_address: str) -> str:
    """Whose slots a run takes: the user it belongs to (``PreparedRun.owner_id``).

    Under user isolation that is the caller. For the security key or an admin it is the user the
    run is for (a backend acting for its end users gives each of them a share, not one share for
    all). On an open server it is the requested ``user_id``: the only identity that server has,
    and it already rules everything else (sessions, memories), so keying by address would add no
    boundary while it put every user behind one proxy into one share. A run for no user at all
    is keyed by the client's address.
    """
    return f"user:{owner_id}" if owner_id else f"addr:{client_address}"


def run_slot_acquire(key: str) -> Slot:
    """A slot for one inline or streamed run of ``key``; raises TooManyRuns over ``RUN_MAX_PER_USER``."""
    return _slots.acquire(key, limit=settings.RUN_MAX_PER_USER)


def runs_in_progress(key: str) -> int:
    return _slots.held(key)
