"""Writes to sessions on behalf of an API caller: create, update, rename, delete.

``user`` is always the caller's core.tenancy scope: a session outside it is missing, whether it
does not exist or belongs to someone else.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from django.utils import timezone

from core.tenancy import scope_queryset

from ..models import Session, SessionType
from ..selectors import session_get
from .runs import SessionExists, SessionNotFound, session_create

# Run metadata keys the runtime owns (component version stamp, dispatch lineage). Session
# metadata is merged into every run of the session, so these never enter through it.
RESERVED_METADATA_KEYS = frozenset({"agno_component_version", "agno_dispatch_chain", "agno_dispatch_depth"})


class SessionIdUnavailable(Exception):
    """The id is taken by a session the caller cannot see; saying whose would leak it."""

    def __init__(self, session_id: str) -> None:
        super().__init__(
            "Could not create a session with the supplied session_id. "
            "Omit session_id to have one generated, or choose a different one."
        )
        self.session_id = session_id


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
    user: Any,
    owner_id: str | None,
    session_id: str | None = None,
    session_type: str = SessionType.AGENT,
    component_id: str = "",
    session_name: str | None = None,
    session_state: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Session:
    """A new, empty session owned by ``owner_id``.

    Raises ``SessionExists`` when the caller can see the session holding ``session_id`` (they may
    PATCH it instead) and ``SessionIdUnavailable`` when someone else's session holds it.
    """
    try:
        return session_create(
            session_id=session_id,
            user_id=owner_id,
            session_type=session_type,
            component_id=component_id,
            session_name=session_name or "",
            session_state=session_state,
            metadata=session_metadata_clean(metadata),
        )
    except SessionExists:
        if session_id and session_get(user=user, session_id=session_id) is not None:
            raise
        raise SessionIdUnavailable(session_id or "") from None


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
