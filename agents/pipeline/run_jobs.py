"""The run job types, registered with the queue (jobs.registry) from ``AgentsConfig.ready()``:
what executes them, and how a run's row follows what the queue does to its job.

"run" (a background run), "continue" (a paused run continued) and "branch" (a continuation in a
new run) are runs: their job's id is the run's id. A workflow's parallel branch
("workflow-branch") is a job of the workflow's run and has no run row of its own, so it has an
execute and no hooks.
"""
from __future__ import annotations

from jobs.models import Job
from jobs.registry import job_hook_register, job_type_register, reaper_register
from sessions.models import Run, RunStatus
from sessions.services.runs import run_transition

from .background import run_job_execute
from .eventlog import run_error_ending
from .inline import inline_runs_reap
from .workflow_branches import BRANCH_JOB_TYPE, branch_job_execute, branch_jobs_stop

RUN_JOB_TYPES = ("run", "continue", "branch")


def run_job_cancelled(job: Job, *, reason: str, stage: str) -> None:
    """A queued or paused run job was cancelled: its run ends CANCELLED at once, with the reason
    and the stage it was cancelled at (AgentOS's ``cancellation_stage``)."""
    run = Run.objects.unscoped("the job's own run").filter(pk=job.pk).first()
    if run is None:
        return
    data = {**(run.run_data or {}), "status": RunStatus.CANCELLED, "content": reason, "cancellation_stage": stage}
    run_transition(
        run_id=job.pk, expected=[RunStatus.PENDING, RunStatus.PAUSED, RunStatus.RUNNING], to=RunStatus.CANCELLED,
        run_data=data, content=reason,
    )


def run_job_lost(job: Job, *, retrying: bool, error: str) -> None:
    """The reaper took a run job from a lost worker: its run is PENDING again for the next
    attempt, or it ends as any failed run does (a stored RunError, published to followers), and a
    workflow run's parallel branches stop, nobody waiting for them any more."""
    if retrying:
        run_transition(run_id=job.pk, expected=[RunStatus.RUNNING, RunStatus.PENDING], to=RunStatus.PENDING)
        return
    run = Run.objects.unscoped("the job's own run").filter(pk=job.pk).first()
    data = {**((run.run_data if run else None) or {}), "status": RunStatus.ERROR, "content": error}
    if run is not None and run_transition(
        run_id=job.pk, expected=[RunStatus.RUNNING, RunStatus.PENDING], to=RunStatus.ERROR, error=error, content=error, run_data=data,
    ):
        run_error_ending(run=run, session_id=run.session_id, component_id=job.component_id, content=error, error_type="worker_lost")
    if job.component_type == "workflow" and not job.parent_job_id:
        branch_jobs_stop(parent_job_id=job.pk, reason="the workflow run's worker was lost")


def run_job_requeued(job: Job) -> None:
    """An operator retried a failed or cancelled run job: its run is PENDING again."""
    run_transition(run_id=job.pk, expected=[RunStatus.ERROR, RunStatus.CANCELLED], to=RunStatus.PENDING, error="", finished_at=None)


def run_job_types_register() -> None:
    job_type_register(*RUN_JOB_TYPES, execute=run_job_execute)
    job_type_register(BRANCH_JOB_TYPE, execute=branch_job_execute)
    job_hook_register("cancelled", *RUN_JOB_TYPES, hook=run_job_cancelled)
    job_hook_register("lost", *RUN_JOB_TYPES, hook=run_job_lost)
    job_hook_register("requeued", *RUN_JOB_TYPES, hook=run_job_requeued)
    # An inline run's process is lost as a worker is: the reaper fails it with the reason.
    reaper_register(inline_runs_reap)
