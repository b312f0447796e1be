"""The answers of run submissions: SSE responses for runs driven on the event loop (events
become frames as they happen), a run's output once it ends, a background run's 202 or its
followed events."""
from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from django.db import DatabaseError
from django.http import StreamingHttpResponse
from rest_framework.response import Response

from core.api.errors import DATABASE_UNAVAILABLE
from core.api.sse import SSE_CONTENT_TYPE, control_frame, event_frame
from core.api.views import json_response

from jobs.services.cancellation import cancel_local
from jobs.services.executor import in_run_thread
from ..pipeline.submit import Finished, Started, Submitted
from ..pipeline.tail import follow
from .presenters import UNSTREAMED_EVENTS, with_unstreamed_events

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


async def submission_response(submitted: Submitted, kind: str):
    """A submission's answer, on the event loop: the run's stream, or its RunOutput once it ends
    (driven on this loop, holding no thread while it waits; a team's or workflow's with the
    events Agno keeps for it), or a background run's 202 (or its events, followed, when the
    submission streams)."""
    if isinstance(submitted, Started):
        if submitted.streamed:
            return sse_response(stream_on_loop(submitted))
        output = await answer_on_loop(submitted)
        if kind in UNSTREAMED_EVENTS:
            output = await in_run_thread(with_unstreamed_events, output, kind, submitted.prepared.owner_id)
        return json_response(output)
    if isinstance(submitted, Finished):
        return json_response(submitted.output)
    if submitted.stream:
        return sse_response(tail_frames(submitted.job.pk, submitted.job.user_id, submitted.after))
    return Response(submitted.body, status=202)


async def tail_frames(run_id: str, owner: str | None, after: int) -> AsyncIterator[str]:
    """SSE frames of a run's events after ``after`` until it ends (durable, resumable)."""
    try:
        async for event in follow(run_id, owner, after):
            yield event_frame(event)
    except DatabaseError as exc:
        yield database_error_frame(run_id, exc)


def database_error_frame(run_id: str, exc: DatabaseError) -> str:
    """The in-band end of a stream whose database went away: the run goes on; resume it later."""
    logger.warning("stream of run %s lost the database: %s", run_id, type(exc.__cause__ or exc).__name__)
    return control_frame("error", {"error": f"{DATABASE_UNAVAILABLE}: resume run {run_id} later", "run_id": run_id})
