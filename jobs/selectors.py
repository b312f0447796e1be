"""Reads of the job queue."""
from __future__ import annotations

from .models import Job
from .services.jobs import waiting_on


def run_waiting_on(*, run_id: str) -> str | None:
    """The run a queued run waits behind in its session, if any (its job's ``waiting_on``).
    The caller has checked its access to the run."""
    job = Job.objects.unscoped("the run's own job; the run's access was checked").filter(pk=run_id).first()
    return waiting_on(job) if job is not None else None
