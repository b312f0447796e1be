"""Sweep the schedules once (fire what is due, settle fires, start retries), or keep sweeping.

``manage.py scheduler_tick`` runs one sweep and prints what it did (cron-friendly);
``--loop`` runs the embedded ticker in the foreground, as a web process does without a broker
(a scheduler process of its own; any number of them may run: a fire is claimed once).
"""
from __future__ import annotations

import signal
import threading

from django.core.management.base import BaseCommand

from scheduler.services.firing import scheduler_tick


class Command(BaseCommand):
    help = "Fire due schedules, follow fired runs and start due retries (once, or --loop)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--loop", action="store_true", help="keep sweeping every SCHEDULER_TICK_SECONDS until stopped")

    def handle(self, *args, loop: bool, **options) -> None:
        if not loop:
            done = scheduler_tick()
            self.stdout.write(f"fired {done['fired']}, settled {done['settled']}")
            return
        from django.conf import settings

        from jobs.worker import embedded_worker, serve_jobs
        from scheduler.ticker import Ticker

        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        ticker = Ticker()
        ticker._enabled_override = True
        ticker.start()
        if not settings.REDIS_URL:
            serve_jobs()  # a long-lived process: without a broker it runs what it fires
            embedded_worker().start()
        self.stdout.write("scheduler ticker running", ending="\n")
        self.stdout.flush()
        stop.wait()
        ticker.stop()
        if not settings.REDIS_URL:
            embedded_worker().stop()
