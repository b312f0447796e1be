"""The embedded ticker: without a broker (``make run``), each web process sweeps the schedules.

It runs ``scheduler_tick`` (the code path beat's tasks use) every SCHEDULER_TICK_SECONDS in a
daemon thread, started with the embedded worker (agno_site.lifespan). Several web processes may
run it at once: a fire is claimed in the database, so each tick still fires once.
"""
from __future__ import annotations

import threading

from django.conf import settings

from core.periodic import Periodic

from .services.firing import scheduler_tick


class Ticker(Periodic):
    thread_name = "agno-scheduler-ticker"
    _enabled_override = False  # ``manage.py scheduler_tick --loop`` runs it whatever the setting

    @property
    def enabled(self) -> bool:
        return self._enabled_override or settings.SCHEDULER_TICKER

    def interval(self) -> float:
        return settings.SCHEDULER_TICK_SECONDS

    def tick(self) -> None:
        scheduler_tick()


_ticker: Ticker | None = None
_lock = threading.Lock()


def embedded_ticker() -> Ticker:
    global _ticker
    with _lock:
        if _ticker is None:
            _ticker = Ticker()
        return _ticker


def stop_embedded_ticker(timeout: float) -> None:
    """Stop this process's embedded ticker, if it has one (the server's shutdown), waiting up to
    ``timeout`` seconds for a tick under way."""
    if _ticker is not None:
        _ticker.stop(timeout=timeout)
