"""SSE responses for runs: events cross from the run's thread to the event loop as they happen."""
from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from django.http import StreamingHttpResponse

from core.api.sse import SSE_CONTENT_TYPE, control_frame, event_frame

from ..services.cancellation import cancel_local
from ..services.executor import _with_connections, run_executor

logger = logging.getLogger("agno_site.runs")

_DONE = object()


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
) -> AsyncIterator[str]:
    """Run ``execute(on_event=...)`` in a run thread and yield its events as SSE frames.

    ``index_from`` numbers the frames with ``event_index`` (continue streams carry it). If the
    client goes away before the run ends, the run is cancelled; it is still recorded.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Any] = asyncio.Queue()

    def deliver(item: Any) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # the event loop is gone (server shutting down); the run still records
            pass

    def job() -> None:
        try:
            execute(on_event=deliver)
        finally:
            deliver(_DONE)

    future = loop.run_in_executor(run_executor(), _with_connections, job)
    finished = False
    index = index_from
    try:
        while True:
            item = await queue.get()
            if item is _DONE:
                finished = True
                break
            if index is not None:
                item = {**item, "event_index": index}
                index += 1
            yield event_frame(item)
        try:
            await future
        except Exception as exc:
            logger.exception("run %s could not be recorded", run_id)
            yield control_frame("error", {"error": f"the run could not be recorded ({type(exc).__name__})"})
    finally:
        if not finished:
            cancel_local(run_id)
