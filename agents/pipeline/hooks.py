"""Background post-hooks (``run_hooks_in_background``): run through the job queue once the run is
stored, so a slow hook (a webhook, an audit write) never delays the user's answer.

A run leaves the names of such hooks in ``run.background_hooks`` (engine.hooks); the
run's end enqueues one ``post_hooks`` job for them in its own transaction (``hooks_enqueue``),
and a worker runs them with the stored RunOutput, the component rebuilt by id (and version) for
the run's owner. What each hook did is the job's progress (``{"hooks": [{name, error}]}``).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from core.tenancy import scope_queryset
from sessions.models import Run

from ..models import Job
from ..registry import entry_get
from engine.aio import run_sync
from engine.hooks import run_background_hooks
from ..services.jobs import QueueFull, job_enqueue, job_handler

if TYPE_CHECKING:
    from .runs import PreparedRun

logger = logging.getLogger("agno_site.hooks")

POST_HOOKS_JOB = "post_hooks"


def hooks_enqueue(prepared: PreparedRun, names: Sequence[str]) -> Job | None:
    """Queue the run's background post-hooks (inside the run end's transaction: the job exists
    only if the run's end was stored). A full queue drops them, logged: the run's end must not
    fail for a hook."""
    if not names:
        return None
    payload = {
        "run_id": prepared.run_id, "kind": prepared.entry.kind, "component_id": prepared.component.id,
        "version": prepared.entry.version, "hooks": list(names),
    }
    try:
        return job_enqueue(
            job_type=POST_HOOKS_JOB, owner_id=prepared.owner_id, payload=payload, session_id=prepared.session_id,
            component_id=prepared.component.id,
        )
    except QueueFull:
        logger.warning("background hooks of run %s dropped: the job queue is full", prepared.run_id)
        return None


@job_handler(POST_HOOKS_JOB)
def post_hooks_job(job: Job, worker: str) -> str:
    from .background import execute_plain_job

    return execute_plain_job(job, worker, _run_hooks)


def _run_hooks(job: Job, report: Callable[..., None]) -> None:
    payload = job.payload
    run = scope_queryset(Run.objects, job.user_id).filter(pk=payload["run_id"]).first()
    if run is None:
        raise LookupError(f"Run {payload['run_id']} is gone: its background hooks were not run")
    entry = entry_get(payload["kind"], payload["component_id"], version=payload.get("version"))
    if entry is None:
        raise LookupError(f"{payload['kind'].capitalize()} {payload['component_id']} is no longer available: its background hooks were not run")
    component: Any = entry.build(job.user_id)
    outcomes = run_sync(
        run_background_hooks(component, payload["hooks"], run_output=dict(run.run_data or {}), user_id=job.user_id, session_id=run.session_id)
    )
    report(hooks=[{"name": outcome.name, "error": outcome.error} for outcome in outcomes])
