"""The threads agent runs execute in, inside each web process.

Django runs sync views on one shared thread under ASGI; a run that waits seconds for its model
must not hold it. Async views hand the run to this pool instead (``RUN_THREADS`` threads).
"""
from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable
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
