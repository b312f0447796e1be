"""Session bodies: ``SessionSchema`` list items and the agent/team/workflow detail schemas."""
from __future__ import annotations

from typing import Any

from rest_framework import serializers

from core.api.schema import PaginationInfoOut
from sessions.models import RunOrigin, Session, SessionType

from .common import (
    render,
    FIELD_REQUIRED,
    SESSION_TYPES,
    IsoZDateTimeField,
    ObjectField,
    ObjectListField,
    Text,
    drop_nulls,
    optional_object,
    output,
)

# --- Input -----------------------------------------------------------------------------------

class CreateSessionIn(serializers.Serializer):
    """All optional; Agno's client sends every key, with explicit nulls for what it leaves out."""

    session_id = Text(required=False, allow_null=True, max_length=255)
    session_name = Text(required=False, allow_null=True, max_length=500)
    session_state = optional_object()
    metadata = optional_object()
    user_id = Text(required=False, allow_null=True, max_length=255)
    agent_id = Text(required=False, allow_null=True, max_length=255)
    team_id = Text(required=False, allow_null=True, max_length=255)
    workflow_id = Text(required=False, allow_null=True, max_length=255)


class SessionSummaryIn(serializers.Serializer):
    summary = Text(error_messages=FIELD_REQUIRED)
    topics = serializers.ListField(child=Text(), required=False, allow_null=True)
    updated_at = serializers.DateTimeField(required=False, allow_null=True)


class UpdateSessionIn(serializers.Serializer):
    session_name = Text(required=False, allow_null=True, max_length=500)
    session_state = optional_object()
    metadata = optional_object()
    summary = SessionSummaryIn(required=False, allow_null=True)


class RenameSessionIn(serializers.Serializer):
    session_name = Text(max_length=500, error_messages=FIELD_REQUIRED)


class DeleteSessionsIn(serializers.Serializer):
    session_ids = serializers.ListField(child=Text(), min_length=1, error_messages=FIELD_REQUIRED)
    session_types = serializers.ListField(
        child=serializers.ChoiceField(choices=SESSION_TYPES), min_length=1, error_messages=FIELD_REQUIRED
    )


# --- Output ----------------------------------------------------------------------------------

def _component_id(session: Session, kind: str) -> str | None:
    """The agent/team/workflow id: set only for the kind the session really is."""
    return (session.component_id or None) if session.session_type == kind else None


def component_data(session: Session, kind: str) -> dict[str, Any] | None:
    """``agent_data`` / ``team_data`` / ``workflow_data`` from the component snapshot."""
    data = session.component_data
    if session.session_type != kind or not isinstance(data, dict):
        return None
    rest = {key: value for key, value in data.items() if key != "name"}
    return {"name": data.get("name"), f"{kind}_id": session.component_id or None, **rest}


def agent_metadata(metadata: Any, agent_data: Any) -> Any:
    """Agno exposes an external agent's SDK label (kept in agent_data) in the metadata."""
    sdk = (agent_data.get("sdk") or agent_data.get("framework")) if isinstance(agent_data, dict) else None
    if isinstance(sdk, str) and sdk:
        return {**(metadata or {}), "sdk": sdk}
    return metadata


def _metrics(session: Session) -> dict[str, Any] | None:
    if session.metrics:
        return dict(session.metrics)
    return {"total_tokens": session.total_tokens} if session.total_tokens else None


def _total_tokens(session: Session) -> int | None:
    return session.total_tokens if (session.total_tokens or session.metrics) else None


def session_item_data(session: Session) -> dict[str, Any]:
    agent_data = component_data(session, SessionType.AGENT)
    metadata = session.metadata
    if session.session_type == SessionType.AGENT:
        metadata = agent_metadata(metadata, agent_data)
    return {
        "session_id": session.session_id,
        "session_name": session.session_name or "",
        "session_state": session.session_state,
        "created_at": session.created_at,
        "updated_at": session.updated_at,
        "session_type": session.session_type,
        "user_id": session.user_id,
        "agent_id": _component_id(session, SessionType.AGENT),
        "team_id": _component_id(session, SessionType.TEAM),
        "workflow_id": _component_id(session, SessionType.WORKFLOW),
        "session_summary": session.summary,
        "metrics": _metrics(session),
        "total_tokens": _total_tokens(session),
        "metadata": metadata,
        "origin": session.origin,
    }


