"""Worker liveness: a heartbeat row per worker, so a lost process is noticed in seconds.

A job's lease (AGENTOS_BACKGROUND_LEASE_SECONDS, a minute) is how long a stalled worker may keep a
job; waiting for it after a process has died leaves followers a minute without frames. So each
process's watch thread also writes one row per worker name it holds jobs under
(``process_beat``, every AGENTOS_PROCESS_HEARTBEAT_SECONDS), and the reaper gives up the jobs of
a worker whose beat stopped (``lost_workers``) once it is AGENTOS_PROCESS_LOST_AFTER_SECONDS old:
retried while attempts remain, failed visibly otherwise, as after an expired lease.

A beat that is old because the database was away (every process's is, after an outage) must not
pass for a lost process: the reaper applies the rule only when its own previous pass is recent,
so after an outage every process has had a pass's time to beat again first.
"""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from ..models import ProcessBeat

REAPER = "~reaper"
# Rows of workers gone this long are deleted (their jobs were reaped long before).
FORGET_AFTER = timedelta(hours=1)


def process_beat(names: Iterable[str], *, now: datetime | None = None) -> None:
    """The workers ``names`` are alive now (one statement)."""
    now = now or timezone.now()
    rows = [ProcessBeat(name=name, beat_at=now) for name in sorted(set(names))]
    if rows:
        ProcessBeat.objects.bulk_create(rows, update_conflicts=True, update_fields=["beat_at"], unique_fields=["name"])


def reaper_pass(*, now: datetime) -> bool:
    """Record a reaper pass; whether heartbeats may be trusted in it (the liveness rule applies).

    Not when the reaper's previous pass is not recent (the first pass, or the first after the
    database or the reaper itself was away): every process then gets a pass's time to beat
    again before its silence counts. One verdict per pass: its job and inline reapers share it."""
    previous = ProcessBeat.objects.filter(name=REAPER).values_list("beat_at", flat=True).first()
    process_beat([REAPER], now=now)
    recent = timedelta(seconds=max(3 * settings.AGENTOS_REAPER_INTERVAL_SECONDS, settings.AGENTOS_PROCESS_LOST_AFTER_SECONDS))
    return previous is not None and previous >= now - recent


def lost_workers(*, now: datetime) -> list[str]:
    """The workers whose heartbeat stopped (ask only in a pass that trusts heartbeats)."""
    lost_after = timedelta(seconds=settings.AGENTOS_PROCESS_LOST_AFTER_SECONDS)
    ProcessBeat.objects.filter(beat_at__lt=now - FORGET_AFTER).exclude(name=REAPER).delete()
    return list(ProcessBeat.objects.filter(beat_at__lt=now - lost_after).exclude(name=REAPER).values_list("name", flat=True))


def reap(*, now: datetime | None = None) -> None:
    """One reaper pass (beat's ``reap_jobs``, the embedded worker's reaper): background jobs and
    inline runs whose process is lost, with one verdict on whether heartbeats are trusted."""
    from ..pipeline.inline import inline_runs_reap
    from .jobs import job_reap

    now = now or timezone.now()
    trusted = reaper_pass(now=now)
    job_reap(now=now, trusted=trusted)
    inline_runs_reap(now=now, trusted=trusted)
