"""Where the database phases of async work run: the run threads, or a sync caller's own thread.

Django runs sync views on one shared thread under ASGI; a run that waits seconds for its model
must not hold it. Async views hand the run to this pool instead (``RUN_THREADS`` threads), and
async work (a run, a job) awaits each of its database phases there (``in_run_thread``).

A caller without an event loop (a test, the shell, a job handler's thread, a benchmark) drives
the same coroutine with ``drive_here``: on its thread's own loop, and each phase the coroutine
hands to ``in_run_thread`` runs in the caller's thread instead, between two steps of the loop,
on the caller's connection, as asgiref's ``sync_to_async(thread_sensitive=True)`` runs it in
the thread that called ``async_to_sync``. So a caller inside a transaction (a test's, an
eval's) sees and writes the same rows as the work it drives.
"""
from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import threading
from collections import deque
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from django.conf import settings

from core.db import with_connection_care
from engine.aio import thread_loop

T = TypeVar("T")

_executor: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def run_executor() -> ThreadPoolExecutor:
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=settings.RUN_THREADS, thread_name_prefix="agno-run")
        return _executor


async def in_run_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``fn`` in a run thread, which keeps its connection between jobs as a request thread does;
    under ``drive_here``, in the driving caller's thread (its connection, its transaction)."""
    driver = _driver.get()
    if driver is not None and driver.loop is asyncio.get_running_loop():
        return await driver.call(functools.partial(fn, *args, **kwargs))
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(run_executor(), functools.partial(with_connection_care, fn, *args, **kwargs))


async def in_run_thread_to_the_end(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``in_run_thread`` for work that must happen once asked, such as a run's end: a caller
    cancelled while it waits (its event loop torn down, as asgiref's is when a sync caller's view
    returns) no longer takes the queued work back out of the run threads' queue."""
    driver = _driver.get()
    if driver is not None and driver.loop is asyncio.get_running_loop():
        return await driver.call(functools.partial(fn, *args, **kwargs))
    work = run_executor().submit(functools.partial(with_connection_care, fn, *args, **kwargs))
    return await asyncio.shield(asyncio.wrap_future(work))


class _Driver:
    """The phases a coroutine driven by ``drive_here`` hands back to its caller's thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.pending: deque[tuple[Callable[[], Any], asyncio.Future[Any]]] = deque()

    def call(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        future: asyncio.Future[T] = self.loop.create_future()
        self.pending.append((fn, future))
        self.loop.stop()  # the loop ends this step; the caller runs ``fn``, then resumes it
        return future

    def run_pending(self) -> None:
        """In the caller's thread, the loop stopped (Django's async-safety check passes)."""
        while self.pending:
            fn, future = self.pending.popleft()
            if future.cancelled():
                continue
            try:
                result = fn()
            except BaseException as exc:  # the coroutine that asked for it gets it, as from a thread
                future.set_exception(exc)
            else:
                future.set_result(result)


_driver: contextvars.ContextVar[_Driver | None] = contextvars.ContextVar("run_phases_driver", default=None)


def driven_here() -> bool:
    """Whether the calling coroutine is driven by ``drive_here`` (its phases run in its caller's thread)."""
    driver = _driver.get()
    return driver is not None and driver.loop is asyncio.get_running_loop()


def drive_here(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to its end for a caller without an event loop: on this thread's loop
    (the engine's, kept between calls for the model clients' connection pools), with each of its
    ``in_run_thread`` phases run here, in this thread and its transaction. The thin sync facade
    over async work: the work itself has one (async) body."""
    loop = thread_loop()  # refuses a thread that runs a loop already
    driver = _Driver(loop)
    token = _driver.set(driver)
    try:
        task = loop.create_task(coroutine)  # its context (and every task it starts) holds the driver
    finally:
        _driver.reset(token)
    task.add_done_callback(lambda _: loop.stop())
    try:
        while True:
            loop.run_forever()
            driver.run_pending()
            if task.done():
                return task.result()
    except BaseException:
        # Interrupted (KeyboardInterrupt in the shell): the work is cancelled, as ``asyncio.run`` would.
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                loop.run_until_complete(task)
        raise


# The job loop's slot the current task holds (jobs.loop_worker sets it): (park, unpark).
job_slot: contextvars.ContextVar[tuple[Callable[[], None], Callable[[], None]] | None] = contextvars.ContextVar("job_slot", default=None)


@contextmanager
def parked() -> Iterator[None]:
    """While the current job only waits for others (a workflow run for its parallel branches),
    its job loop may claim another in its place: the branches it waits for, on a loop with room
    for one job, could otherwise never start."""
    slot = job_slot.get()
    if slot is None:
        yield
        return
    park, unpark = slot
    park()
    try:
        yield
    finally:
        unpark()
