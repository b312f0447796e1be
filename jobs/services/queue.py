"""The job queue as an operator reads and steers it (``/queue``): every user's jobs, listed,
read, requeued through ``job_requeue`` (the admin console's retry), and counted."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from core.tenancy import ALL_USERS, scope_queryset

from ..models import CancelIntent, Job, JobStatus
from .jobs import job_requeue

# The columns a listing may sort by (AgentOS's list); any other sort_by is ignored, as there.
SORTABLE = ("created_at", "updated_at", "completed_at", "status", "attempt", "component_type", "component_id", "user_id")


class JobMissing(Exception):
    def __init__(self, job_id: str) -> None:
        super().__init__(f"Job queue job {job_id} not found")


class NotRequeueable(Exception):
    def __init__(self, job_id: str) -> None:
        super().__init__(f"Job {job_id} not found or not in a requeueable state")


class RequeueRefused(Exception):
    """A requeue that needs the operator's explicit override (AgentOS's 409)."""


@dataclass(frozen=True)
class JobFilters:
    statuses: Sequence[str] = ()
    session_ids: Sequence[str] = ()
    user_id: str | None = None


def _jobs():
    return scope_queryset(Job.objects, ALL_USERS)


def queue_job_list(*, filters: JobFilters, sort_by: str, descending: bool, offset: int, limit: int) -> tuple[list[Job], int]:
    """One page of jobs, and how many match. Two queries."""
    jobs = _jobs()
    if filters.statuses:
        jobs = jobs.filter(status__in=filters.statuses)
    if filters.session_ids:
        jobs = jobs.filter(session_id__in=filters.session_ids)
    if filters.user_id:
        jobs = jobs.filter(user_id=filters.user_id)
    column = sort_by if sort_by in SORTABLE else "created_at"
    ordered = jobs.order_by(f"-{column}" if descending else column, "-id" if descending else "id")
    return list(ordered[offset : offset + limit]), jobs.count()


def queue_job_get(*, job_id: str) -> Job:
    job = _jobs().filter(pk=job_id).first()
    if job is None:
        raise JobMissing(job_id)
    return job


def queue_job_requeue(*, job_id: str, clear_cancellation: bool, force: bool) -> Job:
    """One more attempt for a failed or cancelled job, refused where AgentOS asks the operator to
    say so: a cancelled run whose cancel still stands (it would be cancelled again at once)
    without ``clear_cancellation``, and a job failed within the lease (its worker may still be
    writing) without ``force``."""
    job = queue_job_get(job_id=job_id)
    if job.status not in (JobStatus.FAILED, JobStatus.CANCELLED):
        raise NotRequeueable(job_id)
    cancelled = CancelIntent.objects.unscoped("keyed by run id; the operator may requeue any job").filter(run_id=job.pk).exists()
    if cancelled and not clear_cancellation:
        raise RequeueRefused(f"Job {job_id} was cancelled and its cancellation still stands: requeue with clear_cancellation=true to override it")
    grace = timedelta(seconds=settings.AGENTOS_BACKGROUND_LEASE_SECONDS)
    if job.status == JobStatus.FAILED and not force and job.completed_at and timezone.now() - job.completed_at < grace:
        raise RequeueRefused(f"Job {job_id} failed less than {grace.seconds} s ago and its worker may still be executing: requeue with force=true")
    requeued = job_requeue(job_id=job_id, clear_cancellation=clear_cancellation)
    if requeued is None:  # settled otherwise since it was read
        raise NotRequeueable(job_id)
    return requeued
