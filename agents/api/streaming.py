"""SSE responses for runs driven on the event loop: events become frames as they happen."""
from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from django.http import StreamingHttpResponse

from core.api.sse import SSE_CONTENT_TYPE, control_frame, event_frame

from jobs.services.cancellation import cancel_local

logger = logging.getLogger("agno_site.runs")

_DONE = object()


def sse_response(frames: AsyncIterator[str]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(frames, content_type=SSE_CONTENT_TYPE)
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx: do not buffer the stream
    return response


# Runs driven on the loop whose client has gone: they go on to their end (and their record);
# the loop holds only weak references to tasks, so these are kept here until they finish.
_detached: set[asyncio.Task[Any]] = set()


async def answer_on_loop(started: Any) -> dict[str, Any]:
    """Drive a begun, non-streamed run on this event loop and return its output. The run is a
    task of its own, shielded: a client that goes away (Django then cancels the view) does not
    cut it short, and it is recorded as it ends, as a streamed run whose client left is."""

    def ended(task: asyncio.Task[Any]) -> None:
        started.slot.release()
        _detached.discard(task)

    task = asyncio.get_running_loop().create_task(started.execute_async())
    _detached.add(task)
    task.add_done_callback(ended)
    return await asyncio.shield(task)


def stream_on_loop(started: Any) -> AsyncIterator[str]:
    """Drive a begun run (``agents.pipeline.submit.Started``) on this event loop, starting now,
    and return its events as SSE frames as they come.

    The run is a task of its own, started before the response is, its first event taken at once:
    it runs to its end and is recorded even if the response is never sent. If the client goes
    away, the run is asked to stop (cancelled at its next step) and is still recorded. Frames
    that are ready together leave in one write. ``started.slot`` is given back when the run ends,
    before the stream's last frame: a client that starts its next run on seeing the end finds its
    place free.
    """
    inbox: deque[Any] = deque()
    ready = asyncio.Event()

    def put(item: Any) -> None:
        inbox.append(item)
        ready.set()

    # Its first event is in the inbox before the response is returned: the first frame leaves
    # with the response's start (agents.pipeline.runs.run_open).
    opened = started.open(on_event=put)

    async def drive() -> None:
        try:
            await started.execute_async(on_event=put, opened=opened)
        except Exception as exc:
            logger.exception("run %s could not be recorded", started.run_id)
            put(_Failed(exc))
        finally:
            started.slot.release()
            put(_DONE)

    task = asyncio.get_running_loop().create_task(drive())
    _detached.add(task)
    task.add_done_callback(_detached.discard)
    return _frames(started, inbox, ready)


async def _frames(started: Any, inbox: deque[Any], ready: asyncio.Event) -> AsyncIterator[str]:
    finished = False
    index = started.index_from
    try:
        while not finished:
            await ready.wait()
            ready.clear()
            frames = []
            while inbox:
                item = inbox.popleft()
                if item is _DONE:
                    finished = True
                    break
                if isinstance(item, _Failed):
                    frames.append(control_frame("error", {"error": f"the run could not be recorded ({type(item.exc).__name__})"}))
                    continue
                if "event_index" in item:
                    index = item["event_index"] + 1
                elif index is not None:
                    item = {**item, "event_index": index}
                    index += 1
                frames.append(event_frame(item))
            if frames:
                yield "".join(frames)
    finally:
        if not finished:
            cancel_local(started.run_id)


class _Failed:
    __slots__ = ("exc",)

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc
