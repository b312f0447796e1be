"""The run loop is async; this is its thin sync facade, and the pool sync tools run in.

A sync caller (a run thread, a Celery task, a test) drives an async generator on its thread's own
event loop, made on first use and kept: a loop per run would throw away the async SDK clients'
connection pools, which belong to the loop that opened them.
"""
from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import os
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

DEFAULT_TOOL_THREADS = 16

_local = threading.local()
_pool: ThreadPoolExecutor | None = None
_pool_size = DEFAULT_TOOL_THREADS
_pool_pid = 0
_pool_lock = threading.Lock()


def thread_loop() -> asyncio.AbstractEventLoop:
    """This thread's event loop for the sync facade. Refuses a thread that already runs a loop:
    blocking it on a run would stall everything else on that loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError(
            "An AgentRun cannot be iterated synchronously in a thread that runs an event loop: "
            "use `async for event in run` there"
        )
    loop = getattr(_local, "loop", None)
    # A forked child must not share its parent's selector (epoll) or the clients bound to it.
    if loop is None or loop.is_closed() or _local.pid != os.getpid():
        loop = asyncio.new_event_loop()
        _local.loop, _local.pid = loop, os.getpid()
    return loop


def run_sync(awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` on this thread's loop."""
    return thread_loop().run_until_complete(awaitable)


def iterate_sync(agen: AsyncGenerator[T, None]) -> Iterator[T]:
    """A sync iterator over an async generator; closing it closes the generator (and with it any
    provider stream it holds)."""
    return _Pump(agen, thread_loop())


class _Pump(Iterator[T]):
    """Drives an async generator from a sync caller, one item per ``next``.

    A task per item (``run_until_complete(agen.__anext__())``) would cost two loop iterations and a
    task for every event. Instead one task pulls the items and, after each, stops the loop and
    waits to be resumed: an item that needs no I/O costs one loop iteration. The generator never
    runs ahead of its caller (a cancel, a close or a disconnect applies at the next item).
    """

    def __init__(self, agen: AsyncGenerator[T, None], loop: asyncio.AbstractEventLoop) -> None:
        self._agen = agen
        self._loop = loop
        self._resume: asyncio.Future[bool] = loop.create_future()
        self._item: Any = None
        self._error: BaseException | None = None
        self._task: asyncio.Task[None] | None = None
        self._finished = False
        self._thread = threading.get_ident()

    async def _run(self) -> None:
        try:
            while await self._resume:
                self._resume = self._loop.create_future()
                try:
                    self._item = await self._agen.__anext__()
                except BaseException as exc:  # StopAsyncIteration, a bug: the caller raises it
                    self._error = exc
                    return
                finally:
                    self._loop.stop()
            try:
                await self._agen.aclose()
            except BaseException as exc:
                self._error = exc
        finally:
            self._finished = True
            self._loop.stop()

    def _step(self, go_on: bool) -> None:
        if threading.get_ident() != self._thread:
            raise RuntimeError("A synchronously iterated AgentRun must be driven by the thread that started it")
        if self._task is None:
            self._task = self._loop.create_task(self._run())
        self._resume.set_result(go_on)
        self._loop.run_forever()

    def __next__(self) -> T:
        if self._finished:
            raise StopIteration
        self._step(True)
        if self._error is not None:
            error, self._error = self._error, None
            self._finished = True
            if isinstance(error, StopAsyncIteration):
                raise StopIteration
            raise error
        return self._item

    def close(self) -> None:
        if self._finished:
            return
        if self._task is None:
            self._finished = True
            self._loop.run_until_complete(self._agen.aclose())
            return
        self._step(False)
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def __del__(self) -> None:
        # An abandoned iterator (its consumer raised) still closes the generator, and with it the
        # provider's response, as a plain generator would be closed when collected.
        if self._finished or self._task is None or threading.get_ident() != self._thread:
            return
        if self._loop.is_closed() or self._loop.is_running():
            return
        with contextlib.suppress(Exception):
            self.close()


async def maybe_await(value: T | Awaitable[T]) -> T:
    """Callbacks given to the runtime (``sleep``, ``is_cancelled``) may be sync or async."""
    if inspect.isawaitable(value):
        return await value
    return value


_after_each: Callable[[], None] | None = None


def configure_tool_threads(threads: int, *, after_each: Callable[[], None] | None = None) -> None:
    """Size the pool sync tools run in (the services pass ``TOOL_THREADS``). Takes effect for a
    pool made afterwards; the pool is made on first use. ``after_each`` runs in the tool's thread
    once each call ends (the services hand its database connection back to the pool there, so
    idle tool threads hold none)."""
    global _pool_size, _after_each
    if threads < 1:
        raise ValueError("tool threads must be >= 1")
    _pool_size = threads
    _after_each = after_each


def tool_pool() -> ThreadPoolExecutor:
    global _pool, _pool_pid
    with _pool_lock:
        # A forked child has its parent's pool object but none of its threads.
        if _pool is None or _pool_pid != os.getpid():
            _pool = ThreadPoolExecutor(max_workers=_pool_size, thread_name_prefix="agno-tool")
            _pool_pid = os.getpid()
        return _pool


async def in_tool_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run a sync tool in the bounded tool pool, so that it blocks no event loop."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(tool_pool(), functools.partial(_call_then_tidy, fn, *args, **kwargs))


def _call_then_tidy(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    try:
        return fn(*args, **kwargs)
    finally:
        if _after_each is not None:
            _after_each()
