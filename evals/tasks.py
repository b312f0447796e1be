"""The job handlers of evals (agents.services.jobs): one eval run, or a batch over a dataset.

Both are plain jobs (``execute_plain_job``): the lease is renewed while they work, progress is
recorded as they go (on the job and on the row), a cancel stops them at the next report, and
their end is written fenced. The job's payload holds ids only.
"""
from __future__ import annotations

from agents.models import Job
from agents.pipeline.background import execute_plain_job
from agents.services.jobs import job_handler
from core.auth import principal_from_grant

from .execution import batch_execute, eval_run_execute
from .services import BATCH_JOB, EVAL_JOB


@job_handler(EVAL_JOB)
def eval_job(job: Job, worker: str) -> str:
    return execute_plain_job(job, worker, lambda job, report: eval_run_execute(
        run_id=job.payload["eval_run_id"], owner_id=job.user_id, report=report, principal=principal_from_grant(job.payload.get("principal")),
    ))


@job_handler(BATCH_JOB)
def eval_batch_job(job: Job, worker: str) -> str:
    return execute_plain_job(job, worker, lambda job, report: batch_execute(batch_id=job.payload["batch_id"], owner_id=job.user_id, report=report))
