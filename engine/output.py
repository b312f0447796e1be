"""The run's state and its AgentOS shapes: RunOutput, ToolExecution, RunRequirement, metrics.

Everything a paused run needs to resume lives in the RunOutput dict itself, so ``RunState``
round-trips through ``to_dict`` / ``from_dict`` (a continue may happen in another process).
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from engine.ids import new_id
from engine.models.base import Model, Usage

RUNNING, COMPLETED, PAUSED, CANCELLED, ERROR = "RUNNING", "COMPLETED", "PAUSED", "CANCELLED", "ERROR"

TOKEN_FIELDS = ("input_tokens", "output_tokens", "total_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")

# ToolExecution keys in Agno's order; a ToolExecution dict always carries all of them.
TOOL_EXECUTION_KEYS = (
    "tool_call_id", "tool_name", "tool_args", "tool_call_error", "result", "metrics", "child_run_id",
    "stop_after_tool_call", "created_at", "requires_confirmation", "confirmed", "confirmation_note",
    "requires_user_input", "user_input_schema", "user_feedback_schema", "answered",
    "external_execution_required", "external_execution_silent", "approval_type", "approval_id",
    "parent_tool_call_id",
)


_ATOMIC = frozenset({str, int, float, bool, type(None)})


def json_copy(value: Any) -> Any:
    """A deep copy of run data, which is JSON-shaped: dicts and lists are copied, strings, numbers,
    booleans and None shared; anything else (a tool's own object in the session state) goes through
    ``copy.deepcopy``. A fraction of ``deepcopy``'s cost, which keeps a memo of every object."""
    kind = type(value)
    # Leaves are shared without a call each: most of a message's values are strings and numbers.
    if kind is dict:
        return {key: item if type(item) in _ATOMIC else json_copy(item) for key, item in value.items()}
    if kind is list:
        return [item if type(item) in _ATOMIC else json_copy(item) for item in value]
    if kind in _ATOMIC:
        return value
    return copy.deepcopy(value)


def drop_nulls(data: Mapping[str, Any]) -> dict[str, Any]:
    """``response_model_exclude_none``: top-level null keys go, nested values are left alone.

    The one copy, for the runtime's events and the API's bodies alike (it lives here because the
    runtime imports nothing outside itself).
    """
    return {k: v for k, v in data.items() if v is not None}


def _nonzero(data: dict[str, Any]) -> dict[str, Any]:
    """Agno's metrics serialisation: drop None, zero ints and empty containers (0.0 stays)."""
    return {
        k: v
        for k, v in data.items()
        if v is not None
        and not (isinstance(v, int) and not isinstance(v, bool) and v == 0)
        and not (isinstance(v, (dict, list)) and not v)
    }


def tool_execution(tool_call_id: str, tool_name: str, tool_args: dict[str, Any], created_at: int, **values: Any) -> dict[str, Any]:
    te: dict[str, Any] = dict.fromkeys(TOOL_EXECUTION_KEYS)
    te.update(tool_call_id=tool_call_id, tool_name=tool_name, tool_args=tool_args, stop_after_tool_call=False, created_at=created_at)
    te.update(values)
    return te


def requirement(te: dict[str, Any], created_at: float) -> dict[str, Any]:
    """A RunRequirement dict for a paused ToolExecution (nulls dropped, as Agno's ``to_dict``)."""
    stamp = datetime.fromtimestamp(created_at, tz=timezone.utc).isoformat(timespec="microseconds")
    req: dict[str, Any] = {"id": new_id(), "created_at": stamp, "tool_execution": json_copy(te)}
    if te.get("user_input_schema") is not None:
        req["user_input_schema"] = json_copy(te["user_input_schema"])
    return req


def paused_content(paused: list[dict[str, Any]]) -> str:
    """Agno's text for a paused run, from the last paused tool that is not silent."""
    content = ""
    for te in paused:
        if te.get("external_execution_silent"):
            continue
        needs = [
            name
            for name, flag in (
                ("confirmation", te.get("requires_confirmation") and not te.get("confirmed")),
                ("user input", te.get("requires_user_input")),
                ("external execution", te.get("external_execution_required")),
            )
            if flag
        ]
        if needs == ["external execution"]:
            content = "I have tools to execute, but it needs external execution."
        elif len(needs) == 3:
            content = "I have tools to execute, but I need confirmation, user input, or external execution."
        elif needs:
            content = f"I have tools to execute, but I need {' or '.join(needs)}."
    return content


def new_message(role: str, content: Any, created_at: int, **extra: Any) -> dict[str, Any]:
    """A stored message in Agno's ``Message.to_dict`` shape (nulls and empty lists dropped)."""
    message: dict[str, Any] = {
        "id": new_id(),
        "content": content,
        "reasoning_content": extra.pop("reasoning_content", None),
        "from_history": False,
        "stop_after_tool_call": extra.pop("stop_after_tool_call", False),
        "role": role,
    }
    for key in ("tool_call_id", "tool_name", "tool_args", "tool_call_error", "tool_calls", "provider_data", "images", "files", "metrics"):
        message[key] = extra.pop(key, None)
    if extra:
        raise TypeError(f"unknown message fields: {sorted(extra)}")
    message = {k: v for k, v in message.items() if v is not None and not (isinstance(v, (list, dict)) and not v)}
    message["created_at"] = created_at
    return message


@dataclass
class RunMetrics:
    """Run metrics with Agno's per-model breakdown (``details[model_type]``)."""

    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKEN_FIELDS, 0))
    time_to_first_token: float | None = None
    duration: float | None = None
    details: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def add(self, model_type: str, model: Model, usage: Usage) -> None:
        entries = self.details.setdefault(model_type, [])
        entry = next((e for e in entries if e["id"] == model.id and e["provider"] == model.provider), None)
        if entry is None:
            entry = {**dict.fromkeys(TOKEN_FIELDS, 0), "id": model.id, "provider": model.provider}
            entries.append(entry)
        for name in TOKEN_FIELDS:
            value = getattr(usage, name)
            entry[name] += value
            self.tokens[name] += value

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {**self.tokens, "time_to_first_token": self.time_to_first_token, "duration": self.duration}
        data["details"] = {kind: [_nonzero(e) for e in entries] for kind, entries in self.details.items()}
        return _nonzero(data)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> RunMetrics:
        data = data or {}
        metrics = cls(time_to_first_token=data.get("time_to_first_token"), duration=data.get("duration"))
        for name in TOKEN_FIELDS:
            metrics.tokens[name] = int(data.get(name) or 0)
        for kind, entries in (data.get("details") or {}).items():
            metrics.details[kind] = [
                {**{n: int(e.get(n) or 0) for n in TOKEN_FIELDS}, "id": e.get("id", ""), "provider": e.get("provider", "")}
                for e in entries
            ]
        return metrics


