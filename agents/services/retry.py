"""Retrying a failed or cancelled run: the same input, in the same session, as a new run.

Operators call this from the admin. The retry runs as the run's owner (bound to their own
data, as their browser would be), so it sees exactly the history and memories they would.
The new run executes in the web process's run threads; the caller gets its id at once.
"""
from __future__ import annotations

import logging
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from core.auth import OPEN, Principal
from sessions.models import Run, RunStatus, SessionType

from .capacity import TooManyRuns, run_slot_acquire, run_slot_key
from .executor import _with_connections, run_executor
from .runs import RunRequest, run_execute, run_prepare

logger = logging.getLogger("agno_site.runs")

RETRYABLE_STATUSES = frozenset({RunStatus.ERROR, RunStatus.CANCELLED})


class RunNotRetryable(Exception):
    pass


@dataclass(frozen=True)
class RetryStarted:
    original_run_id: str
    run_id: str
    session_id: str
    # Resolves to the new run's RunOutput dict once it is recorded.
    future: Future[dict[str, Any]]


def run_retry(*, run_id: str) -> RetryStarted:
    """Start a new run with ``run_id``'s input in its session. Raises RunNotRetryable."""
    run = (
        Run.objects.unscoped("operator action: retry any user's run")
        .filter(pk=run_id)
        .only("run_id", "status", "run_type", "component_id", "session_id", "user_id", "input", "parent_run_id")
        .first()
    )
    if run is None:
        raise RunNotRetryable("The run does not exist any more.")
    if run.status not in RETRYABLE_STATUSES:
        raise RunNotRetryable(f"Only failed or cancelled runs can be retried; this one is {run.status}.")
    if run.run_type != SessionType.AGENT or run.parent_run_id:
        raise RunNotRetryable("Only top-level agent runs can be retried for now.")
    data = run.input or {}
    message = data.get("input_content")
    if not isinstance(message, str):
        raise RunNotRetryable("The run has no text input to send again.")
    principal = Principal(user_id=run.user_id, isolated=True, via="session") if run.user_id else OPEN
    request = RunRequest(
        message=message,
        session_id=run.session_id,
        stream=False,
        images=data.get("images") or None,
        files=data.get("files") or None,
    )
    # Preparing reads the agent, the session and its history now, so a vanished agent or session
    # is reported to the operator instead of failing later in a thread.
    try:
        prepared = run_prepare(principal=principal, agent_id=run.component_id, request=request)
    except Exception as exc:  # AgentNotFound, SessionNotFound, a bad stored definition
        raise RunNotRetryable(f"The run cannot be prepared again: {exc}") from exc
    # An operator's retry is one more run of its owner's: it takes one of their places, as the
    # run they would start from their browser does, so a bulk retry cannot crowd them out.
    try:
        slot = run_slot_acquire(run_slot_key(owner_id=prepared.owner_id, client_address="operator"))
    except TooManyRuns as exc:
        raise RunNotRetryable(f"{run.user_id or 'This user'} already has the most runs in progress ({exc.limit}); retry once one has ended.") from None
    future = run_executor().submit(_with_connections, run_execute, prepared)
    future.add_done_callback(lambda _future: slot.release())
    future.add_done_callback(_log_failure(prepared.run_id))
    logger.info("retrying run %s as run %s", run.run_id, prepared.run_id)
    return RetryStarted(original_run_id=run.run_id, run_id=prepared.run_id, session_id=prepared.session_id, future=future)


def _log_failure(run_id: str):
    def done(future: Future) -> None:
        if future.exception() is not None:
            logger.error("retry run %s could not be recorded", run_id, exc_info=future.exception())

    return done
