"""Writes to sessions on behalf of an API caller: create, update, rename, delete.

``user`` is always the caller's core.tenancy scope: a session outside it is missing, whether it
does not exist or belongs to someone else.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from core.errors import DomainError
from core.tenancy import scope_queryset

from ..models import Run, RunEvent, RunStatus, Session, SessionType
from ..selectors import session_get
from .runs import SessionNotFound, new_id, session_create, session_quota_check

# Run metadata keys the runtime owns (component version stamp, dispatch lineage). Session
# metadata is merged into every run of the session, so these never enter through it.
RESERVED_METADATA_KEYS = frozenset({"agno_component_version", "agno_dispatch_chain", "agno_dispatch_depth"})


def session_metadata_clean(metadata: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if metadata is None:
        return None
    cleaned = {key: value for key, value in metadata.items() if key not in RESERVED_METADATA_KEYS}
    if not cleaned and len(cleaned) != len(metadata):
        return None
    return cleaned


def session_summary_clean(summary: Mapping[str, Any]) -> dict[str, Any]:
    """A summary in Agno's ``SessionSummary.to_dict()`` shape (``summary``, ``topics``, ``updated_at``)."""
    cleaned: dict[str, Any] = {"summary": summary["summary"]}
    if summary.get("topics") is not None:
        cleaned["topics"] = list(summary["topics"])
    updated_at = summary.get("updated_at")
    if updated_at is not None:
        cleaned["updated_at"] = updated_at.isoformat() if isinstance(updated_at, datetime) else str(updated_at)
    return cleaned


