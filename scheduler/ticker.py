"""The embedded ticker: without a broker (``make run``), each web process sweeps the schedules.

It runs ``scheduler_tick`` (the code path beat's tasks use) every SCHEDULER_TICK_SECONDS in a
daemon thread, started with the embedded worker (agno_site.lifespan). Several web processes may
run it at once: a fire is claimed in the database, so each tick still fires once.
"""
from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.db import connections

from .services.firing import scheduler_tick

logger = logging.getLogger("agno_site.scheduler")


class Ticker:
    def __init__(self) -> None:
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    _enabled_override = False  # ``manage.py scheduler_tick --loop`` runs it whatever the setting

    @property
    def enabled(self) -> bool:
        return self._enabled_override or settings.SCHEDULER_TICKER

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> Ticker:
        if not self.enabled:
            return self
        with self._lock:
            if not self.running:
                self._stopping.clear()
                self._thread = threading.Thread(target=self._run, name="agno-scheduler-ticker", daemon=True)
                self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._stopping.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        self._thread = None

    def _run(self) -> None:
        try:
            while not self._stopping.is_set():
                try:
                    scheduler_tick()
                except Exception:
                    logger.exception("scheduler tick failed")
                finally:
                    connections.close_all()
                self._stopping.wait(settings.SCHEDULER_TICK_SECONDS)
        finally:
            connections.close_all()


_ticker: Ticker | None = None
_lock = threading.Lock()


def embedded_ticker() -> Ticker:
    global _ticker
    with _lock:
        if _ticker is None:
            _ticker = Ticker()
        return _ticker
