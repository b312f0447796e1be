"""Executing a claimed job: its lease, renewed by the process's watch while it works, and the
plain job (not a run: an ingestion, a refresh, an eval) whose body reports its progress."""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import DatabaseError, transaction

from sessions.models import RunStatus

from ..models import Job
from .cancellation import cancel_checker, cancel_local, forget_local
from .jobs import job_ended, job_heartbeat, job_progress, job_settle_fenced
from .watch import watch

logger = logging.getLogger("agno_site.jobs")


class Lease:
    """A job's lease, renewed by the watch every third of its length; the run is stopped if the
    lease is lost (the reaper gave the job to another attempt) or the run goes on too long."""

    def __init__(self, job: Job, worker: str) -> None:
        self.job, self.worker = job, worker
        self.lost = False
        self.interval = max(1.0, settings.AGENTOS_BACKGROUND_LEASE_SECONDS / 3)
        started = time.monotonic()
        self.renew_at = started + self.interval
        # A run's own timeout (a schedule's, in its payload), else the deployment's.
        timeout = (job.payload or {}).get("timeout_seconds") or settings.AGENTOS_BACKGROUND_TIMEOUT_SECONDS
        self.deadline = started + int(timeout)
        self.timed_out = False

    def tick(self, now: float) -> None:
        if self.lost or now < self.renew_at:
            return
        self.renew_at = now + self.interval
        if not job_heartbeat(job_id=self.job.pk, worker=self.worker, attempt=self.job.attempt):
            self.lost = True
            cancel_local(self.job.pk)
        elif now > self.deadline and not self.timed_out:
            self.timed_out = True
            logger.warning("job %s ran past AGENTOS_BACKGROUND_TIMEOUT_SECONDS; cancelling it", self.job.pk)
            cancel_local(self.job.pk)


class JobCancelled(Exception):
    """Raised by a job's ``report`` once the job was cancelled or its lease lost: stop working."""


def execute_plain_job(job: Job, worker: str, work: Callable[[Job, Callable[..., None]], Any]) -> str:
    """Execute a job that is not a run (a handler's body): ``work(job, report)`` does the work and
    calls ``report(**progress)`` as it goes, which records the progress and raises JobCancelled
    once the job was cancelled or its lease lost. The lease is renewed meanwhile, and the job's end
    is written fenced: COMPLETED, or FAILED with the exception's message, which says what a user
    or an operator can do about it. Returns the job's final run-style status."""
    lease = Lease(job, worker)
    is_cancelled = cancel_checker(job.pk, job.user_id)  # a lost lease cancels it locally too
    watch.add(job.pk, lease)

    def report(**progress: Any) -> None:
        if lease.lost or is_cancelled() or not job_progress(job=job, worker=worker, **progress):
            raise JobCancelled(job.pk)

    try:
        work(job, report)
    except JobCancelled:
        status, error = RunStatus.CANCELLED, "cancelled"
    except DatabaseError:
        raise  # the database went away: the reaper retries the job or fails it visibly
    except Exception as exc:
        logger.warning("job %s (%s) failed: %.1000s", job.pk, job.job_type, exc)  # a message may quote any input: bounded
        status, error = RunStatus.ERROR, str(exc) or type(exc).__name__
    else:
        status, error = RunStatus.COMPLETED, ""
    finally:
        watch.remove(job.pk)
        forget_local(job.pk)
    with transaction.atomic():
        if lease.lost or not job_settle_fenced(job=job, worker=worker, run_status=status, error=error):
            return "LOST"
        job_ended(job=job, status=status)
    return status
