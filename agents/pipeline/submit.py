"""Submitting a run: the one way every surface starts, continues or retries one.

The API views call these (the chat UI talks to the API like any client), and so do the admin
and, next, the scheduler. A submission is checked whole first, so a bad one is refused (a
service exception, a 4xx on the wire) before anything runs or is stored. Then it ends one of
three ways, each a typed result the caller renders:

- ``Accepted``: a durable background job, committed with its PENDING run (``background``);
- ``Finished``: the run went to its end in this thread (not streamed);
- ``Started``: the run is committed RUNNING, and the caller drives it: ``execute_async`` on the
  web server's event loop (a streamed run's events go to a sink as they happen; a JSON answer
  awaits its end), or ``execute``, its sync facade, in a caller without an event loop.

``wait=True`` (the default, for sync callers) runs a non-streamed run to its end before returning
(``Finished``); the web server passes ``wait=False`` and awaits it on its loop instead.

Inline and streamed runs take one of their owner's ``RUN_MAX_PER_USER`` places
(agents.pipeline.capacity) once nothing is left to refuse them, and give it back when they end.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.auth import BROWSER, OPEN, Principal, principal_grant
from sessions.models import Run, RunOrigin, RunStatus, SessionType
from sessions.services.runs import SessionLimitReached, SessionNotFound

from ..models import Stage
from jobs.models import Job
from .capacity import Slot, run_slot_acquire, run_slot_key
from jobs.services.jobs import QueueFull, job_continue, job_submit
from .observers import continue_checked, continue_settled
from .continuation import branch_submit, continue_prepare
from .execution import Opened, run_execute, run_execute_here, run_open, run_watch
from .runs import (
    DECISIONS_WITH_BRANCH,
    ComponentNotFound,
    Continuation,
    InvalidContinuation,
    PreparedRun,
    RunNotContinuable,
    RunRequest,
    component_entry_for,
    run_begin,
    run_prepare,
    session_for_run,
)

logger = logging.getLogger("agno_site.runs")

EventSink = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class Accepted:
    """A background run, accepted: poll it, or follow its events after ``after``."""

    job: Job
    run_status: str
    stream: bool
    after: int = -1

    @property
    def body(self) -> dict[str, Any]:
        """AgentOS's 202 body."""
        return {"run_id": self.job.pk, "session_id": self.job.session_id, "status": self.run_status}


@dataclass(frozen=True)
class Finished:
    output: dict[str, Any]


@dataclass(frozen=True)
class Started:
    """A run committed RUNNING, for its caller to drive to its end, once: ``execute_async`` on an
    event loop (the web server's), or ``execute`` in a thread; each returns the RunOutput.
    ``slot`` is given back when it ends (the driver's job)."""

    prepared: PreparedRun
    run: Run
    slot: Slot
    # Continue streams number their frames (``event_index``) from where the run's events stand.
    index_from: int | None = None
    # Watched already (``run_watch``): the caller must drive it now, on its event loop.
    recorder: Any = None

    @property
    def run_id(self) -> str:
        return self.prepared.run_id

    @property
    def streamed(self) -> bool:
        return self.prepared.streamed

    def execute(self, *, on_event: EventSink | None = None) -> dict[str, Any]:
        """``execute_async`` for a caller without an event loop (``run_execute_here``)."""
        assert self.recorder is None, "a run watched for an event loop is driven with execute_async"
        return run_execute_here(self.prepared, on_event=on_event, run=self.run)

    def open(self, *, on_event: EventSink | None = None) -> Opened | None:
        """On the event loop that will drive it: start the run now, up to its first event, which
        goes to ``on_event`` at once (``run_open``); pass the result to ``execute_async``. None
        for a run not watched for a loop."""
        return run_open(self.prepared, self.recorder, on_event) if self.recorder is not None else None

    async def execute_async(self, *, on_event: EventSink | None = None, opened: Opened | None = None) -> dict[str, Any]:
        return await run_execute(self.prepared, on_event=on_event, run=self.run, recorder=self.recorder, opened=opened)


Submitted = Accepted | Finished | Started


