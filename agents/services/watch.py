"""One thread per process looks after the runs the process executes, between their events."""
from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

from django.conf import settings
from django.db import connections

from core.db import release_connections
from core.logging import Throttle

from .cancellation import POLL_SECONDS, cancel_poll
from ..pipeline.eventlog import FLUSH_SECONDS, write_quiet
from .liveness import process_beat

logger = logging.getLogger("agno_site.jobs")


class Watch:
    """One thread per process looks after the runs the process executes: it renews their leases
    (a background job's, an inline run's heartbeat), writes the events of a run that has gone
    quiet, and asks the database for their cancel intents (one query for all of them,
    agents.services.cancellation).

    (Two threads per job did it before, started and joined around every run: about 2 ms of a
    worker's time per job, bench/README.md.) The thread holds the watch's lock while it works on
    the jobs, so once ``remove()`` returns it will not touch that job again. It has its own
    database connection while there are jobs to look after.

    A thread never waits for that lock while it holds a pooled database connection: the watch,
    holding the lock, may be waiting for a connection from the same pool (a heartbeat, a quiet
    run's events), and with every connection held by threads waiting for the lock neither would
    move until the pool's timeout failed them all (seen at 256 streams through a pool of 10).
    """

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._jobs: dict[str, tuple[Any, ...]] = {}
        self._thread: threading.Thread | None = None
        self._pid = 0

    def add(self, key: str, *watched: Any) -> None:
        """Look after ``watched`` (objects with ``tick(now)``, called in order) until ``remove(key)``."""
        release_connections()
        with self._condition:
            idle = not self._jobs
            self._jobs[key] = watched
            # Started on first use, and again in a forked child (threads do not survive fork).
            if self._thread is None or not self._thread.is_alive() or self._pid != os.getpid():
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._run, name="agno-job-watch", daemon=True)
                self._thread.start()
            elif idle:
                self._condition.notify()  # a busy watch sees the new run at its next tick

    def remove(self, job_id: str) -> None:
        release_connections()
        with self._condition:
            self._jobs.pop(job_id, None)

    def _run(self) -> None:
        next_tick = next_poll = 0.0
        next_beat: float | None = None
        beaten: set[str] = set()  # the workers whose liveness the last beat wrote
        try:
            while True:
                to_beat: set[str] = set()
                with self._condition:
                    if not self._jobs:
                        connections.close_all()  # an idle process holds no connection for it
                        self._condition.wait()
                        continue
                    # Every FLUSH_SECONDS, not at every add(): at tens of runs started a second,
                    # waking for each would walk every run in flight as often.
                    now = time.monotonic()
                    if now < next_tick:
                        self._condition.wait(next_tick - now)
                        continue
                    next_tick = now + FLUSH_SECONDS
                    if now >= next_poll:
                        next_poll = now + POLL_SECONDS
                        try:
                            cancel_poll()
                        except Exception:
                            if _failures.due():
                                logger.exception("cancel poll failed; retrying")
                            connections.close_all()
                    quiet = []
                    for key, watched in list(self._jobs.items()):
                        try:
                            for item in watched:
                                item.tick(now)
                                if getattr(item, "batched", False) and item.flush_due(now):
                                    quiet.append(item)
                        except Exception:
                            # The database went away: try again at the next tick, on a new connection.
                            if _failures.due():
                                logger.exception("run %s: heartbeat or event flush failed; retrying", key)
                            connections.close_all()
                        # Back to the pool before the next run's lock is taken (its thread may
                        # hold that lock while it waits for a connection).
                        release_connections()
                    # The liveness of the workers whose jobs are here: every heartbeat interval,
                    # and at once for a worker not beaten yet (its first job just started).
                    # Inline runs' heartbeats go with it, one statement for all (``beats_together``).
                    workers = {item.worker for watched in self._jobs.values() for item in watched if isinstance(getattr(item, "worker", None), str)}
                    interval = min(settings.AGENTOS_PROCESS_HEARTBEAT_SECONDS, settings.AGENTOS_BACKGROUND_LEASE_SECONDS / 3)
                    if next_beat is None:
                        next_beat = now + interval  # a run's first heartbeat is its start's own row
                    if now >= next_beat:
                        next_beat = now + interval
                        to_beat = workers
                        together: dict[Any, list[Any]] = {}
                        for watched in self._jobs.values():
                            for item in watched:
                                if getattr(item, "beats_together", None) is not None:
                                    together.setdefault(item.beats_together, []).append(item)
                        try:
                            for beat, items in together.items():
                                beat(items)
                        except Exception:
                            if _failures.due():
                                logger.exception("inline runs' heartbeat failed; retrying")
                            connections.close_all()
                        release_connections()
                    elif not workers <= beaten:
                        to_beat = workers
                    if quiet:
                        try:
                            write_quiet(quiet)
                        except Exception:
                            if _failures.due():
                                logger.exception("writing %d quiet runs' events failed; retrying", len(quiet))
                            connections.close_all()
                # The workers' liveness is written outside the lock: it names workers, not the
                # jobs that remove() hands back, and a write that waits (SQLite's one writer, a
                # pool at its bound) must not keep remove() and add() waiting with it.
                if to_beat:
                    try:
                        process_beat(to_beat)
                        beaten = to_beat
                    except Exception:
                        if _failures.due():
                            logger.exception("process heartbeat failed; retrying")
                        connections.close_all()
                    release_connections()
        finally:
            connections.close_all()


_failures = Throttle(30.0)
watch = Watch()
