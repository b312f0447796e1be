"""Recompute the metrics rows now: every user's (and the shared bucket), or one user's.

    manage.py metrics_refresh [--user USER_ID] [--full]

Incremental by default (the days whose runs changed since the last refresh). ``--full`` recomputes
every day, which also drops the rows of days whose runs were all deleted since (a deletion leaves
no changed run behind for the watermark to find).
"""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from core.tenancy import ALL_USERS
from metrics.services import RefreshAlreadyRunning, RefreshScope, metrics_refresh_run


class Command(BaseCommand):
    help = __doc__.splitlines()[0]

    def add_arguments(self, parser) -> None:
        parser.add_argument("--user", help="Only this user's rows (default: everyone's and the shared bucket)")
        parser.add_argument("--full", action="store_true", help="Recompute every day, not only the changed ones")

    def handle(self, *args, user: str | None = None, full: bool = False, **options) -> None:
        scope = RefreshScope.of(user if user else ALL_USERS)
        try:
            written = metrics_refresh_run(scope=scope, full=full)
        except RefreshAlreadyRunning:
            raise CommandError("A metrics refresh of this scope is already running") from None
        self.stdout.write(f"{len(written)} metrics rows rewritten ({scope.key})")
