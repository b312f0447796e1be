"""One event loop per worker process that carries many background runs at once.

A run waiting on its model holds no thread: the loop claims jobs while it has room
(``WORKER_RUNS_PER_PROCESS``) and runs each as a task, awaiting its type's registered execute
(jobs.registry: a run's coroutine, or a handler with a sync body, such as knowledge ingestion or
a metrics refresh, in a run thread); a job of a type nothing registered fails with that reason. The
claims, leases, fencing and the reaper are the job table's, as for every worker: a process that
dies (kill -9) loses no accepted job, its leases expire and the reaper gives the jobs to another.

The embedded worker (no broker) and a Celery worker process (``drain_queue`` starts and wakes its
process's loop) use it alike.
"""
from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading

from django.conf import settings
from django.db import OperationalError

from core.logging import Throttle

from .services.executor import in_run_thread, job_slot
from .services.claims import job_claim
from .services.jobs import job_execute, worker_name

logger = logging.getLogger("agno_site.jobs")

IDLE_POLL_SECONDS = 1.0


class LoopWorker:
    def __init__(self, capacity: int, *, name: str | None = None) -> None:
        self.capacity = capacity
        self.name = name or worker_name()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._wakeup: asyncio.Event | None = None
        self._stopping = False
        self._tasks: set[asyncio.Task[None]] = set()
        # Tasks that only wait for other jobs (``parked``): they leave their place to another.
        self._parked: set[asyncio.Task[None]] = set()
        self._lock = threading.Lock()
        self._pid = 0

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self._pid == os.getpid()

    def start(self) -> LoopWorker:
        """Start the loop's thread (again in a forked child, where threads do not survive)."""
        with self._lock:
            if self.running or self.capacity <= 0:
                return self
            self._stopping = False
            self._pid = os.getpid()
            self._tasks = set()
            self._parked = set()
            ready = threading.Event()
            self._thread = threading.Thread(target=self._serve, args=(ready,), name="agno-job-loop", daemon=True)
            self._thread.start()
            ready.wait(5)
        logger.info("worker %s: carrying up to %d jobs on one event loop", self.name, self.capacity)
        return self

    def wake(self) -> None:
        """There may be work: claim now rather than at the next poll (from any thread)."""
        self.start()
        self._signal()

    def _signal(self) -> None:
        loop, wakeup = self._loop, self._wakeup
        if loop is not None and wakeup is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(wakeup.set)
            except RuntimeError:  # the loop is closing
                pass

    def stop(self, timeout: float = 10.0) -> None:
        """Stop claiming; wait up to ``timeout`` seconds for the jobs in flight, then stop the loop
        (jobs still running are left to their leases and the reaper)."""
        self._stopping = True
        self._signal()
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        self._thread = None

    def _serve(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        self._wakeup = asyncio.Event()
        ready.set()
        try:
            loop.run_until_complete(self._main())
        finally:
            loop.close()

    async def _main(self) -> None:
        assert self._wakeup is not None
        busy = False  # a job just ended: claim again without probing first
        while not self._stopping:
            while len(self._tasks) - len(self._parked) < self.capacity and not self._stopping:
                job = await self._claim(probe=not busy)
                busy = False
                if job is None:
                    break
                task = asyncio.get_running_loop().create_task(self._execute(job))
                self._tasks.add(task)
            try:
                await asyncio.wait_for(self._wakeup.wait(), IDLE_POLL_SECONDS)
                busy = True
            except asyncio.TimeoutError:
                pass
            self._wakeup.clear()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=settings.AGENTOS_BACKGROUND_LEASE_SECONDS)

    async def _claim(self, *, probe: bool):
        try:
            return await in_run_thread(job_claim, worker=self.name, probe=probe)
        except OperationalError:  # SQLite busy beyond its timeout: try again shortly
            return None
        except Exception:
            # The database went away (a lost connection, a failover): the loop must outlive it, or
            # accepted jobs would wait for a restart; claim again after the idle pause.
            if _claim_failures.due():
                logger.exception("worker %s could not claim a job; retrying", self.name)
            return None

    async def _execute(self, job) -> None:
        task = asyncio.current_task()
        assert task is not None
        job_slot.set((lambda: self._park(task), lambda: self._parked.discard(task)))
        try:
            await job_execute(job, self.name)
        except Exception:
            logger.exception("job %s failed outside its run; the reaper will settle it", job.pk)
        finally:
            self._tasks.discard(task)
            self._parked.discard(task)
            assert self._wakeup is not None
            self._wakeup.set()  # room for another

    def _park(self, task: asyncio.Task[None]) -> None:
        self._parked.add(task)
        assert self._wakeup is not None
        self._wakeup.set()  # its place is free: claim


_claim_failures = Throttle(30.0)

_worker: LoopWorker | None = None
_worker_lock = threading.Lock()


def process_worker() -> LoopWorker:
    """This Celery worker process's loop worker (one per process; a forked child makes its own).
    Its jobs say which process holds them: ``celery-<host>-<pid>``."""
    global _worker
    with _worker_lock:
        if _worker is None or _worker._pid not in (0, os.getpid()):
            _worker = LoopWorker(settings.WORKER_RUNS_PER_PROCESS, name=f"celery-{socket.gethostname()}-{os.getpid()}")
        return _worker


def process_worker_stop(timeout: float) -> None:
    """Stop this process's loop worker, if it runs, letting its jobs in flight finish for up to
    ``timeout`` seconds (a Celery worker's warm shutdown)."""
    worker = _worker
    if worker is not None and worker.running:
        logger.info("worker shutting down: waiting for %d job(s) in flight", worker.in_flight)
        worker.stop(timeout=timeout)