def session_create_for_caller(
    *,
    owner_id: str | None,
    session_id: str | None = None,
    session_type: str = SessionType.AGENT,
    component_id: str = "",
    session_name: str | None = None,
    session_state: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Session:
    """A new, empty session owned by ``owner_id``.

    Raises ``SessionExists`` when ``session_id`` is taken, whoever holds it: ids are unique across
    users, so a taken id can never be created, and the answer must not say whose it is (the
    caller's own session and another user's look the same, as AgentOS answers them).
    """
    return session_create(
        session_id=session_id,
        user_id=owner_id,
        session_type=session_type,
        component_id=component_id,
        session_name=session_name or "",
        session_state=session_state,
        metadata=session_metadata_clean(metadata),
    )


def session_update(
    *,
    user: Any,
    session_id: str,
    session_name: str | None = None,
    session_state: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
    summary: Mapping[str, Any] | None = None,
) -> Session:
    """Replace the given properties (None leaves one as it is). Raises ``SessionNotFound``."""
    session = session_get(user=user, session_id=session_id)
    if session is None:
        raise SessionNotFound(session_id)
    fields = ["updated_at"]
    if session_name is not None:
        session.session_name = session_name
        fields.append("session_name")
    if session_state is not None:
        session.session_state = dict(session_state)
        fields.append("session_state")
    if metadata is not None:
        session.metadata = session_metadata_clean(metadata)
        fields.append("metadata")
    if summary is not None:
        session.summary = session_summary_clean(summary)
        fields.append("summary")
    session.updated_at = timezone.now()
    session.save(update_fields=fields)
    return session


def session_rename(*, user: Any, session_id: str, session_name: str) -> Session:
    return session_update(user=user, session_id=session_id, session_name=session_name)


def session_delete(*, user: Any, session_ids: Iterable[str]) -> int:
    """Delete the caller's sessions among ``session_ids`` with their runs and events.

    Ids that are unknown or outside the caller's scope are skipped silently (AgentOS answers
    204 for them too).
    """
    ids = list(dict.fromkeys(session_ids))
    if not ids:
        return 0
    deleted = scope_queryset(Session.objects, user).filter(pk__in=ids).delete()[1]
    return int(deleted.get(Session._meta.label, 0))


class NothingToFork(DomainError):
    """The source session is missing, outside the caller's scope, or has no runs."""

    status_code, error_code = 400, "nothing_to_fork"

    def __init__(self) -> None:
        super().__init__("Source session has no runs to fork.")


# Runs still queued or executing are not part of the conversation yet: a copy would be a run
# that nothing will ever finish. Everything else is copied as it stands (a paused run can be
# continued in the fork).
_FORKABLE = [status for status in RunStatus.values if status not in (RunStatus.PENDING, RunStatus.RUNNING)]
_BATCH = 500


def session_fork(*, user: Any, owner_id: str | None, source_session_id: str, component_id: str | None = None) -> Session:
    """A new session holding a copy of every finished or paused run of the source, as Agno's
    ``fork_session`` makes it: fresh session and run ids, the source untouched.

    The copy keeps the source's name, state, metadata, summary and usage; each run keeps its
    events and records, in ``forked_from_session_id``, the session it was first written in (a
    fork of a fork still points at the root). ``owner_id`` None keeps the source's owner.
    Raises ``NothingToFork``, or ``SessionNotFound`` when the session belongs to another
    component than ``component_id``.
    """
    source = session_get(user=user, session_id=source_session_id)
    if source is None:
        raise NothingToFork()
    if component_id is not None and source.component_id != component_id:
        raise SessionNotFound(source_session_id)
    runs = scope_queryset(Run.objects, user).filter(session_id=source.pk, status__in=_FORKABLE).order_by("run_index")
    if not runs.exists():
        raise NothingToFork()
    fork_owner = owner_id if owner_id is not None else source.user_id
    session_quota_check(owner_id=fork_owner)
    now = timezone.now()
    fork = Session(
        session_id=new_id(), user_id=fork_owner,
        session_type=source.session_type, component_id=source.component_id, session_name=source.session_name,
        session_state=source.session_state, metadata=source.metadata, summary=source.summary,
        component_data=source.component_data, metrics=source.metrics, total_tokens=source.total_tokens,
        next_run_index=source.next_run_index, origin=source.origin, created_at=now, updated_at=now,
    )
    with transaction.atomic():
        fork.save(force_insert=True)
        # Every new id first: a team run's copy names its members' copies, written after it.
        new_ids = {run_id: new_id() for run_id in runs.values_list("run_id", flat=True).iterator(chunk_size=_BATCH)}
        for batch in _batches(runs.iterator(chunk_size=_BATCH)):
            copies = [_run_copy(run, new_ids, fork) for run in batch]
            Run.objects.bulk_create(copies)
            events = scope_queryset(RunEvent.objects, user).filter(run_id__in=[run.pk for run in batch]).order_by("run_id", "event_index")
            for event_batch in _batches(events.iterator(chunk_size=_BATCH)):
                RunEvent.objects.bulk_create([
                    RunEvent(
                        run_id=new_ids[event.run_id], user_id=fork.user_id, event_index=event.event_index, event=event.event,
                        payload=_renamed(event.payload, source.pk, fork.pk, new_ids), created_at=event.created_at,
                    )
                    for event in event_batch
                ])
    return fork


def _run_copy(run: Run, new_ids: Mapping[str, str], fork: Session) -> Run:
    run_data = _renamed(run.run_data, run.session_id, fork.pk, new_ids)
    if isinstance(run_data, dict):
        if isinstance(run_data.get("events"), list):
            run_data["events"] = [_renamed(event, run.session_id, fork.pk, new_ids) for event in run_data["events"]]
        if not run_data.get("forked_from_session_id"):
            run_data["forked_from_session_id"] = run.session_id
    return Run(
        run_id=new_ids[run.pk], session=fork, user_id=fork.user_id, run_type=run.run_type, component_id=run.component_id,
        run_index=run.run_index, parent_run_id=new_ids.get(run.parent_run_id, run.parent_run_id) if run.parent_run_id else None,
        status=run.status, input=run.input, content=run.content, run_data=run_data, model=run.model,
        input_tokens=run.input_tokens, output_tokens=run.output_tokens, total_tokens=run.total_tokens, duration=run.duration,
        error=run.error, created_at=run.created_at, updated_at=run.updated_at, started_at=run.started_at, finished_at=run.finished_at,
        # The conversation's branches as they were (a run whose previous was not copied starts one).
        origin=run.origin, previous_run_id=new_ids.get(run.previous_run_id or ""), branch_active=run.branch_active,
    )


def _renamed(payload: Any, old_session_id: str, new_session_id: str, new_ids: Mapping[str, str]) -> Any:
    """A run's stored dict with the ids that place it (its run, parent and session) moved to the fork."""
    if not isinstance(payload, dict):
        return payload
    renamed = dict(payload)
    for key in ("run_id", "parent_run_id"):
        if renamed.get(key) in new_ids:
            renamed[key] = new_ids[renamed[key]]
    if renamed.get("session_id") == old_session_id:
        renamed["session_id"] = new_session_id
    if isinstance(renamed.get("member_responses"), list):  # a team run's members, as their own rows are
        renamed["member_responses"] = [_renamed(member, old_session_id, new_session_id, new_ids) for member in renamed["member_responses"]]
    return renamed


def _batches(rows: Iterable[Any]) -> Iterable[list[Any]]:
    batch: list[Any] = []
    for row in rows:
        batch.append(row)
        if len(batch) == _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch
