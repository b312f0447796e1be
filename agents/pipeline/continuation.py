"""Continuing a run: a paused run with the human's decisions, or a run again from a message
boundary (an edit, a regeneration, a retry of a failed run), inline or as a background job.

A continuation is a ``PreparedRun`` too (agents.pipeline.runs), executed as any run is
(agents.pipeline.execution): under the continued run's own id (a paused run, a failed one
retried) or as a new run beside it (a fork, a regeneration).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import Max
from django.utils import timezone

from core.auth import Principal, principal_from_grant, principal_grant
from core.tenancy import scope_queryset
from sessions.models import Run, RunEvent, RunStatus, Session
from sessions.selectors import run_history
from sessions.services.runs import new_id

from engine import InvalidContinuation, RunContext
from engine.checkpoints import boundary
from jobs.services.jobs import job_submit
from .authority import component_entry, component_entry_pinned, run_authorize
from .context import BufferedMemoryStore
from .runs import (
    DECISIONS_WITH_BRANCH,
    Component,
    Continuation,
    Entry,
    PreparedRun,
    RunNotContinuable,
    component_for,
    context_for_run,
    fork_input,
    owner_scope,
    resumed,
    run_for_caller,
)


def continue_prepare(
    *,
    principal: Principal,
    component_id: str,
    kind: str,
    run_id: str,
    session_id: str,
    requested_user_id: str | None,
    tools: list[dict[str, Any]] | None,
    stream: bool = True,
    stream_events: bool = True,
    continuation: Continuation | None = None,
    checks_only: bool = False,
) -> PreparedRun:
    """A continuation of the caller's run, ready to execute; ``checks_only``: checked as fully,
    for a background job that its worker prepares again (no history or memories read here)."""
    run_authorize(principal, kind, component_id)
    run = run_for_caller(principal=principal, run_id=run_id, session_id=session_id, requested_user_id=requested_user_id, component_id=component_id)
    if run.parent_run_id:
        # A team member's or a workflow step's run goes on only with the run it is part of: on its
        # own it would run past its parent (which stays paused, or has moved on), and nothing the
        # parent decides (its approvals, its scope) would hold for it.
        raise RunNotContinuable(f"Run {run.pk} is part of run {run.parent_run_id}: continue that run")
    session = scope_queryset(Session.objects, owner_scope(run.user_id)).get(pk=run.session_id)
    continuation = continuation or Continuation()
    if tools and run.status != RunStatus.PAUSED:
        # Decisions sent again (a client retrying its confirmation) must not start another run.
        if run.run_type == "workflow":
            raise RunNotContinuable(_WORKFLOW_NOT_PAUSED.get(run.status, f"run is not paused (status={run.status})"))
        raise RunNotContinuable(f"Run {run.pk} is {run.status}, not PAUSED: there is nothing to continue")
    if not (continuation.plain and run.status == RunStatus.PAUSED):
        if tools:
            raise InvalidContinuation(DECISIONS_WITH_BRANCH)
        if run.run_type == "workflow":
            raise RunNotContinuable(f"Cannot continue a run that is not paused. Current status: {run.status}")
        prepared = _branch_prepare(run=run, session=session, continuation=continuation, stream_events=stream_events, checks_only=checks_only)
        prepared.streamed = stream
        prepared.ctx.principal = principal
        return prepared
    prepared = continue_prepare_for_owner(run=run, session=session, tools=tools, stream_events=stream_events, factory_input=continuation.factory_input)
    prepared.streamed = stream
    prepared.ctx.principal = principal
    # Validate the decisions now, so a bad request is a 400 before anything runs.
    resumed(prepared.component, run.run_data, prepared.decisions, prepared.ctx, stream_events)
    return prepared


# AgentOS's 409 details for a workflow run continued when it is not paused (a client that
# sends its step_requirements again reads these).
_WORKFLOW_NOT_PAUSED = {
    RunStatus.PENDING: "run is already pending",
    RunStatus.RUNNING: "run is already running",
    RunStatus.COMPLETED: "run is already completed",
    RunStatus.ERROR: "run has errored",
    RunStatus.CANCELLED: "run is already cancelled",
}


def continue_prepare_for_owner(
    *, run: Run, session: Session, tools: list[dict[str, Any]] | None, require_paused: bool = True, stream_events: bool = True,
    factory_input: Mapping[str, Any] | None = None,
) -> PreparedRun:
    if require_paused and run.status != RunStatus.PAUSED:
        raise RunNotContinuable(f"Run {run.pk} is {run.status}, not PAUSED: there is nothing to continue")
    entry, component, ctx, store = _continuing(run, session, run_id=run.pk, before=run, factory_input=factory_input)
    return PreparedRun(
        entry=entry, component=component, run_id=run.pk, session_id=run.session_id, owner_id=run.user_id, new_session=False,
        ctx=ctx, memory_store=store, started_at=timezone.now(), continued=run, decisions=list(tools or []),
        first_event_index=next_event_index(run), stream_events=stream_events,
    )


def _continuing(
    run: Run, session: Session, *, run_id: str, before: Run, factory_input: Mapping[str, Any] | None = None,
) -> tuple[Entry, Component, RunContext, BufferedMemoryStore | None]:
    """What continuing ``run`` needs: its agent, and a context for its owner under ``run_id``
    with the history of the branch before ``before`` (the run itself, or the run an edit or a
    regeneration takes the place of: its transcript is the run's own, and later turns and other
    versions are not part of it)."""
    entry = continued_entry(run)
    component = component_for(entry, run.user_id, None, session_id=run.session_id, session_state=session.session_state, factory_input=factory_input)
    history = run_history(user=owner_scope(run.user_id), session_id=run.session_id, limit=component.num_history_runs, before=before) if component.add_history_to_context else []
    ctx, store = context_for_run(
        component=component, run_id=run_id, session=session, session_id=run.session_id, owner_id=run.user_id, history=history,
        session_state=dict(session.session_state or {}), dependencies=None, metadata=None,
    )
    return entry, component, ctx, store


def continued_entry(run: Run) -> Entry:
    """The component ``run`` goes on with: a database workflow's run at the version it paused
    in (the server recorded it, in ``workflow_version``), whatever was published since; any other
    run at its live version."""
    version = (run.run_data or {}).get("workflow_version") if run.run_type == "workflow" else None
    if isinstance(version, int):
        return component_entry_pinned(run.component_id, kind="workflow", version=version)
    return component_entry(run.component_id, kind=run.run_type)


def next_event_index(run: Run) -> int:
    """The ``event_index`` the run's next stored event takes (0 for a run with none)."""
    top = scope_queryset(RunEvent.objects, owner_scope(run.user_id)).filter(run_id=run.pk).aggregate(top=Max("event_index"))["top"]
    return 0 if top is None else top + 1


