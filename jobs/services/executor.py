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

from core.db import with_connection_care

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
    """``fn`` in a run thread, which keeps its connection between jobs as a request thread does."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(run_executor(), functools.partial(with_connection_care, fn, *args, **kwargs))


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
