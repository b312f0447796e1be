"""The embedded metrics refresher: without a broker (``make run``), each web process asks for the
periodic refresh (``metrics_refresh_periodic``, the code path beat's task uses) twice per
METRICS_REFRESH_INTERVAL_SECONDS; the interval's key makes it one refresh however many processes
ask, and the embedded worker runs it as any job. Started with the embedded worker (agno_site.lifespan).
"""
from __future__ import annotations

import threading

from django.conf import settings

from core.periodic import Periodic

from .services import metrics_refresh_periodic


class Refresher(Periodic):
    thread_name = "agno-metrics-refresher"

    @property
    def enabled(self) -> bool:
        return settings.METRICS_REFRESH_INTERVAL_SECONDS > 0

    def interval(self) -> float:
        # Twice per interval, as beat sends it: a pass that lands late never skips an interval.
        return max(settings.METRICS_REFRESH_INTERVAL_SECONDS, 60) / 2

    def tick(self) -> None:
        metrics_refresh_periodic()


_refresher: Refresher | None = None
_lock = threading.Lock()


def embedded_refresher() -> Refresher:
    global _refresher
    with _lock:
        if _refresher is None:
            _refresher = Refresher()
        return _refresher


def stop_embedded_refresher(timeout: float) -> None:
    """Stop this process's embedded refresher, if it has one (the server's shutdown), waiting up
    to ``timeout`` seconds for a refresh under way."""
    if _refresher is not None:
        _refresher.stop(timeout=timeout)
