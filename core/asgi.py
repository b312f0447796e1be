"""Django's ASGI handler, with its request threads kept between requests.

Django runs each request's sync code (views, signal receivers, the ORM) in a thread of its own:
asgiref's ThreadSensitiveContext creates that thread when the request first needs it and shuts
it down when the request ends. Every request then pays for a new thread and, because Django's
database connections belong to a thread, for a new database connection: ``CONN_MAX_AGE`` never
takes effect under ASGI. This handler lends each request a single-thread executor from a pool
instead (asgiref's ``ThreadSensitiveContext(executor=...)``), so threads and their connections
live on, as they do under a WSGI server.

Django looks after a thread's connections from its ``request_started`` and ``request_finished``
signals (``close_old_connections``: drop a connection that is broken or past ``CONN_MAX_AGE``),
and under ASGI each of those is a hop from the event loop to the request's thread and back, even
for a request that never uses that thread (an API run works in the run threads). The request
threads here do that care themselves instead, where it is needed: before the first work of a
request they are lent to, and, when a database wants its connections closed after every request
(``CONN_MAX_AGE=0``), after the last. ``request_finished``'s other receivers (caches, the URLconf
of the context) run on the event loop when they are the ones Django connects, which are safe there.
"""
from __future__ import annotations

import asyncio
import threading
import weakref
from concurrent.futures import Future, ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.conf import settings
from django.core import signals
from django.core.cache import close_caches
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler as DjangoASGIHandler
from django.core.handlers.asgi import get_script_prefix
from django.core.handlers.base import reset_urlconf
from django.db import close_old_connections, connections, reset_queries
from django.http import JsonResponse
from django.urls import set_script_prefix

# Idle threads kept for the next requests; a burst above this creates threads that end with it.
KEEP_IDLE = 16


def _first_of_request(fn, /, *args, **kwargs):
    """``fn``, after what Django's request_started receivers do in a request's thread."""
    reset_queries()
    close_old_connections()
    return fn(*args, **kwargs)


def _closes_after_each_request() -> bool:
    return any(connections.settings[alias].get("CONN_MAX_AGE") == 0 for alias in connections)


class RequestThread(ThreadPoolExecutor):
    """One thread, lent to one request at a time, that looks after its database connections: the
    first work of each request it is lent to starts with Django's request_started care."""

    def __init__(self) -> None:
        super().__init__(max_workers=1, thread_name_prefix="django-request")
        self.used = False  # by the request it is lent to

    def submit(self, fn, /, *args, **kwargs) -> Future:
        if self.used:
            return super().submit(fn, *args, **kwargs)
        self.used = True
        return super().submit(_first_of_request, fn, *args, **kwargs)

    def request_done(self) -> Future | None:
        """The request it was lent to has ended. Its connections were checked when the request
        began and are checked again before the next one uses them; closing them now is for
        databases that want no connection kept between requests: the closing, if any, queued
        behind the request's work."""
        used, self.used = self.used, False
        if used and _closes_after_each_request():
            return super().submit(close_old_connections)
        return None


class RequestThreads:
    """Single-thread executors, one lent to each request in flight."""

    def __init__(self, keep_idle: int = KEEP_IDLE) -> None:
        self.keep_idle = keep_idle
        self._idle: list[RequestThread] = []
        self._lock = threading.Lock()

    def acquire(self) -> RequestThread:
        with self._lock:
            if self._idle:
                return self._idle.pop()  # the most recently used: its connection is the freshest
        return RequestThread()

    def release(self, executor: RequestThread) -> None:
        with self._lock:
            if len(self._idle) < self.keep_idle:
                self._idle.append(executor)
                return
        executor.shutdown(wait=False)


# request_finished's receivers as Django connects them, after close_old_connections is taken off:
# they touch only context-local state (the URLconf) and caches, and may run on the event loop.
_LOOP_SAFE_FINISHED = {close_caches, reset_urlconf}


