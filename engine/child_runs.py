"""Child runs inside a parent run (a team's members, a workflow's agent and team steps and its
``Parallel`` branches): their events merged into the parent's stream as they come, and what they
changed of the session state merged back into the parent's.
"""
from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing
from typing import Any

from engine.output import json_copy


# ---- events -------------------------------------------------------------------------------

async def _merged(tasks: list[asyncio.Task[None]], queue: asyncio.Queue[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    """Events from the queue until every task is done and the queue is empty."""
    pending = {t for t in tasks if not t.done()}
    while pending or not queue.empty():
        if not queue.empty():
            yield queue.get_nowait()
            continue
        getter = asyncio.ensure_future(queue.get())
        try:
            done, _ = await asyncio.wait(pending | {getter}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            getter.cancel()
            raise
        # Only member tasks stay pending: a getter left in the set would be "done" for ever
        # once cancelled, and the loop would spin.
        pending -= done
        if getter in done:
            yield getter.result()
        else:
            # A cancelled Queue.get leaves its item in the queue for the next turn.
            getter.cancel()


async def concurrent_events(tasks: list[asyncio.Task[None]], queue: asyncio.Queue[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    """The events concurrent runs (a team's members, a workflow's Parallel branches) put on ``queue``, until all ``tasks`` end;
    those still going stop if the caller closes or fails. A task that raised (a bug, never a provider failure) raises here."""
    try:
        async with aclosing(_merged(tasks, queue)) as relayed:
            async for event in relayed:
                yield event
    finally:
        await cancel_all(tasks)
    for task in tasks:
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()


async def cancel_all(tasks: list[asyncio.Task[None]]) -> None:
    """Stop child runs still going (the parent run was closed or failed): each closes its stream."""
    for task in tasks:
        if not task.done():
            task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


# ---- session state ------------------------------------------------------------------------

def deep_merge(into: dict[str, Any], changed: Mapping[str, Any]) -> None:
    """``changed`` merged into the session state ``into``, nested dicts key by key."""
    for key, value in changed.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            deep_merge(into[key], value)
        else:
            into[key] = value


def changed_state(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``after`` that differ from ``before`` (nested dicts compared key by key)."""
    changed: dict[str, Any] = {}
    for key, value in after.items():
        old = before.get(key)
        if isinstance(value, dict) and isinstance(old, dict):
            inner = changed_state(old, value)
            if inner:
                changed[key] = inner
        elif key not in before or old != value:
            changed[key] = json_copy(value)
    return changed
