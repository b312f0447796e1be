"""The embedded worker: with no broker configured, each web process executes the job table itself.

Same table, same claims, leases, fencing and reaping as the Celery workers, so the guarantees
are the same: a job accepted before a restart is picked up after it.
"""
from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.db import OperationalError, connections

from core.db import release_connections
from core.logging import Throttle

from .services import background  # noqa: F401  (registers the run jobs' handler)
from .services.inline import inline_runs_reap
from .services.jobs import job_claim, job_reap, job_run, worker_name

logger = logging.getLogger("agno_site.jobs")

IDLE_POLL_SECONDS = 1.0


class EmbeddedWorker:
    def __init__(self, threads: int) -> None:
        self.name = worker_name()
        self.size = threads
        self._condition = threading.Condition()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []

    @property
    def running(self) -> bool:
        return any(thread.is_alive() for thread in self._threads)

    def start(self) -> EmbeddedWorker:
        """Start the job threads and the reaper; restart any of them that has ended."""
        if self.size <= 0:
            return self
        with self._condition:
            if self._threads and all(thread.is_alive() for thread in self._threads):
                return self
            first = not self.running
            if first:
                self._stopping.clear()
            wanted = [(self._work, (f"{self.name}-{i}",), f"agno-job-{i}") for i in range(self.size)]
            wanted.append((self._reap, (), "agno-reaper"))
            alive = {thread.name: thread for thread in self._threads if thread.is_alive()}
            self._threads = []
            for target, args, name in wanted:
                thread = alive.get(name)
                if thread is None:
                    thread = threading.Thread(target=target, args=args, name=name, daemon=True)
                    thread.start()
                    if not first:
                        logger.warning("embedded worker %s: restarted its thread %s", self.name, name)
                self._threads.append(thread)
        if first:
            logger.info("embedded worker %s started with %d thread(s)", self.name, self.size)
        return self

    def wake(self) -> None:
        self.start()
        with self._condition:
            self._condition.notify_all()

    def stop(self, timeout: float = 10.0) -> None:
        self._stopping.set()
        with self._condition:
            self._condition.notify_all()
        for thread in self._threads:
            thread.join(timeout=timeout)
        self._threads = []

    def _work(self, worker: str) -> None:
        try:
            busy = False  # just finished a job: claim again without probing first
            while not self._stopping.is_set():
                try:
                    job = job_claim(worker=worker, probe=not busy)
                except OperationalError:  # SQLite busy beyond its timeout: try again shortly
                    job = None
                except Exception:
                    # The database went away (a lost connection, a failover): this thread must
                    # outlive it, or accepted jobs would wait for a restart. Drop the connection
                    # and claim again after a pause.
                    _log_claim_failure(worker)
                    connections.close_all()
                    job = None
                busy = job is not None
                if job is not None:
                    try:
                        job_run(job, worker)
                    except Exception:
                        logger.exception("job %s crashed its worker thread; the reaper will settle it", job.pk)
                    continue
                release_connections()  # an idle thread holds no pooled connection
                with self._condition:
                    self._condition.wait(IDLE_POLL_SECONDS)
        finally:
            connections.close_all()

    def _reap(self) -> None:
        try:
            while not self._stopping.wait(settings.AGENTOS_REAPER_INTERVAL_SECONDS):
                try:
                    job_reap()
                    inline_runs_reap()
                except Exception:
                    logger.exception("reaper pass failed")
        finally:
            connections.close_all()


_claim_failures = Throttle(30.0)


def _log_claim_failure(worker: str) -> None:
    if _claim_failures.due():
        logger.exception("embedded worker %s could not claim a job; retrying", worker)


_worker: EmbeddedWorker | None = None
_lock = threading.Lock()


def embedded_worker() -> EmbeddedWorker:
    global _worker
    with _lock:
        if _worker is None:
            _worker = EmbeddedWorker(settings.EMBEDDED_WORKER_THREADS)
        return _worker
