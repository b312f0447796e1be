"""Reads of the job queue: what could start, how it stands, what a job waits on."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import Count, Q
from django.utils import timezone

from .models import Job, JobStatus


def queue_jobs():
    """Jobs as the queue sees them: every user's (workers and the reaper act for all users)."""
    return Job.objects.unscoped("the queue itself: claims, caps and reaping span every user")


def startable_count() -> int:
    """How many queued jobs could start now, as far as the global cap allows (one read)."""
    now = timezone.now()
    counts = queue_jobs().aggregate(
        ready=Count("id", filter=Q(status=JobStatus.QUEUED, available_at__lte=now)),
        running=Count("id", filter=Q(status=JobStatus.RUNNING)),
        branches=Count("id", filter=Q(status=JobStatus.QUEUED, available_at__lte=now) & ~Q(parent_job_id="")),
    )
    # Parallel branches take their waiting parents' places (see the claim), beyond the cap.
    return max(0, min(counts["ready"], settings.AGENTOS_BACKGROUND_MAX_CONCURRENCY - counts["running"]), counts["branches"])


def jobs_ended(job_ids: list[str], *, cancelled: str, unfinished: str) -> dict[str, str]:
    """Of ``job_ids``, the jobs that have ended, each with why its work did not finish: its own
    error, else ``cancelled`` for a cancelled one or ``unfinished`` for one that ended without an
    error. For a family whose rows follow a job (an eval, a content being ingested) to settle the
    rows whose job ended without them; one query."""
    ended = queue_jobs().filter(
        pk__in=list(job_ids), status__in=(JobStatus.FAILED, JobStatus.CANCELLED, JobStatus.COMPLETED),
    ).values_list("id", "status", "error")
    return {job_id: error or (cancelled if status == JobStatus.CANCELLED else unfinished) for job_id, status, error in ended}


def queue_stats() -> dict[str, Any]:
    counts = dict(queue_jobs().values_list("status").annotate(n=Count("id")).values_list("status", "n"))
    oldest = queue_jobs().filter(status=JobStatus.QUEUED).order_by("created_at").values_list("created_at", flat=True).first()
    return {
        "counts": counts,
        "oldest_queued_age_seconds": int((timezone.now() - oldest).total_seconds()) if oldest else None,
    }


def waiting_on(job: Job) -> str | None:
    """The run a queued job waits behind in its session, if any."""
    if job.status != JobStatus.QUEUED or not job.session_id or job.parent_job_id:
        return None  # a parallel branch's parent holds the session's turn for it
    others = queue_jobs().filter(Q(status=JobStatus.RUNNING) | Q(status=JobStatus.QUEUED, created_at__lt=job.created_at), session_id=job.session_id)
    if job.group_id:
        others = others.exclude(group_id=job.group_id)
    others = others.exclude(parent_job_id=job.pk)  # a workflow run's own branches do not hold it
    blocker = (
        others
        .exclude(pk=job.pk)
        .order_by("created_at")
        .values_list("id", flat=True)
        .first()
    )
    return blocker


def run_waiting_on(*, run_id: str) -> str | None:
    """The run a queued run waits behind in its session, if any (its job's ``waiting_on``).
    The caller has checked its access to the run."""
    job = Job.objects.unscoped("the run's own job; the run's access was checked").filter(pk=run_id).first()
    return waiting_on(job) if job is not None else None