def _branch_prepare(
    *, run: Run, session: Session, continuation: Continuation, stream_events: bool, run_id: str | None = None, checks_only: bool = False,
) -> PreparedRun:
    """A continuation that runs the loop again from a message boundary (see Continuation).

    ``run_id``: the new run's id when it is already known (a background job's). ``checks_only``:
    the agent and the boundary are checked, but the context is the bare one the checks need.
    """
    if run.status == RunStatus.CANCELLED:
        raise RunNotContinuable(f"Cannot continue run {run.pk}: run is cancelled")
    if run.status in (RunStatus.PENDING, RunStatus.RUNNING):
        raise RunNotContinuable(f"Run {run.pk} is {run.status}: continue it once it has ended")
    keep = boundary(run.run_data.get("messages") or [], continuation.continue_from, regenerate=continuation.regenerate)
    # Continuing a finished run never reuses its id: one run is one model loop.
    fork = continuation.fork or continuation.regenerate or run.status in (RunStatus.COMPLETED, RunStatus.REGENERATED)
    run_id = (run_id or new_id()) if fork else run.pk
    if checks_only:
        entry = component_entry(run.component_id, kind=run.run_type)
        component = component_for(
            entry, run.user_id, None, session_id=run.session_id, session_state=session.session_state, factory_input=continuation.factory_input,
        )
        store = None
        ctx = RunContext(run_id=run_id, session_id=run.session_id, user_id=run.user_id, session_state=dict(session.session_state or {}))
    else:
        entry, component, ctx, store = _continuing(run, session, run_id=run_id, before=run, factory_input=continuation.factory_input)
    branch = {
        "keep": keep, "fork": fork, "input": continuation.input,
        "regenerated_from": run.pk if continuation.regenerate else None, "stream_events": stream_events,
    }
    component.branch_run(run.run_data, ctx, **branch)  # a bad request is a 400 now, before anything runs
    return PreparedRun(
        entry=entry, component=component, run_id=run_id, session_id=run.session_id, owner_id=run.user_id, new_session=False,
        ctx=ctx, memory_store=store, started_at=timezone.now(), continued=run, branch=branch,
        first_event_index=0 if fork else next_event_index(run),
        replaces=run.pk if continuation.regenerate and continuation.replace_original is not False else None,
        stream_events=stream_events,
    )


