"""ASGI lifespan: the embedded worker, the schedules' ticker and the metrics refresher start with
the web process; the worker drains on shutdown.

Only without a broker (no REDIS_URL): then each web process executes background runs itself,
and on start-up picks up jobs accepted before a restart.
"""
from __future__ import annotations

import logging

from asgiref.sync import sync_to_async

logger = logging.getLogger("agno_site.jobs")


class OlderDatabase(RuntimeError):
    """The database lacks some of the code's migrations: the process refuses to start."""


def _start() -> None:
    from django.conf import settings

    from core.services.readiness import older_than_the_code

    older = older_than_the_code()
    if older:
        raise OlderDatabase(older)
    if settings.REDIS_URL or not settings.EMBEDDED_WORKER:
        return
    from jobs.worker import embedded_worker, serve_jobs
    from metrics.refresher import embedded_refresher
    from scheduler.ticker import embedded_ticker

    serve_jobs()  # a server: its embedded worker may claim jobs (a management command's never does)
    embedded_worker().start()
    embedded_ticker().start()
    embedded_refresher().start()


def _stop() -> None:
    from jobs.worker import stop_embedded_worker
    from metrics.refresher import stop_embedded_refresher
    from scheduler.ticker import stop_embedded_ticker

    stop_embedded_ticker(timeout=10)
    stop_embedded_refresher(timeout=10)
    stop_embedded_worker(timeout=30)


class LifespanApp:
    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await sync_to_async(_start, thread_sensitive=False)()
                except OlderDatabase as exc:  # every request would meet a missing table: refuse to start
                    logger.error("%s", exc)
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                except Exception as exc:  # a broken database must not stop the server from answering /health
                    logger.exception("embedded worker did not start")
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await sync_to_async(_stop, thread_sensitive=False)()
                await send({"type": "lifespan.shutdown.complete"})
                return
