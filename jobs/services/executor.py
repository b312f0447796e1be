"""The threads agent runs execute in, inside each web process.

Django runs sync views on one shared thread under ASGI; a run that waits seconds for its model
must not hold it. Async views hand the run to this pool instead (``RUN_THREADS`` threads).
"""
from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from django.conf import settings
from django.db import close_old_connections

T = TypeVar("T")

_executor: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def run_executor() -> ThreadPoolExecutor:
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=settings.RUN_THREADS, thread_name_prefix="agno-run")
        return _executor


def _with_connections(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    # Each pool thread keeps its own connection between jobs, like a request thread does.
    close_old_connections()
    try:
        return fn(*args, **kwargs)
    finally:
        close_old_connections()


async def in_run_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(run_executor(), functools.partial(_with_connections, fn, *args, **kwargs))


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
