"""Django's ASGI handler, with its request threads kept between requests.

Django runs each request's sync code (views, signal receivers, the ORM) in a thread of its own:
asgiref's ThreadSensitiveContext creates that thread when the request first needs it and shuts
it down when the request ends. Every request then pays for a new thread and, because Django's
database connections belong to a thread, for a new database connection: ``CONN_MAX_AGE`` never
takes effect under ASGI. This handler lends each request a single-thread executor from a pool
instead (asgiref's ``ThreadSensitiveContext(executor=...)``), so threads and their connections
live on, as they do under a WSGI server; ``request_started``/``request_finished`` still close
connections that are too old or broken.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext
from django.core.handlers.asgi import ASGIHandler as DjangoASGIHandler

# Idle threads kept for the next requests; a burst above this creates threads that end with it.
KEEP_IDLE = 16


class RequestThreads:
    """Single-thread executors, one lent to each request in flight."""

    def __init__(self, keep_idle: int = KEEP_IDLE) -> None:
        self.keep_idle = keep_idle
        self._idle: list[ThreadPoolExecutor] = []
        self._lock = threading.Lock()

    def acquire(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._idle:
                return self._idle.pop()  # the most recently used: its connection is the freshest
        return ThreadPoolExecutor(max_workers=1, thread_name_prefix="django-request")

    def release(self, executor: ThreadPoolExecutor) -> None:
        with self._lock:
            if len(self._idle) < self.keep_idle:
                self._idle.append(executor)
                return
        executor.shutdown(wait=False)


class ASGIHandler(DjangoASGIHandler):
    def __init__(self) -> None:
        super().__init__()
        self.threads = RequestThreads()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        executor = self.threads.acquire()
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.handle(scope, receive, send)
        finally:
            self.threads.release(executor)


def get_asgi_application() -> ASGIHandler:
    import django

    django.setup(set_prefix=False)
    return ASGIHandler()