def _take_connection_care_from_signals() -> None:
    # Process-wide. (Django's test client connects close_old_connections again after each of its
    # requests; the handler then hops for it as Django's does, which is still correct.)
    signals.request_started.disconnect(reset_queries)
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)


def _finished_receivers_are_loop_safe() -> bool:
    for _, receiver, _ in signals.request_finished.receivers:
        if isinstance(receiver, weakref.ReferenceType):
            receiver = receiver()
        if receiver is not None and receiver not in _LOOP_SAFE_FINISHED:
            return False
    return True


class BodyTooLarge(Exception):
    """The request's body is over REQUEST_MAX_BODY_BYTES."""


def _bounded(scope, receive):
    """``receive``, refusing a body over REQUEST_MAX_BODY_BYTES: at once when its Content-Length
    says so, else as soon as the chunks that came add up to more."""
    limit = settings.REQUEST_MAX_BODY_BYTES
    for name, value in scope.get("headers", ()):
        if name == b"content-length" and value.isdigit() and int(value) > limit:
            raise BodyTooLarge()
    seen = 0

    async def bounded():
        nonlocal seen
        message = await receive()
        seen += len(message.get("body", b""))
        if seen > limit:
            raise BodyTooLarge()
        return message

    return bounded


class ASGIHandler(DjangoASGIHandler):
    def __init__(self) -> None:
        super().__init__()
        self.threads = RequestThreads()
        _take_connection_care_from_signals()

    async def handle(self, scope, receive, send):
        """Django's (5.2), but for the response's close: ``request_finished`` is sent on the loop
        when its receivers are safe there, instead of from a hop to the request's thread; and for
        the body's size, bounded before it is read (below)."""
        try:
            body_file = await self.read_body(_bounded(scope, receive))
        except RequestAborted:
            return
        except BodyTooLarge:
            # Django spools a body of any size (to disk past FILE_UPLOAD_MAX_MEMORY_SIZE) before a
            # view can refuse it; a body over every bound a view applies is refused unread.
            response = JsonResponse({"detail": f"Request body too large: at most {settings.REQUEST_MAX_BODY_BYTES} bytes"}, status=413)
            await self.send_response(response, send)
            return
        set_script_prefix(get_script_prefix(scope))
        await signals.request_started.asend(sender=self.__class__, scope=scope)
        request, error_response = self.create_request(scope, body_file)
        if request is None:
            body_file.close()
            await self.send_response(error_response, send)
            await self.close_response(error_response)
            return

        async def process_request(request, send):
            response = await self.run_get_response(request)
            try:
                await self.send_response(response, send)
            except asyncio.CancelledError:
                pass  # the client disconnected during send_response
            return response

        # Catch a disconnect while the response is made (listen_for_disconnect first: it must not
        # raise what would keep process_request from being cancelled).
        tasks = [
            asyncio.create_task(self.listen_for_disconnect(receive)),
            asyncio.create_task(process_request(request, send)),
        ]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            if task.done():
                try:
                    task.result()
                except RequestAborted:
                    pass
                except AssertionError:
                    body_file.close()
                    raise
            else:
                task.cancel()  # views may handle their cancellation
                try:
                    await task
                except asyncio.CancelledError:
                    pass
        try:
            response = tasks[1].result()
        except asyncio.CancelledError:
            await signals.request_finished.asend(sender=self.__class__)
        else:
            await self.close_response(response)
        body_file.close()

    async def close_response(self, response) -> None:
        if _finished_receivers_are_loop_safe():
            response.close()
        else:  # a receiver of unknown needs: Django's way, in the request's thread
            await sync_to_async(response.close)()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        executor = self.threads.acquire()
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.handle(scope, receive, send)
        finally:
            closing = executor.request_done()
            try:
                if closing is not None:  # the request ends once its connections are closed, as in Django
                    await asyncio.wrap_future(closing)
            finally:
                self.threads.release(executor)


def get_asgi_application() -> ASGIHandler:
    import django

    django.setup(set_prefix=False)
    return ASGIHandler()
