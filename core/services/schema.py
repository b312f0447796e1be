"""Bringing the database's schema up to the code's (AgentOS's ``POST /databases/…/migrate``).

The schema is Django's migrations; migrating applies every one not yet applied, which is what
``manage.py migrate`` (run by ``make run`` and a deployment's release step) does. A second call
finds nothing to apply. Two calls at once, from two threads or two processes, apply each
migration once: one waits for the other (a process lock, and on PostgreSQL an advisory lock
that every process shares).
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection

# pg_advisory_lock's key for "a migration is being applied" (any fixed 64-bit number will do).
MIGRATION_LOCK_KEY = 0x61676E6F5F6D6967  # "agno_mig"
_process_lock = threading.Lock()


@contextmanager
def _migration_lock() -> Iterator[None]:
    with _process_lock:
        if connection.vendor != "postgresql":
            yield
            return
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [MIGRATION_LOCK_KEY])
        try:
            yield
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [MIGRATION_LOCK_KEY])


def unapplied_migrations() -> list[str]:
    """``app_label.name`` of every migration of the code not applied to the database, in order."""
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, _backwards in plan]


def schema_migrate() -> list[str]:
    """Apply every unapplied migration; returns what was applied (empty when already current)."""
    from django.core.management import call_command

    with _migration_lock():
        pending = unapplied_migrations()
        if pending:
            call_command("migrate", interactive=False, verbosity=0)
    return pending
