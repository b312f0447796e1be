"""A daemon thread that does one thing every so often: the embedded stand-ins for beat's periodic
tasks in a web process without a broker (the schedules' ticker, the metrics refresher).

Each pass runs with fresh database connections and closes them after, so an idle process holds
none; a pass that raises is logged and the next one runs on time. Several processes may run the
same one: what each pass does must be safe to repeat (a claim in the database, an idempotency key).
"""
from __future__ import annotations

import logging
import threading

from django.db import connections

logger = logging.getLogger("agno_site.periodic")


class Periodic:
    """Subclasses name the thread and define ``interval()`` (seconds, read at every pass, so a
    changed setting applies), ``tick()`` and, if it can be off, ``enabled``."""

    thread_name = "agno-periodic"

    def __init__(self) -> None:
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return True

    def interval(self) -> float:
        raise NotImplementedError

    def tick(self) -> None:
        raise NotImplementedError

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> Periodic:
        if not self.enabled:
            return self
        with self._lock:
            if not self.running:
                self._stopping.clear()
                self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
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
                    self.tick()
                except Exception:
                    logger.exception("%s: pass failed", self.thread_name)
                finally:
                    connections.close_all()
                self._stopping.wait(self.interval())
        finally:
            connections.close_all()