def submit_run(
    *,
    principal: Principal,
    component_id: str,
    kind: str,
    request: RunRequest,
    background: bool = False,
    client_address: str = "",
    idempotency_key: str | None = None,
    strategy: str = "enqueue",
    wait: bool = True,
    timeout_seconds: int | None = None,
) -> Submitted:
    """A new run of ``component_id`` (an agent, or a team: ``kind``) for ``principal``, as ``request`` asks.
    ``timeout_seconds`` (background runs): the run is cancelled once it has run that long (a
    schedule's timeout); without it AGENTOS_BACKGROUND_TIMEOUT_SECONDS applies."""
    if principal.session_id:
        request.session_id = principal.session_id  # a token bound to one session
    request.origin = request.origin or (RunOrigin.CHAT if principal.via == BROWSER else RunOrigin.API)
    if background:
        return _accept(principal, component_id, kind, request, idempotency_key, strategy, timeout_seconds)
    prepared = run_prepare(principal=principal, component_id=component_id, kind=kind, request=request)
    return _run(prepared, client_address=client_address, wait=wait)


def _accept(
    principal: Principal, component_id: str, kind: str, request: RunRequest, key: str | None, strategy: str, timeout_seconds: int | None = None,
) -> Accepted:
    entry = component_entry_for(principal=principal, component_id=component_id, kind=kind, version=request.version)
    session, session_id, owner_id = session_for_run(principal=principal, session_id=request.session_id, requested_user_id=request.user_id)
    payload = {name: getattr(request, name) for name in RunRequest.__dataclass_fields__ if name not in ("session_id", "user_id")}
    # The worker's run acts with the submitter's rights (its tools: agents.pipeline.authority).
    payload["principal"] = principal_grant(principal)
    if entry.stage == Stage.DRAFT:
        # Only an admin gets here (component_entry_for); the worker runs the draft on this check.
        payload["draft_allowed"] = True
    if entry.source == "db" and payload.get("version") is None:
        # Accepted means this version: one published while the job waits for a worker is for later runs.
        payload["version"] = entry.version
    if timeout_seconds:
        payload["timeout_seconds"] = int(timeout_seconds)
    accepted = job_submit(
        owner_id=owner_id, session=session, session_id=session_id, component_id=component_id, component_type=kind, payload=payload,
        input=request.stored_input(), stream=request.stream, idempotency_key=key, strategy=strategy, origin=request.origin,
    )
    return Accepted(accepted.job, accepted.run_status, stream=request.stream)


def _run(prepared: PreparedRun, *, client_address: str, wait: bool, index_from: int | None = None) -> Finished | Started:
    """Take the owner's place, commit the run RUNNING, then run it whole (``wait`` and not
    streamed) or hand it to its caller."""
    slot = run_slot_acquire(run_slot_key(owner_id=prepared.owner_id, client_address=client_address))
    try:
        run = run_begin(prepared)
        if wait and not prepared.streamed:
            with slot:
                return Finished(run_execute_here(prepared, run=run))
        # The web server drives it on its loop (wait=False), at once: watched from here, in this thread.
        recorder = None if wait else run_watch(prepared, run)
    except BaseException:
        slot.release()
        raise
    return Started(prepared, run, slot, index_from=index_from, recorder=recorder)


