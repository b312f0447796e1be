"""The scheduler's observers of run jobs (registered with the queue in ``SchedulerConfig.ready()``):
a run a schedule fired that had paused ends when its job is cancelled or lost, and its schedule
run follows that end (``schedule_runs_follow_paused``), in the same transaction. A continuation's
own end (also one that could not start) reaches the scheduler as a run-end observer
(``schedule_runs_on_run_end``, registered with the run pipeline)."""
from __future__ import annotations

from agents.pipeline.run_jobs import RUN_JOB_TYPES
from jobs.models import Job
from jobs.registry import job_hook_register

from .services.firing import schedule_runs_follow_paused


def _follow(job: Job) -> None:
    schedule_runs_follow_paused(owner_id=job.user_id, run_id=job.pk)


def run_job_cancelled(job: Job, *, reason: str, stage: str) -> None:
    if stage == "PAUSED" or job.job_type == "continue":  # a run that had paused
        _follow(job)


def continue_job_lost(job: Job, *, retrying: bool, error: str) -> None:
    if not retrying:
        _follow(job)


def schedule_job_hooks_register() -> None:
    job_hook_register("cancelled", *RUN_JOB_TYPES, hook=run_job_cancelled)
    job_hook_register("lost", "continue", hook=continue_job_lost)