def session_detail_data(session: Session, *, shape: str, chat_history: list[dict[str, Any]]) -> dict[str, Any]:
    """The detail body in ``shape`` (the ``type`` query param, else the session's own type)."""
    common = {
        "session_id": session.session_id,
        "session_name": session.session_name or "",
        "user_id": session.user_id,
        "session_summary": session.summary,
        "session_state": session.session_state,
        "metrics": _metrics(session),
        "total_tokens": _total_tokens(session),
        "metadata": session.metadata,
        "chat_history": chat_history,
        "created_at": session.created_at,
        "updated_at": session.updated_at,
    }
    if shape == SessionType.AGENT:
        agent_data = component_data(session, SessionType.AGENT)
        return {
            **common,
            # AgentOS's agent detail always carries metrics: {} for a session without any (teams' and
            # workflows' leave them out).
            "metrics": common["metrics"] or {},
            "agent_session_id": session.session_id,
            "agent_id": _component_id(session, SessionType.AGENT),
            "agent_data": agent_data,
            "metadata": agent_metadata(session.metadata, agent_data),
        }
    if shape == SessionType.TEAM:
        return {
            **common,
            "team_id": _component_id(session, SessionType.TEAM),
            "team_data": component_data(session, SessionType.TEAM),
        }
    workflow_data = component_data(session, SessionType.WORKFLOW)
    session_data: dict[str, Any] = {}
    if session.session_name:
        session_data["session_name"] = session.session_name
    session_data["session_state"] = session.session_state
    if common["metrics"] is not None:
        session_data["session_metrics"] = common["metrics"]
    return {
        **common,
        "workflow_id": _component_id(session, SessionType.WORKFLOW),
        "workflow_name": workflow_data.get("name") if workflow_data else None,
        "session_data": session_data,
        "workflow_data": workflow_data,
    }


class SessionOut(serializers.Serializer):
    """``SessionSchema``: an item of GET /sessions."""

    session_id = serializers.CharField()
    session_name = serializers.CharField()
    session_state = output(ObjectField())
    created_at = output(IsoZDateTimeField())
    updated_at = output(IsoZDateTimeField())
    session_type = output(serializers.CharField(help_text="agent, team or workflow"))
    user_id = output(serializers.CharField())
    agent_id = output(serializers.CharField())
    team_id = output(serializers.CharField())
    workflow_id = output(serializers.CharField())
    session_summary = output(ObjectField())
    metrics = output(ObjectField())
    total_tokens = output(serializers.IntegerField())
    metadata = output(ObjectField())
    origin = output(serializers.ChoiceField(choices=RunOrigin.values, help_text="Where its first run came from (not in AgentOS)"))


class PaginatedSessionsOut(serializers.Serializer):
    data = SessionOut(many=True)
    meta = PaginationInfoOut()


class AgentSessionDetailOut(serializers.Serializer):
    user_id = output(serializers.CharField())
    agent_session_id = serializers.CharField()
    session_id = serializers.CharField()
    session_name = serializers.CharField()
    session_summary = output(ObjectField())
    session_state = output(ObjectField())
    agent_id = output(serializers.CharField())
    total_tokens = output(serializers.IntegerField())
    agent_data = output(ObjectField())
    metrics = output(ObjectField())
    metadata = output(ObjectField())
    chat_history = output(ObjectListField())
    created_at = output(IsoZDateTimeField())
    updated_at = output(IsoZDateTimeField())


class TeamSessionDetailOut(serializers.Serializer):
    session_id = serializers.CharField()
    session_name = serializers.CharField()
    user_id = output(serializers.CharField())
    team_id = output(serializers.CharField())
    session_summary = output(ObjectField())
    session_state = output(ObjectField())
    metrics = output(ObjectField())
    team_data = output(ObjectField())
    metadata = output(ObjectField())
    chat_history = output(ObjectListField())
    created_at = output(IsoZDateTimeField())
    updated_at = output(IsoZDateTimeField())
    total_tokens = output(serializers.IntegerField())


class WorkflowSessionDetailOut(serializers.Serializer):
    user_id = output(serializers.CharField())
    workflow_id = output(serializers.CharField())
    workflow_name = output(serializers.CharField())
    session_id = serializers.CharField()
    session_name = serializers.CharField()
    session_data = output(ObjectField())
    session_state = output(ObjectField())
    workflow_data = output(ObjectField())
    metadata = output(ObjectField())
    created_at = output(IsoZDateTimeField())
    updated_at = output(IsoZDateTimeField())


SESSION_DETAIL_OUT: dict[str, type[serializers.Serializer]] = {
    SessionType.AGENT: AgentSessionDetailOut,
    SessionType.TEAM: TeamSessionDetailOut,
    SessionType.WORKFLOW: WorkflowSessionDetailOut,
}


def render_session_detail(
    session: Session, *, shape: str, chat_history: list[dict[str, Any]], keep_nulls: bool
) -> dict[str, Any]:
    data = render(SESSION_DETAIL_OUT[shape], session_detail_data(session, shape=shape, chat_history=chat_history))
    return dict(data) if keep_nulls else drop_nulls(data)
