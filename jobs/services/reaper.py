"""The reaper: jobs whose worker was lost (an expired lease, a worker whose heartbeat stopped)
are queued again while attempts remain, else failed visibly; then what other apps registered
(jobs.registry.reaper_register) gives up what a lost process held outside the job table."""
from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from ..models import Job, JobStatus
from ..registry import job_hooks_call, reapers
from .jobs import dispatch, queue_lock
from .liveness import lost_workers, reaper_pass

logger = logging.getLogger("agno_site.jobs")

WORKER_LOST = (
    "Worker lost and attempt budget exhausted; the run was not re-executed. Raise "
    "AGENTOS_BACKGROUND_MAX_ATTEMPTS to retry such runs, or requeue it from the admin."
)


def _jobs():
    return Job.objects.unscoped("the reaper acts for every user's jobs")


def job_reap(*, now: datetime | None = None, trusted: bool | None = None) -> tuple[list[str], list[str]]:
    """Expired leases, and the jobs of workers whose heartbeat stopped (jobs.services.liveness):
    requeue while attempts remain, else fail the run visibly ("worker lost"). ``trusted``: this
    pass's ``reaper_pass`` verdict (None: this call records the pass)."""
    now = now or timezone.now()
    if trusted is None:
        trusted = reaper_pass(now=now)
    retried: list[str] = []
    failed: list[str] = []
    with transaction.atomic():
        queue_lock()
        lost = Q(lease_expires_at__lt=now)
        silent = lost_workers(now=now) if trusted else []
        if silent:
            # Held by a worker that stopped beating, and not claimed (or renewed) since then.
            quiet_since = now - timedelta(seconds=settings.AGENTOS_PROCESS_LOST_AFTER_SECONDS)
            lost |= Q(locked_by__in=silent, updated_at__lt=quiet_since)
        for job in _jobs().filter(lost, status=JobStatus.RUNNING).select_for_update():
            if job.attempt < job.max_attempts:
                delay = settings.AGENTOS_BACKGROUND_RETRY_DELAY_SECONDS * (2 ** max(0, job.attempt - 1))
                _jobs().filter(pk=job.pk).update(
                    status=JobStatus.QUEUED, locked_by="", lease_expires_at=None, updated_at=now,
                    available_at=now + timedelta(seconds=min(delay, 10 * settings.AGENTOS_BACKGROUND_RETRY_DELAY_SECONDS)),
                    error=f"worker {job.locked_by} lost on attempt {job.attempt}; retrying",
                )
                job_hooks_call("lost", job, retrying=True, error="")
                retried.append(job.pk)
            else:
                _jobs().filter(pk=job.pk).update(status=JobStatus.FAILED, lease_expires_at=None, error=WORKER_LOST, updated_at=now, completed_at=now)
                job_hooks_call("lost", job, retrying=False, error=WORKER_LOST)  # its run fails, saying so
                failed.append(job.pk)
        if retried:
            transaction.on_commit(dispatch)
    if retried or failed:
        logger.warning("reaper: %d job(s) requeued, %d failed after losing their worker", len(retried), len(failed))
    return retried, failed


def reap(*, now: datetime | None = None) -> None:
    """One reaper pass (beat's ``reap_jobs``, the embedded worker's reaper): background jobs, then
    what other apps registered (inline runs whose process is lost), with one verdict on whether
    heartbeats are trusted."""
    now = now or timezone.now()
    trusted = reaper_pass(now=now)
    job_reap(now=now, trusted=trusted)
    for reaper in reapers():
        reaper(now=now, trusted=trusted)
