"""The embedded worker: with no broker configured, each web process executes the job table itself.

Same table, same claims, leases, fencing and reaping as the Celery workers, and the same engine
(jobs.loop_worker: up to WORKER_RUNS_PER_PROCESS jobs on one event loop), so the guarantees are
the same: a job accepted before a restart is picked up after it.

Only a long-lived process runs it: one that says so with ``serve_jobs()`` (a process that loads
the ASGI or WSGI application, ``manage.py scheduler_tick --loop``). Any other process that submits
a job (a ``manage.py shell``, any management command, a script) only commits it: a worker of its
own would claim the job and vanish with it at exit, and the job would fail a lease later as
"Worker lost".
"""
from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.db import connections

from core.services.readiness import reaper_pass_record

from .loop_worker import LoopWorker
from .services.jobs import worker_name
from .services.reaper import reap

logger = logging.getLogger("agno_site.jobs")


class EmbeddedWorker:
    def __init__(self) -> None:
        self.name = worker_name()
        self.loop = LoopWorker(settings.WORKER_RUNS_PER_PROCESS, name=self.name)
        self._stopping = threading.Event()
        self._reaper: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return settings.EMBEDDED_WORKER and _serving

    @property
    def running(self) -> bool:
        return self.loop.running

    def start(self) -> EmbeddedWorker:
        """Start the job loop and the reaper; restart either if it has ended."""
        if not self.enabled:
            return self
        with self._lock:
            if not self.loop.running:
                self._stopping.clear()
                self.loop.start()
            if self._reaper is None or not self._reaper.is_alive():
                self._reaper = threading.Thread(target=self._reap, name="agno-reaper", daemon=True)
                self._reaper.start()
        return self

    def wake(self) -> None:
        if self.enabled:
            self.start()
            self.loop.wake()

    def stop(self, timeout: float = 10.0) -> None:
        self._stopping.set()
        self.loop.stop(timeout)
        if self._reaper is not None:
            self._reaper.join(timeout)
        self._reaper = None

    def _reap(self) -> None:
        try:
            while not self._stopping.wait(settings.AGENTOS_REAPER_INTERVAL_SECONDS):
                try:
                    reap()
                    reaper_pass_record()  # what GET /ready reads
                except Exception:
                    logger.exception("reaper pass failed")
                finally:
                    # Each pass on a fresh connection: one that failed (the database restarted,
                    # the session was terminated) must not fail every pass after it.
                    connections.close_all()
        finally:
            connections.close_all()


_worker: EmbeddedWorker | None = None
_lock = threading.Lock()
# Whether this process is long-lived and runs the embedded worker (``serve_jobs``).
_serving = False


def serve_jobs() -> None:
    """This process serves (until it is stopped): it may run the embedded worker. Short-lived
    processes never call this, so they never claim a job."""
    global _serving
    _serving = True


def embedded_worker() -> EmbeddedWorker:
    global _worker
    with _lock:
        if _worker is None:
            _worker = EmbeddedWorker()
        return _worker


def stop_embedded_worker(timeout: float) -> None:
    """Stop this process's embedded worker, if it has one (the server's shutdown): the jobs in
    flight get up to ``timeout`` seconds to end."""
    if _worker is not None:
        _worker.stop(timeout=timeout)
