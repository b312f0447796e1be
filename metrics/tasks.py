"""The metrics refresh as a background job of the engine's queue (agents.services.jobs), and
beat's periodic task that asks for it (``CELERY_BEAT_SCHEDULE["metrics-refresh"]``)."""
from __future__ import annotations

from typing import Callable

from celery import shared_task

from agents.models import Job
from agents.pipeline.background import JobCancelled, execute_plain_job
from agents.services.jobs import job_handler

from .services import RefreshScope, metrics_recompute, metrics_refresh_periodic, refresh_finish, states

METRICS_REFRESH_JOB = "metrics_refresh"


@job_handler(METRICS_REFRESH_JOB)
def metrics_refresh_job(job: Job, worker: str) -> str:
    return execute_plain_job(job, worker, _refresh)


def _refresh(job: Job, report: Callable[..., None]) -> None:
    scope = RefreshScope(key=job.payload["scope"], user_id=job.payload.get("user_id"))
    state = states().filter(scope=scope.key).first()
    try:
        result = metrics_recompute(
            scope=scope, since=None if job.payload.get("full") or state is None else state.watermark,
            previous_tz=state.time_zone if state is not None else "", report=report,
        )
    except JobCancelled:
        refresh_finish(scope=scope, error="The refresh was cancelled")
        raise
    except BaseException as exc:
        refresh_finish(scope=scope, error=str(exc) or type(exc).__name__)
        raise
    refresh_finish(scope=scope, watermark=result.watermark, tz=result.timezone, days=len(result.days))
    report(days_recomputed=len(result.days), rows_written=len(result.rows))


@shared_task(name="agno_site.metrics.refresh", ignore_result=True, soft_time_limit=60, time_limit=90)
def periodic_refresh() -> str | None:
    """Beat says an interval may have begun: accept its refresh job, if nobody has (the job, not
    this task, recomputes; a worker takes it from the queue). Not retried: the next send is half
    an interval away. Returns the job's id, or None."""
    return metrics_refresh_periodic()
