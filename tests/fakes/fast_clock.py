"""A wall clock that runs ``rate`` times faster, for the real processes a cron test starts.

``FastClock(rate).env()`` is what to add to such a process's environment: every process started
with it reads the same fast wall clock (tests/fakes/fast_clock_site/sitecustomize.py), whenever
it started; ``now()`` reads that clock in the test's own process. A minute of cron ticks then
takes 60 / rate seconds, with the real beat, workers and tickers deciding what is due; only the
wall clock is faster (sleeps, timeouts and the database server's clock are real).

The fast clock starts a day behind the real one (and stays behind for hours), because one
statement reads the database server's clock: the PostgreSQL queue claim
(jobs.services.claims), which takes jobs whose ``available_at``, written by Python, has come by
the server's clock. Behind it, a queued job is available at once, as it is at real speed, and a
lease (the claim writes its end by the server's clock, the reaper compares by Python's) does
not expire early. What the test process writes for the processes to read on that clock (a
schedule's ``next_run_at``) it writes inside ``clock.patched()``.
"""
from __future__ import annotations

import os
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from unittest import mock

SITE = Path(__file__).resolve().with_name("fast_clock_site")


class FastClock:
    def __init__(self, rate: float, *, behind_seconds: float = 86400) -> None:
        self.rate = rate
        self.real_start = time.time()
        self.fake_start = self.real_start - behind_seconds

    def env(self) -> dict[str, str]:
        path = os.pathsep.join(filter(None, [str(SITE), os.environ.get("PYTHONPATH", "")]))
        return {"FAST_CLOCK": f"{self.real_start}:{self.fake_start}:{self.rate}", "PYTHONPATH": path}

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.fake_start + (time.time() - self.real_start) * self.rate, timezone.utc)

    def real_seconds(self, fake_seconds: float) -> float:
        return fake_seconds / self.rate

    @contextmanager
    def patched(self):
        """Django's ``timezone.now`` reads this clock in the test's process meanwhile."""
        with mock.patch("django.utils.timezone.now", self.now):
            yield