def submit_continue(
    *,
    principal: Principal,
    component_id: str,
    kind: str,
    run_id: str,
    session_id: str,
    requested_user_id: str | None = None,
    tools: list[dict[str, Any]] | None = None,
    continuation: Continuation | None = None,
    stream: bool = True,
    stream_events: bool = True,
    background: bool = False,
    client_address: str = "",
    wait: bool = True,
    adopt: bool = False,
) -> Submitted:
    """Continue the caller's run: a paused run with tool decisions (under its own id), or from a
    message boundary (a fork, a regeneration, a retry of a failed run; see ``Continuation``).
    ``adopt`` (with ``background``): a paused inline run continues as a background job too."""
    continuation = continuation or Continuation()
    if continuation.plain:
        # The continue gates (approvals': a pending admin approval refuses it, 403; a resolved one
        # decides its tool calls).
        tools = continue_checked(principal=principal, run_id=run_id, requested_user_id=requested_user_id, tools=tools)
    if background:
        if not continuation.plain:
            if tools:
                raise InvalidContinuation(DECISIONS_WITH_BRANCH)
            job = branch_submit(
                principal=principal, component_id=component_id, run_id=run_id, session_id=session_id, requested_user_id=requested_user_id,
                continuation=continuation, stream=stream, stream_events=stream_events, kind=kind,
            )
            return Accepted(job, RunStatus.PENDING, stream=stream)
        # Checked as an inline continue would be (a 4xx now); the worker prepares it again.
        checked = continue_prepare(
            principal=principal, component_id=component_id, run_id=run_id, session_id=session_id, requested_user_id=requested_user_id,
            tools=tools, stream_events=stream_events, continuation=continuation, kind=kind,
        )
        assert checked.continued is not None
        job = job_continue(job_id=checked.continued.pk, tools=tools or [], stream_events=stream_events, adopt=adopt)
        if job is None:
            raise RunNotContinuable(f"Run {run_id} was not submitted as a background run; continue it without background=true")
        continue_settled(principal=principal, run_id=run_id, tools=tools)
        return Accepted(job, RunStatus.PENDING, stream=stream, after=job.payload.get("resume_after", -1))
    prepared = continue_prepare(
        principal=principal, component_id=component_id, run_id=run_id, session_id=session_id, requested_user_id=requested_user_id,
        tools=tools, stream=stream, stream_events=stream_events, continuation=continuation, kind=kind,
    )
    if continuation.plain:
        continue_settled(principal=principal, run_id=run_id, tools=tools)
    return _run(prepared, client_address=client_address, wait=wait, index_from=prepared.first_event_index)


# ---- operators ------------------------------------------------------------------------------

RETRYABLE_STATUSES = frozenset({RunStatus.ERROR, RunStatus.CANCELLED})


class RunNotRetryable(Exception):
    pass


def submit_retry(*, run_id: str) -> Accepted:
    """An operator's retry: ``run_id``'s input again, in its session, as a new durable background
    run of its owner (bound to their own data, as their browser would be, so it sees exactly the
    history and memories they would, and counts against their queue share). Raises
    RunNotRetryable, saying why, for a run that cannot be retried."""
    run = (
        Run.objects.unscoped("operator action: retry any user's run")
        .filter(pk=run_id)
        .only("run_id", "status", "run_type", "component_id", "session_id", "user_id", "input", "parent_run_id", "origin")
        .first()
    )
    if run is None:
        raise RunNotRetryable("The run does not exist any more.")
    if run.status not in RETRYABLE_STATUSES:
        raise RunNotRetryable(f"Only failed or cancelled runs can be retried; this one is {run.status}.")
    if run.run_type not in (SessionType.AGENT, SessionType.TEAM) or run.parent_run_id:
        raise RunNotRetryable("Only top-level agent and team runs can be retried; a member's run is retried with its team's.")
    data = run.input or {}
    message = data.get("input_content")
    if not isinstance(message, str):
        raise RunNotRetryable("The run has no text input to send again.")
    principal = Principal(user_id=run.user_id, isolated=True, via="session") if run.user_id else OPEN
    request = RunRequest(
        message=message, session_id=run.session_id, stream=False, images=data.get("images") or None, files=data.get("files") or None, origin=run.origin,
    )
    try:
        accepted = submit_run(principal=principal, component_id=run.component_id, kind=run.run_type, request=request, background=True)
    except (ComponentNotFound, SessionNotFound, SessionLimitReached, QueueFull) as exc:  # said to the operator
        raise RunNotRetryable(f"The run cannot be submitted again: {exc}") from exc
    assert isinstance(accepted, Accepted)
    logger.info("retrying run %s as run %s", run.run_id, accepted.job.pk)
    return accepted


__all__ = [
    "Accepted",
    "Finished",
    "RETRYABLE_STATUSES",
    "RunNotRetryable",
    "Started",
    "Submitted",
    "submit_continue",
    "submit_retry",
    "submit_run",
]
