"""Live run events, from the process executing a run to every client following it.

With Redis (``REDIS_URL``) events go through the Channels layer (a group per run), so a client
on any replica sees a run executing on any worker. Without Redis the embedded worker runs in
the web process and a thread-safe in-process hub does the same. Either way this is only the
fast path: the database holds every event, and followers poll it when the live path is quiet
or down, so a Redis fault delays events but never loses one. For the same reason a run nobody
follows is not sent at all (the publisher looks for followers, at most every 200 ms per run).
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import OrderedDict, defaultdict, deque
from typing import Any

from django.conf import settings

from core.logging import Throttle

logger = logging.getLogger("agno_site.live")

_failures = Throttle(30.0)

# A run found without followers is not sent to for this long (followers read any gap from the
# database); how many runs' answers are remembered.
FOLLOWERS_RECHECK_SECONDS = 0.2
FOLLOWERS_REMEMBERED = 4096


def group_name(run_id: str) -> str:
    return f"run.{run_id}"


class _LocalHub:
    """In-process publish/subscribe: publishers are threads, subscribers asyncio queues."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subscribers: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Queue]]] = defaultdict(set)

    def publish(self, run_id: str, event: dict[str, Any]) -> None:
        with self._lock:
            targets = list(self._subscribers.get(run_id, ()))
        for loop, queue in targets:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, event)
            except RuntimeError:
                pass  # that subscriber's loop is gone

    def add(self, run_id: str, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue) -> None:
        with self._lock:
            self._subscribers[run_id].add((loop, queue))

    def remove(self, run_id: str, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue) -> None:
        with self._lock:
            subscribers = self._subscribers.get(run_id)
            if subscribers is not None:
                subscribers.discard((loop, queue))
                if not subscribers:
                    del self._subscribers[run_id]


hub = _LocalHub()


def _uses_channel_layer() -> bool:
    return bool(settings.REDIS_URL)


class _Publisher:
    """One event loop thread per process that sends to the Channels layer.

    ``async_to_sync`` from a plain thread would start a new loop per call, and channels-redis
    keeps its connections per loop: every event would open a Redis connection. Sends are handed
    to this loop and not waited for. One flush at a time sends what has accumulated, one group
    message per run with that run's events in order: events that come while a send is under
    way (a fast model's burst) travel together, and a lone event leaves at once.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: list[tuple[str, dict[str, Any]]] = []
        self._flushing = False
        # run id -> (followed, when last looked): used on the publisher's loop only.
        self._followers: OrderedDict[str, tuple[bool, float]] = OrderedDict()

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, name="live-events", daemon=True).start()
            return self._loop

    def send(self, run_id: str, event: dict[str, Any]) -> None:
        loop = self.loop()
        with self._lock:
            self._pending.append((run_id, event))
            if self._flushing:
                return
            self._flushing = True
        try:
            asyncio.run_coroutine_threadsafe(self._flush(), loop).add_done_callback(_log_failure)
        except Exception:
            with self._lock:
                self._flushing = False
            raise

    async def _flush(self) -> None:
        from channels.layers import get_channel_layer

        try:
            while True:
                with self._lock:
                    batch, self._pending = self._pending, []
                    if not batch:
                        self._flushing = False
                        return
                by_run: dict[str, list[dict[str, Any]]] = {}
                for run_id, event in batch:
                    by_run.setdefault(run_id, []).append(event)
                layer = get_channel_layer()
                for run_id, events in by_run.items():
                    try:
                        if await self._followed(layer, run_id):
                            await layer.group_send(group_name(run_id), {"type": "run.events", "events": events})
                    except Exception as exc:  # Redis down: these events wait in the database
                        _log_failure_now(exc)
        except BaseException:
            with self._lock:
                self._flushing = False
            raise

    async def _followed(self, layer: Any, run_id: str) -> bool:
        """Whether anyone follows the run. Most runs nobody follows (a background run that is
        polled, a finished one); sending them costs a group message each (two Redis round trips
        and a fifth of a worker's CPU) for no one. A run found followed stays followed; one found
        without followers is looked at again after ``FOLLOWERS_RECHECK_SECONDS``. A follower that
        subscribes in between misses those live events, and reads them from the database, which
        it does on any gap in the event indexes (agents.pipeline.tail).
        """
        known = self._followers.get(run_id)
        now = time.monotonic()
        if known is not None and (known[0] or now - known[1] < FOLLOWERS_RECHECK_SECONDS):
            return known[0]
        group = group_name(run_id)
        members = getattr(layer, "_group_key", None)
        if members is None:  # not channels-redis: no cheap way to know; send
            return True
        followed = await layer.connection(layer.consistent_hash(group)).zcard(members(group)) > 0
        self._followers[run_id] = (followed, now)
        self._followers.move_to_end(run_id)
        while len(self._followers) > FOLLOWERS_REMEMBERED:
            self._followers.popitem(last=False)
        return followed


def _log_failure(future) -> None:
    if not future.cancelled() and future.exception() is not None:
        _log_failure_now(future.exception())


_publisher = _Publisher()


def publish(run_id: str, event: dict[str, Any]) -> None:
    """Best effort and never blocking: a failure is logged (rarely) and the run goes on; the
    database has the event."""
    if not _uses_channel_layer():
        hub.publish(run_id, event)
        return
    try:
        _publisher.send(run_id, event)
    except Exception as exc:  # no layer configured correctly: same as Redis being down
        _log_failure_now(exc)


def _log_failure_now(exc: Exception) -> None:
    if _failures.due():
        logger.warning("live events unavailable (followers fall back to the database): %s", exc)


class Subscription:
    """Live events of one run for an async follower. ``get`` returns None on timeout."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.queue: asyncio.Queue = asyncio.Queue()
        self.loop = asyncio.get_running_loop()
        self.channel: str | None = None
        self.layer = None
        self._received: deque[dict[str, Any] | None] = deque()

    async def __aenter__(self) -> Subscription:
        if not _uses_channel_layer():
            hub.add(self.run_id, self.loop, self.queue)
        else:
            try:
                from channels.layers import get_channel_layer

                self.layer = get_channel_layer()
                self.channel = await asyncio.wait_for(self.layer.new_channel(), timeout=2)
                await asyncio.wait_for(self.layer.group_add(group_name(self.run_id), self.channel), timeout=2)
            except Exception:
                logger.warning("live events unavailable for run %s; following the database", self.run_id)
                self.layer = self.channel = None
        return self

    async def get(self, timeout: float) -> dict[str, Any] | None:
        if self._received:
            return self._received.popleft()
        if self.layer is not None and self.channel is not None:
            try:
                message = await asyncio.wait_for(self.layer.receive(self.channel), timeout=timeout)
                # "run.events" carries a batch in order; "run.event" one (a worker of the
                # previous release, during a rolling deploy).
                self._received.extend(message.get("events") or [message.get("event")])
                return self._received.popleft()
            except asyncio.TimeoutError:
                return None
            except Exception:
                logger.warning("live events lost for run %s; following the database", self.run_id)
                self.layer = None
                return None
        if _uses_channel_layer():  # the layer failed: the caller polls the database meanwhile
            await asyncio.sleep(timeout)
            return None
        try:
            return await asyncio.wait_for(self.queue.get(), timeout=timeout)
        except asyncio.TimeoutError:
            return None

    async def __aexit__(self, *exc: Any) -> None:
        hub.remove(self.run_id, self.loop, self.queue)
        if self.layer is not None and self.channel is not None:
            try:
                await asyncio.wait_for(self.layer.group_discard(group_name(self.run_id), self.channel), timeout=2)
            except Exception:
                pass
