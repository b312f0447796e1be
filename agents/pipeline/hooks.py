"""Background post-hooks (``run_hooks_in_background``): run through the job queue once the run is
stored, so a slow hook (a webhook, an audit write) never delays the user's answer.

A run leaves the names of such hooks in ``run.background_hooks`` (engine.hooks); the
run's end enqueues one ``post_hooks`` job for them in its own transaction (``hooks_enqueue``),
and a worker runs them with the stored RunOutput, the component rebuilt by id (and version) for
the run's owner. The runs made inside it (a team's members, a workflow's agent and team steps)
leave theirs in ``run.child_background_hooks``: one job each (``child_hooks_enqueue``), which finds
the member inside the rebuilt top-level component. What each hook did is the job's progress
(``{"hooks": [{name, error}]}``), and a trace of its own (``background_hooks``, a span per hook).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from core.tenancy import scope_queryset
from sessions.models import Run

from jobs.models import Job
from ..registry import entry_get
from engine.aio import run_sync
from engine.hooks import component_inside, run_background_hooks
from jobs.registry import job_handler
from jobs.services.execution import execute_plain_job
from jobs.services.jobs import QueueFull, job_enqueue
from .observers import hooks_ran

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


def child_hooks_enqueue(prepared: PreparedRun, children: Sequence[dict[str, Any]]) -> list[Job]:
    """Queue the background post-hooks of the runs made inside the run (a team's members, a
    workflow's agent and team steps: ``engine.hooks.child_hooks``), one job per inner run, each
    naming the top-level component (to rebuild) and the member inside it (``member_id``)."""
    jobs = []
    for child in children:
        payload = {
            "run_id": child["run_id"], "kind": prepared.entry.kind, "component_id": prepared.component.id,
            "version": prepared.entry.version, "member_id": child["component_id"], "hooks": list(child["hooks"]),
        }
        try:
            jobs.append(job_enqueue(
                job_type=POST_HOOKS_JOB, owner_id=prepared.owner_id, payload=payload, session_id=prepared.session_id,
                component_id=prepared.component.id,
            ))
        except QueueFull:
            logger.warning("background hooks of run %s (inside %s) dropped: the job queue is full", child["run_id"], prepared.run_id)
    return jobs


@job_handler(POST_HOOKS_JOB)
def post_hooks_job(job: Job, worker: str) -> str:
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
    if payload.get("member_id"):
        # A member's or a step's run: its agent or team is found inside the top-level component.
        component = component_inside(component, payload["member_id"])
        if component is None:
            raise LookupError(f"{payload['member_id']} is no longer inside {payload['component_id']}: its background hooks were not run")
    outcomes = run_sync(
        run_background_hooks(component, payload["hooks"], run_output=dict(run.run_data or {}), user_id=job.user_id, session_id=run.session_id)
    )
    hooks_ran(run, outcomes)
    report(hooks=[{"name": outcome.name, "error": outcome.error} for outcome in outcomes])