def session_metrics_add(session: Mapping[str, Any], run: Mapping[str, Any], *, previous: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Agno's ``SessionMetrics.accumulate_from_run`` over dicts: the session's metrics plus a run's,
    tokens and cost, overall and per model (``details[model_type]``, one entry per provider and id).

    ``previous`` is what this run had already added (a continued run's metrics are cumulative):
    only the difference is added. The result is shaped as ``SessionMetrics.to_dict()``.
    """
    totals: dict[str, Any] = {name: int(session.get(name) or 0) for name in TOKEN_FIELDS}
    totals["cost"] = session.get("cost")
    details = {kind: [dict(entry) for entry in entries] for kind, entries in (session.get("details") or {}).items()}
    for sign, metrics in ((1, run), (-1, previous or {})):
        _accumulate(totals, metrics, sign)
        for kind, entries in (metrics.get("details") or {}).items():
            known = details.setdefault(kind, [])
            for entry in entries:
                key = (entry.get("provider", ""), entry.get("id", ""))
                found = next((item for item in known if (item.get("provider", ""), item.get("id", "")) == key), None)
                if found is None:
                    found = {"provider": key[0], "id": key[1]}
                    known.append(found)
                _accumulate(found, entry, sign)
    shaped = {
        kind: [_nonzero({**{name: entry.get(name) for name in (*TOKEN_FIELDS, "cost")}, "id": entry["id"], "provider": entry["provider"]}) for entry in known]
        for kind, known in details.items()
    }
    return _nonzero({**totals, "details": shaped})


def has_usage(metrics: Mapping[str, Any]) -> bool:
    """Whether run metrics count anything a session adds up (tokens, cost, a model's entry)."""
    return any(metrics.get(name) for name in TOKEN_FIELDS) or metrics.get("cost") is not None or bool(metrics.get("details"))


def _accumulate(into: dict[str, Any], metrics: Mapping[str, Any], sign: int) -> None:
    for name in TOKEN_FIELDS:
        into[name] = max(0, int(into.get(name) or 0) + sign * int(metrics.get(name) or 0))
    if metrics.get("cost") is not None:
        into["cost"] = (into.get("cost") or 0) + sign * metrics["cost"]


def message_metrics(usage: Usage, duration: float, time_to_first_token: float | None) -> dict[str, Any]:
    data: dict[str, Any] = {name: getattr(usage, name) for name in TOKEN_FIELDS}
    data.update(duration=duration, time_to_first_token=time_to_first_token)
    return _nonzero(data)


@dataclass
class RunState:
    run_id: str
    agent_id: str
    agent_name: str | None
    session_id: str
    user_id: str | None
    input: dict[str, Any]
    model: str
    model_provider: str
    created_at: int
    session_state: dict[str, Any]
    content: Any = None
    content_type: str = "str"
    reasoning_content: str | None = None
    reasoning_steps: list[dict[str, Any]] | None = None
    model_provider_data: dict[str, Any] | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    metrics: RunMetrics = field(default_factory=RunMetrics)
    tools: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] | None = None
    status: str = RUNNING
    requirements: list[dict[str, Any]] | None = None
    cancellation_stage: str | None = None
    # Lineage of a run made by continuing another (fork, regenerate, a follow-up on a finished run).
    forked_from_run_id: str | None = None
    forked_from_message_index: int | None = None
    forked_from_session_id: str | None = None
    regenerated_from: str | None = None
    last_checkpoint_at_message_index: int | None = None
    # The team run that delegated this run to a member (None for a run of its own).
    parent_run_id: str | None = None
    # What knowledge searches found (Agno's MessageReferences dicts: {query, references, time}).
    # Replaced, never changed in place, so events may share the list they were given.
    references: list[dict[str, Any]] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The RunOutput dict (Agno's ``RunOutput.to_dict``: nulls dropped, Agno's key order)."""
        data: dict[str, Any] = {
            "run_id": self.run_id,
            "agent_id": self.agent_id,
            "agent_name": self.agent_name,
            "session_id": self.session_id,
            "parent_run_id": self.parent_run_id,
            "user_id": self.user_id,
            "content": self.content,
            "content_type": self.content_type,
            "reasoning_content": self.reasoning_content,
            "reasoning_steps": json_copy(self.reasoning_steps),
            "model_provider_data": json_copy(self.model_provider_data),
            "model": self.model,
            "model_provider": self.model_provider,
            "session_state": json_copy(self.session_state),
            "created_at": self.created_at,
            "status": self.status,
            "cancellation_stage": self.cancellation_stage,
            "metrics": self.metrics.to_dict(),
            "messages": json_copy(self.messages),
            "metadata": json_copy(self.metadata),
            "tools": json_copy(self.tools),
            "references": json_copy(self.references),
            "requirements": json_copy(self.requirements),
            "input": json_copy(self.input),
            "forked_from_run_id": self.forked_from_run_id,
            "forked_from_message_index": self.forked_from_message_index,
            "forked_from_session_id": self.forked_from_session_id,
            "regenerated_from": self.regenerated_from,
            "last_checkpoint_at_message_index": self.last_checkpoint_at_message_index,
        }
        return drop_nulls(data)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunState:
        data = json_copy(data)
        return cls(
            run_id=data["run_id"],
            agent_id=data.get("agent_id", ""),
            agent_name=data.get("agent_name"),
            session_id=data.get("session_id", ""),
            user_id=data.get("user_id"),
            input=data.get("input") or {"input_content": ""},
            model=data.get("model", ""),
            model_provider=data.get("model_provider", ""),
            created_at=int(data.get("created_at") or 0),
            session_state=data.get("session_state") or {},
            content=data.get("content"),
            content_type=data.get("content_type", "str"),
            reasoning_content=data.get("reasoning_content"),
            reasoning_steps=data.get("reasoning_steps"),
            model_provider_data=data.get("model_provider_data"),
            messages=list(data.get("messages") or []),
            metrics=RunMetrics.from_dict(data.get("metrics")),
            tools=list(data.get("tools") or []),
            metadata=data.get("metadata"),
            status=data.get("status", RUNNING),
            requirements=data.get("requirements"),
            cancellation_stage=data.get("cancellation_stage"),
            forked_from_run_id=data.get("forked_from_run_id"),
            forked_from_message_index=data.get("forked_from_message_index"),
            forked_from_session_id=data.get("forked_from_session_id"),
            regenerated_from=data.get("regenerated_from"),
            last_checkpoint_at_message_index=data.get("last_checkpoint_at_message_index"),
            parent_run_id=data.get("parent_run_id"),
            references=data.get("references"),
        )
