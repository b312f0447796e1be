"""AgentOS response shapes for agents and runs (nulls dropped where AgentOS drops them)."""
from __future__ import annotations

from typing import Any

from core.api.views import database_id
from sessions.models import Run

from ..registry import AgentEntry
from ..runtime import Function
from ..runtime.output import drop_nulls


def agent_response(entry: AgentEntry) -> dict[str, Any]:
    """``AgentResponse``: the detail shape, used by GET /agents and GET /agents/{id}."""
    agent = entry.template
    assert agent is not None
    tools = [_tool(function) for function in agent.functions.values()]
    body: dict[str, Any] = {
        "id": entry.agent_id,
        "name": entry.name,
        "db_id": database_id(),
        "filesystem": False,
        "description": entry.description,
        "is_factory": False,
        "model": agent.model.to_dict(),
        "tools": drop_nulls({"tools": tools or None, "tool_call_limit": agent.tool_call_limit}) or None,
        # As AgentOS: only what differs from Agno's defaults (history of 3 runs, no markdown...).
        "sessions": drop_nulls({
            "session_table": "agno_sessions",
            "add_history_to_context": agent.add_history_to_context or None,
            "num_history_runs": agent.num_history_runs if agent.num_history_runs != 3 else None,
            "enable_session_summaries": agent.enable_session_summaries or None,
            "search_past_sessions": agent.search_past_sessions or None,
        }),
        "memory": drop_nulls({
            "update_memory_on_run": agent.update_memory_on_run or None,
            "add_memories_to_context": agent.add_memories_to_context or None,
        }) or None,
        "system_message": drop_nulls({
            "description": agent.description or None,
            "instructions": agent.instructions or None,
            "markdown": agent.markdown or None,
        }) or None,
        "reasoning": {"reasoning": agent.reasoning_model is not None, **({"reasoning_model": agent.reasoning_model.to_dict()} if agent.reasoning_model else {})},
        "metadata": agent.metadata or None,
        "is_component": entry.is_component,
        "current_version": entry.version,
        "stage": entry.stage,
        "sandboxed": False,
    }
    return drop_nulls(body)


def _tool(function: Function) -> dict[str, Any]:
    """Agno's ``Function.to_dict()``: the flags it serialises, only when set. Agno 3.1.10 lists
    no user-input flag there; such a tool shows by the fields missing from its parameters."""
    return drop_nulls({
        "name": function.name,
        "description": function.description,
        "parameters": function.parameters,
        "requires_confirmation": function.requires_confirmation or None,
        "external_execution": function.external_execution or None,
    })


def agent_summary(entry: AgentEntry) -> dict[str, Any]:
    """``AgentSummaryResponse`` (in /config): ``model`` is ``{id, provider}`` there."""
    agent = entry.template
    assert agent is not None
    return drop_nulls({
        "id": entry.agent_id,
        "name": entry.name,
        "description": entry.description,
        "db_id": database_id(),
        "model": {"id": agent.model.id, "provider": agent.model.provider},
        "metadata": agent.metadata or None,
        "sandboxed": False,
    })


def run_output(run: Run, events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The stored RunOutput of a run, as ``GET /agents/{id}/runs/{run_id}`` returns it."""
    body = dict(run.run_data or {})
    body.setdefault("run_id", run.run_id)
    body.setdefault("session_id", run.session_id)
    body.setdefault("agent_id", run.component_id)
    if run.user_id is not None:
        body.setdefault("user_id", run.user_id)
    body.setdefault("input", run.input)
    body.setdefault("created_at", int(run.created_at.timestamp()))
    body["status"] = run.status
    if events is not None:
        body["events"] = events
    if not body.get("tools"):
        body.pop("tools", None)  # AgentOS reads a stored run without tool calls back with none
    return drop_nulls(body)