def mark_regenerated(*, owner_id: str | None, run_id: str) -> None:
    """The run a completed regeneration replaces: kept, but no longer part of the history."""
    replaced = scope_queryset(Run.objects, owner_scope(owner_id)).filter(pk=run_id).first()
    if replaced is not None:
        replaced.status = RunStatus.REGENERATED
        replaced.run_data = {**replaced.run_data, "status": RunStatus.REGENERATED}
        replaced.updated_at = timezone.now()
        replaced.save(update_fields=["status", "run_data", "updated_at"])


def branch_submit(
    *,
    principal: Principal,
    component_id: str,
    kind: str,
    run_id: str,
    session_id: str,
    requested_user_id: str | None,
    continuation: Continuation,
    stream: bool,
    stream_events: bool = True,
) -> Any:
    """A continuation in a new run, as a durable background job (``background=true``).

    Checked as an inline one would be, so a bad request is a 4xx before anything is queued;
    the new run is PENDING from the moment of the 202. Returns the job.
    """
    prepared = continue_prepare(
        principal=principal, component_id=component_id, run_id=run_id, session_id=session_id, requested_user_id=requested_user_id,
        tools=None, stream_events=stream_events, continuation=continuation, checks_only=True, kind=kind,
    )
    if prepared.branch is None or not prepared.branch["fork"]:
        raise InvalidContinuation("background=true continues in a new run: pass fork=true to retry a failed run in the background")
    source = prepared.continued
    assert source is not None
    payload = {
        "source_run_id": source.pk, "continue_from": continuation.continue_from, "fork": True,
        "regenerate": continuation.regenerate, "replace_original": continuation.replace_original,
        "input": continuation.input, "stream_events": stream_events, "principal": principal_grant(principal),
        "factory_input": continuation.factory_input,
    }
    accepted = job_submit(
        owner_id=prepared.owner_id, session=None, session_id=prepared.session_id, component_id=component_id, component_type=kind,
        payload=payload, input=fork_input(source, continuation.input), stream=stream, run_id=prepared.run_id, job_type="branch",
        origin=source.origin, redoes=prepared.redoes,
    )
    return accepted.job


def branch_prepare_for_job(*, job: Any, session: Session) -> PreparedRun:
    """A branch job's run, prepared in the worker from the run it continues."""
    payload = job.payload
    source = scope_queryset(Run.objects, owner_scope(job.user_id)).filter(pk=payload["source_run_id"]).first()
    if source is None:  # deleted after the job was accepted: nothing left to continue
        raise RunNotContinuable(f"Run {payload['source_run_id']} was deleted before this continuation could run")
    continuation = Continuation(
        continue_from=payload.get("continue_from", "end"), fork=True, regenerate=bool(payload.get("regenerate")),
        replace_original=payload.get("replace_original"), input=payload.get("input"), factory_input=payload.get("factory_input"),
    )
    prepared = _branch_prepare(run=source, session=session, continuation=continuation, stream_events=payload.get("stream_events", True), run_id=job.pk)
    prepared.ctx.principal = principal_from_grant(payload.get("principal"))
    return prepared


__all__ = [
    "branch_prepare_for_job",
    "branch_submit",
    "continue_prepare",
    "continue_prepare_for_owner",
    "continued_entry",
    "mark_regenerated",
    "next_event_index",
]
