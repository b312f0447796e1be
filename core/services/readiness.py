"""Readiness (``GET /ready``): whether this process can do its work, for load balancers and
orchestrators. ``GET /health`` stays AgentOS's liveness answer, which looks at nothing.

Ready means every check passes:

- ``database``: a connection is lent (by the pool) and answers ``SELECT 1``;
- ``migrations``: no migration of the code is unapplied to that database;
- ``broker``: Redis answers ``PING`` (only when ``REDIS_URL`` is set);
- ``reaper``: some process (beat's task on a Celery worker, or an embedded worker) finished a
  reaper pass within ``READY_REAPER_MAX_AGE_SECONDS``; each pass records itself
  (``reaper_pass_record``) in ``core.PeriodicPass``.
"""
from __future__ import annotations

import logging
import os
import socket
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from ..models import PeriodicPass
from .schema import unapplied_migrations

logger = logging.getLogger("agno_site.readiness")

CHECKS = ("database", "migrations", "broker", "reaper")


def reaper_pass_record() -> None:
    """A reaper pass has finished (called after each, by whoever ran it): one upsert."""
    PeriodicPass.objects.update_or_create(
        name=PeriodicPass.REAPER, defaults={"last_at": timezone.now(), "by": f"{socket.gethostname()}-{os.getpid()}"},
    )


def _database() -> dict[str, Any]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return {"ok": True}


def unapplied_detail(names: list[str]) -> str:
    return f"{len(names)} unapplied migration(s): {', '.join(names[:5])}{' …' if len(names) > 5 else ''} (run manage.py migrate)"


def older_than_the_code() -> str | None:
    """Why this process must not serve the database (it lacks some of the code's migrations),
    with the fix; None when it has them all, or does not answer (``/ready`` reports that)."""
    from django.db import DatabaseError

    try:
        names = unapplied_migrations()
    except DatabaseError:
        return None
    finally:
        connection.close()
    if not names:
        return None
    return f"The database is older than the code: {unapplied_detail(names)}. Run `manage.py migrate` with the same settings (`make run` does), then start again."


def _migrations() -> dict[str, Any]:
    names = unapplied_migrations()
    if names:
        return {"ok": False, "detail": unapplied_detail(names)}
    return {"ok": True}


def _broker() -> dict[str, Any]:
    if not settings.REDIS_URL:
        return {"ok": True, "detail": "not configured (no REDIS_URL)"}
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=2)
    try:
        client.ping()
    finally:
        client.close()
    return {"ok": True}


def _reaper() -> dict[str, Any]:
    last = PeriodicPass.objects.filter(name=PeriodicPass.REAPER).values_list("last_at", flat=True).first()
    limit = settings.READY_REAPER_MAX_AGE_SECONDS
    if last is None:
        return {"ok": False, "detail": "no reaper pass recorded yet (is a worker, or beat with a Celery worker, running?)"}
    age = max(0.0, (timezone.now() - last).total_seconds())
    if age > limit:
        return {"ok": False, "detail": f"the reaper's last pass was {int(age)} s ago (more than READY_REAPER_MAX_AGE_SECONDS={limit})", "last_pass_seconds_ago": int(age)}
    return {"ok": True, "last_pass_seconds_ago": int(age)}


def readiness_report() -> dict[str, Any]:
    """Every check's outcome (``{"ok": bool, "detail"?: str}``) and whether all passed. A check
    that raises has failed, with the error as its detail; the database's own failure skips the
    checks that need it."""
    checks: dict[str, dict[str, Any]] = {}
    runners = {"database": _database, "migrations": _migrations, "broker": _broker, "reaper": _reaper}
    for name in CHECKS:
        if name in ("migrations", "reaper") and not checks["database"]["ok"]:
            checks[name] = {"ok": False, "detail": "skipped: the database is unreachable"}
            continue
        try:
            checks[name] = runners[name]()
        except Exception as exc:  # noqa: BLE001 - any failure is the check's outcome
            # The error itself (hosts, ports) goes to the log, not to an unauthenticated caller.
            logger.warning("readiness: %s check failed: %s", name, exc)
            checks[name] = {"ok": False, "detail": f"unreachable ({type(exc).__name__}; the server's log has the error)"}
    failing = [name for name in CHECKS if not checks[name]["ok"]]
    return {"ready": not failing, "failing": failing, "checks": checks}

