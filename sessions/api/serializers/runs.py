"""Run bodies of session listings: ``RunSchema``, ``TeamRunSchema``, ``WorkflowRunSchema``, previews.

The ``*_run_data`` functions are AgentOS's ``from_dict`` classmethods over a stored run dict,
defaults included (``""``, ``[]``, ``{}`` for absent keys), so bodies match key for key.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rest_framework import serializers

from sessions.models import Run, RunOrigin, Session, SessionType

from .common import (
    render,
    PREVIEW_CHARS,
    RUN_STATUSES,
    ContentField,
    IsoZDateTimeField,
    ObjectField,
    ObjectListField,
    StringListField,
    drop_nulls,
    output,
)
from .sessions import agent_metadata, component_data

def stringify_input(value: Any) -> str:
    """Agno's ``stringify_input_content``."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return json.dumps(value, indent=2, default=str)
    if isinstance(value, list):
        if value and isinstance(value[0], dict) and value[0].get("role") == "user":
            return str(value[0].get("content", str(value)))
        return str(value)
    return str(value)


_COMPONENT_ID_KEYS = ("agent_id", "team_id", "workflow_id")


def stored_run(run: Run, *, events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The run as AgentOS stores it (a ``RunOutput.to_dict()``), with our row's fields as truth.

    ``events`` are the run's kept events (``sessions.selectors.run_events_kept``): our events
    live in their own table, AgentOS's in the RunOutput.

    The component ids are the RunOutput's own (AgentOS classifies runs by them: a team member's
    run carries ``agent_id``), else the row's kind and component. Keys whose value is None are
    absent, as in ``to_dict()``: AgentOS's schema defaults (``""`` for a top-level run's
    ``parent_run_id``) are computed from that.
    """
    data = dict(run.run_data or {})
    ids = {key: data.pop(key) for key in _COMPONENT_ID_KEYS if key in data}
    ids = {key: value for key, value in ids.items() if isinstance(value, str) and value}
    if not ids and run.component_id:
        ids = {f"{run.run_type}_id": run.component_id}
    for key in ("parent_run_id", "user_id"):
        data.pop(key, None)
    data["run_id"] = run.run_id
    data.update(ids)
    if run.parent_run_id:
        data["parent_run_id"] = run.parent_run_id
    if run.user_id is not None:
        data["user_id"] = run.user_id
    data["status"] = run.status
    data["created_at"] = run.created_at
    if run.input:
        data["input"] = run.input
    if data.get("content") in (None, "") and run.content:
        data["content"] = run.content
    if events:
        data["events"] = events
    data.update({"origin": run.origin, "previous_run_id": run.previous_run_id, "branch_active": run.branch_active})
    return data


def _run_input(run: Mapping[str, Any], *, workflow: bool = False) -> str:
    """Agno's ``get_run_input``. Our workflow runs keep their input as ``input_content`` too."""
    value = run.get("input")
    if isinstance(value, dict) and value.get("input_content") is not None:
        return stringify_input(value["input_content"])
    if workflow and value is not None:
        return stringify_input(value)
    for message in reversed(run.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            return str(message.get("content", ""))
    return ""


def _input_media(run: Mapping[str, Any]) -> dict[str, list[Any]]:
    value = run.get("input")
    value = value if isinstance(value, dict) else {}
    return {key: list(value.get(key) or []) for key in ("images", "videos", "audios", "files")}


def _truthy_list(run: Mapping[str, Any], key: str) -> list[Any] | None:
    value = run.get(key)
    return list(value) if value else None


_FORK_KEYS = (
    "forked_from_run_id",
    "forked_from_message_index",
    "forked_from_session_id",
    "regenerated_from",
    "last_checkpoint_at_message_index",
)
# Ours, beside AgentOS's keys (its clients ignore keys they do not know): where the run came
# from, and its place in the conversation's branches (sessions.services.branches).
_ROW_KEYS = ("origin", "previous_run_id", "branch_active")


def _agent_run_data(run: Mapping[str, Any], *, agent_data: Any = None) -> dict[str, Any]:
    """``RunSchema.from_dict``."""
    return {
        "run_id": run.get("run_id", ""),
        "parent_run_id": run.get("parent_run_id", ""),
        "agent_id": run.get("agent_id", ""),
        "user_id": run.get("user_id", ""),
        "status": run.get("status"),
        "cancellation_stage": run.get("cancellation_stage"),
        "run_input": _run_input(run),
        "content": run.get("content", ""),
        "run_response_format": "text" if run.get("content_type", "str") == "str" else "json",
        "reasoning_content": run.get("reasoning_content", ""),
        "reasoning_steps": run.get("reasoning_steps", []),
        "metrics": run.get("metrics", {}),
        "metadata": agent_metadata(run.get("metadata"), agent_data),
        "messages": _truthy_list(run, "messages"),
        "tools": _truthy_list(run, "tools"),
        "events": _truthy_list(run, "events"),
        "created_at": run.get("created_at"),
        "references": run.get("references", []),
        "citations": run.get("citations"),
        "reasoning_messages": run.get("reasoning_messages", []),
        "session_state": run.get("session_state"),
        "images": run.get("images", []),
        "videos": run.get("videos", []),
        "audio": run.get("audio", []),
        "files": run.get("files", []),
        "response_audio": run.get("response_audio"),
        "input_media": _input_media(run),
        "followups": run.get("followups"),
        **{key: run.get(key) for key in _FORK_KEYS},
        **{key: run.get(key) for key in _ROW_KEYS},
    }


def _team_run_data(run: Mapping[str, Any]) -> dict[str, Any]:
    """``TeamRunSchema.from_dict``."""
    data = _agent_run_data(run)
    data.pop("agent_id")
    data.pop("metadata")
    data["team_id"] = run.get("team_id", "")
    return data


def _workflow_run_data(run: Mapping[str, Any]) -> dict[str, Any]:
    """``WorkflowRunSchema.from_dict``."""
    return {
        "run_id": run.get("run_id", ""),
        "run_input": _run_input(run, workflow=True),
        "events": run.get("events", []),
        "workflow_id": run.get("workflow_id", ""),
        "user_id": run.get("user_id", ""),
        "content": run.get("content", ""),
        "content_type": run.get("content_type", ""),
        "status": run.get("status", ""),
        "cancellation_stage": run.get("cancellation_stage"),
        "step_results": run.get("step_results", []),
        "step_executor_runs": run.get("step_executor_runs", []),
        "step_requirements": run.get("step_requirements"),
        "pause_kind": run.get("pause_kind"),
        "paused_step_name": run.get("paused_step_name"),
        "paused_step_index": run.get("paused_step_index"),
        "metrics": run.get("metrics", {}),
        "created_at": run.get("created_at"),
        "reasoning_content": run.get("reasoning_content", ""),
        "reasoning_steps": run.get("reasoning_steps", []),
        "references": run.get("references", []),
        "citations": run.get("citations"),
        "reasoning_messages": run.get("reasoning_messages", []),
        "images": run.get("images", []),
        "videos": run.get("videos", []),
        "audio": run.get("audio", []),
        "files": run.get("files", []),
        "response_audio": run.get("response_audio"),
        **{key: run.get(key) for key in _ROW_KEYS},
    }


def classify_run(run: Mapping[str, Any], *, shape: str, session: Session | None = None) -> tuple[str, dict[str, Any]] | None:
    """Which run schema a stored run is listed as, and its data (AgentOS's ``classify_session_run``).

    In an agent-shaped listing every run is an agent run; in a team one, member agent runs and
    team runs (others are left out); in a workflow one, whichever id the run carries.
    """
    if shape == SessionType.AGENT:
        agent_data = None
        if session is not None and session.session_type == SessionType.AGENT and run.get("agent_id") in (None, session.component_id or None):
            agent_data = component_data(session, SessionType.AGENT)
        return SessionType.AGENT, _agent_run_data(run, agent_data=agent_data)
    if shape == SessionType.TEAM:
        if run.get("agent_id") is not None:
            return SessionType.AGENT, _agent_run_data(run)
        if run.get("team_id") is not None:
            return SessionType.TEAM, _team_run_data(run)
        return None
    return run_by_own_kind(run)


def run_by_own_kind(run: Mapping[str, Any], *, session: Session | None = None) -> tuple[str, dict[str, Any]]:
    """By the id the run carries: workflow, then team, else agent (GET .../runs/{run_id})."""
    if run.get("workflow_id") is not None:
        return SessionType.WORKFLOW, _workflow_run_data(run)
    if run.get("team_id") is not None:
        return SessionType.TEAM, _team_run_data(run)
    return classify_run(run, shape=SessionType.AGENT, session=session)  # type: ignore[return-value]


def _preview(value: Any) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text[:PREVIEW_CHARS]


def run_preview_data(kind: str, run: Mapping[str, Any]) -> dict[str, Any]:
    """``SessionRunPreviewSchema.from_run`` over the classified run."""
    return {
        "run_id": run["run_id"],
        "parent_run_id": run.get("parent_run_id"),
        "agent_id": run.get("agent_id") if kind == SessionType.AGENT else None,
        "team_id": run.get("team_id") if kind == SessionType.TEAM else None,
        "workflow_id": run.get("workflow_id") if kind == SessionType.WORKFLOW else None,
        "user_id": run.get("user_id"),
        "status": run.get("status"),
        "run_input": _preview(run.get("run_input")),
        "content_preview": _preview(run.get("content")),
        "created_at": run.get("created_at"),
    }


class RunOut(serializers.Serializer):
    """``RunSchema``: an agent run in a session listing."""

    run_id = serializers.CharField()
    parent_run_id = output(serializers.CharField(allow_blank=True))
    agent_id = output(serializers.CharField(allow_blank=True))
    user_id = output(serializers.CharField(allow_blank=True))
    status = output(serializers.ChoiceField(choices=RUN_STATUSES))
    cancellation_stage = output(serializers.CharField())
    run_input = output(serializers.CharField(allow_blank=True))
    content = output(ContentField())
    run_response_format = output(serializers.ChoiceField(choices=("text", "json")))
    reasoning_content = output(serializers.CharField(allow_blank=True))
    reasoning_steps = output(ObjectListField())
    metrics = output(ObjectField())
    metadata = output(ObjectField())
    messages = output(ObjectListField())
    tools = output(ObjectListField())
    events = output(ObjectListField())
    created_at = output(IsoZDateTimeField())
    references = output(ObjectListField())
    citations = output(ObjectField())
    reasoning_messages = output(ObjectListField())
    session_state = output(ObjectField())
    images = output(ObjectListField())
    videos = output(ObjectListField())
    audio = output(ObjectListField())
    files = output(ObjectListField())
    response_audio = output(ObjectField())
    input_media = output(ObjectField())
    followups = output(StringListField())
    forked_from_run_id = output(serializers.CharField())
    forked_from_message_index = output(serializers.IntegerField())
    forked_from_session_id = output(serializers.CharField())
    regenerated_from = output(serializers.CharField())
    last_checkpoint_at_message_index = output(serializers.IntegerField())
    origin = output(serializers.ChoiceField(choices=RunOrigin.values, help_text="Where the run came from (not in AgentOS)"))
    previous_run_id = output(serializers.CharField(help_text="The run before this one on its branch of the conversation (not in AgentOS)"))
    branch_active = output(serializers.BooleanField(help_text="On the conversation's active branch (not in AgentOS)"))


class TeamRunOut(serializers.Serializer):
    """``TeamRunSchema``."""

    run_id = serializers.CharField()
    parent_run_id = output(serializers.CharField(allow_blank=True))
    team_id = output(serializers.CharField(allow_blank=True))
    user_id = output(serializers.CharField(allow_blank=True))
    status = output(serializers.ChoiceField(choices=RUN_STATUSES))
    cancellation_stage = output(serializers.CharField())
    content = output(ContentField())
    reasoning_content = output(serializers.CharField(allow_blank=True))
    reasoning_steps = output(ObjectListField())
    run_input = output(serializers.CharField(allow_blank=True))
    run_response_format = output(serializers.ChoiceField(choices=("text", "json")))
    metrics = output(ObjectField())
    tools = output(ObjectListField())
    messages = output(ObjectListField())
    events = output(ObjectListField())
    created_at = output(IsoZDateTimeField())
    references = output(ObjectListField())
    citations = output(ObjectField())
    reasoning_messages = output(ObjectListField())
    session_state = output(ObjectField())
    input_media = output(ObjectField())
    images = output(ObjectListField())
    videos = output(ObjectListField())
    audio = output(ObjectListField())
    files = output(ObjectListField())
    response_audio = output(ObjectField())
    followups = output(StringListField())
    forked_from_run_id = output(serializers.CharField())
    forked_from_message_index = output(serializers.IntegerField())
    forked_from_session_id = output(serializers.CharField())
    regenerated_from = output(serializers.CharField())
    last_checkpoint_at_message_index = output(serializers.IntegerField())
    origin = output(serializers.ChoiceField(choices=RunOrigin.values, help_text="Where the run came from (not in AgentOS)"))
    previous_run_id = output(serializers.CharField(help_text="The run before this one on its branch of the conversation (not in AgentOS)"))
    branch_active = output(serializers.BooleanField(help_text="On the conversation's active branch (not in AgentOS)"))


class WorkflowRunOut(serializers.Serializer):
    """``WorkflowRunSchema``."""

    run_id = serializers.CharField()
    run_input = output(serializers.CharField(allow_blank=True))
    events = output(ObjectListField())
    workflow_id = output(serializers.CharField(allow_blank=True))
    user_id = output(serializers.CharField(allow_blank=True))
    content = output(ContentField())
    content_type = output(serializers.CharField(allow_blank=True))
    status = output(serializers.CharField(allow_blank=True))
    cancellation_stage = output(serializers.CharField())
    step_results = output(ObjectListField())
    step_executor_runs = output(ObjectListField())
    step_requirements = output(ObjectListField())
    pause_kind = output(serializers.CharField())
    paused_step_name = output(serializers.CharField())
    paused_step_index = output(serializers.IntegerField())
    metrics = output(ObjectField())
    created_at = output(IsoZDateTimeField())
    reasoning_content = output(serializers.CharField(allow_blank=True))
    reasoning_steps = output(ObjectListField())
    references = output(ObjectListField())
    citations = output(ObjectField())
    reasoning_messages = output(ObjectListField())
    images = output(ObjectListField())
    videos = output(ObjectListField())
    audio = output(ObjectListField())
    files = output(ObjectListField())
    response_audio = output(ObjectField())
    origin = output(serializers.ChoiceField(choices=RunOrigin.values, help_text="Where the run came from (not in AgentOS)"))
    previous_run_id = output(serializers.CharField(help_text="The run before this one on its branch of the conversation (not in AgentOS)"))
    branch_active = output(serializers.BooleanField(help_text="On the conversation's active branch (not in AgentOS)"))


RUN_OUT: dict[str, type[serializers.Serializer]] = {
    SessionType.AGENT: RunOut,
    SessionType.TEAM: TeamRunOut,
    SessionType.WORKFLOW: WorkflowRunOut,
}


def render_run(kind: str, data: dict[str, Any], *, keep_nulls: bool) -> dict[str, Any]:
    rendered = render(RUN_OUT[kind], data)
    return dict(rendered) if keep_nulls else drop_nulls(rendered)


class RunPreviewOut(serializers.Serializer):
    """``SessionRunPreviewSchema``."""

    run_id = serializers.CharField()
    parent_run_id = output(serializers.CharField(allow_blank=True))
    agent_id = output(serializers.CharField(allow_blank=True))
    team_id = output(serializers.CharField(allow_blank=True))
    workflow_id = output(serializers.CharField(allow_blank=True))
    user_id = output(serializers.CharField(allow_blank=True))
    status = output(serializers.CharField())
    run_input = output(serializers.CharField(allow_blank=True, help_text="First 280 characters"))
    content_preview = output(serializers.CharField(allow_blank=True, help_text="First 280 characters"))
    created_at = output(IsoZDateTimeField())
