"""Keeping credentials out of logs and error reports; keeping repeated failures from flooding them."""
from __future__ import annotations

import re
import threading
import time

from django.views.debug import SafeExceptionReporterFilter


class CredentialFilter(SafeExceptionReporterFilter):
    """Django's filter, also hiding the Authorization header and idempotency keys."""

    hidden_settings = re.compile(r"API|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|AUTHORIZATION", flags=re.I)


class Throttle:
    """For a failure that repeats in a loop (Redis down, the database away): ``due()`` is true at
    most once per ``seconds``, so it is logged when it starts and then now and then."""

    def __init__(self, seconds: float = 30.0) -> None:
        self.seconds = seconds
        self._last: float | None = None
        self._lock = threading.Lock()

    def due(self) -> bool:
        now = time.monotonic()
        with self._lock:
            if self._last is not None and now - self._last <= self.seconds:
                return False
            self._last = now
            return True
