"""SSE responses for runs: events cross from the run's thread to the event loop as they happen."""
from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any

from django.http import StreamingHttpResponse

from core.api.sse import SSE_CONTENT_TYPE, control_frame, event_frame

from ..services.capacity import Slot
from ..services.cancellation import cancel_local
from ..services.executor import _with_connections, run_executor

logger = logging.getLogger("agno_site.runs")

_DONE = object()


class Mailbox:
    """Items from a thread to the event loop. The thread wakes the loop only when the loop is not
    already due to look (each wake-up is a write to the loop's self-pipe, an epoll round and a
    callback); the loop takes everything that has arrived, so events that came together leave
    together, in one write to the client. An event that comes alone is sent alone, at once."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._items: deque[Any] = deque()
        self._lock = threading.Lock()
        self._woken = False
        self._ready = asyncio.Event()

    def put(self, item: Any) -> None:
        """From any thread."""
        with self._lock:
            self._items.append(item)
            if self._woken:
                return
            self._woken = True
        try:
            self._loop.call_soon_threadsafe(self._ready.set)
        except RuntimeError:  # the event loop is gone (server shutting down); the run still records
            pass

    async def take(self) -> list[Any]:
        """On the loop: everything put since the last take (waits for at least one item)."""
        await self._ready.wait()
        with self._lock:
            self._ready.clear()
            self._woken = False
            items = list(self._items)
            self._items.clear()
        return items


def sse_response(frames: AsyncIterator[str]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(frames, content_type=SSE_CONTENT_TYPE)
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx: do not buffer the stream
    return response


async def stream_in_thread(
    run_id: str,
    execute: Callable[..., Any],
    *,
    index_from: int | None = None,
    slot: Slot | None = None,
) -> AsyncIterator[str]:
    """Run ``execute(on_event=...)`` in a run thread and yield its events as SSE frames.

    ``index_from`` numbers the frames with ``event_index`` (continue streams carry it). If the
    client goes away before the run ends, the run is cancelled; it is still recorded. ``slot``
    (agents.services.capacity) is given back when the run ends, before the stream's last frame,
    however it ends: a client that starts its next run on seeing the end finds its place free.
    """
    loop = asyncio.get_running_loop()
    mailbox = Mailbox(loop)

    def job() -> None:
        try:
            execute(on_event=mailbox.put)
        finally:
            if slot is not None:
                slot.release()
            mailbox.put(_DONE)

    future = loop.run_in_executor(run_executor(), _with_connections, job)
    finished = False
    index = index_from
    try:
        while not finished:
            frames = []
            for item in await mailbox.take():
                if item is _DONE:
                    finished = True
                    break
                if index is not None:
                    item = {**item, "event_index": index}
                    index += 1
                frames.append(event_frame(item))
            if frames:
                yield "".join(frames)
        try:
            await future
        except Exception as exc:
            logger.exception("run %s could not be recorded", run_id)
            yield control_frame("error", {"error": f"the run could not be recorded ({type(exc).__name__})"})
    finally:
        if not finished:
            cancel_local(run_id)
