"""AgentOS response shapes for agents, teams, workflows and runs (nulls dropped where AgentOS drops them)."""
from __future__ import annotations

from typing import Any

from core.api.views import database_id
from sessions.models import Run
from sessions.selectors import run_events_kept

from ..registry import AgentEntry, TeamEntry, WorkflowEntry
from engine import Agent, Function, Team
from engine.builtin_tools import search_knowledge_tool
from engine.output import drop_nulls


def agent_response(entry: AgentEntry) -> dict[str, Any]:
    """``AgentResponse``: the detail shape, used by GET /agents and GET /agents/{id}."""
    if entry.factory is not None:
        return factory_response(entry, filesystem=False)
    agent = entry.template
    assert agent is not None
    body = _component_body(agent, entry)
    body["filesystem"] = False
    body["reasoning"] = _reasoning(agent)
    return drop_nulls(body)


def factory_response(entry: AgentEntry | TeamEntry | WorkflowEntry, **extra: Any) -> dict[str, Any]:
    """A whole-definition factory, as AgentOS's ``from_factory`` describes one: what it is
    called and what ``factory_input`` it takes; the rest exists only per request."""
    assert entry.factory is not None
    schema = entry.factory.input_schema
    return drop_nulls({
        "id": entry.component_id, "name": entry.name, "db_id": database_id(), "description": entry.description,
        **extra, "is_factory": True, "input_schema": schema, "factory_input_schema": schema,
        "is_component": False, "sandboxed": False,
    })


def _reasoning(component: Agent | Team) -> dict[str, Any]:
    model = component.reasoning_model
    return {"reasoning": model is not None, **({"reasoning_model": model.to_dict()} if model else {})}


def team_response(entry: TeamEntry) -> dict[str, Any]:
    """``TeamResponse``: an agent's detail shape (the leader's settings) plus ``mode``, ``role``,
    ``members`` (recursively) and ``streaming``; its tools include the delegation tool."""
    if entry.factory is not None:
        return factory_response(entry)
    team = entry.template
    assert team is not None
    return drop_nulls(_team_body(team, entry))


def _team_body(team: Team, entry: TeamEntry | None = None) -> dict[str, Any]:
    body = _component_body(team, entry)
    body.update(
        mode=team.mode, role=team.role,
        members=[_member_body(member) for member in team.members],
        streaming={"stream_member_events": True}, reasoning=_reasoning(team),
    )
    return body


def _member_body(member: Agent | Team) -> dict[str, Any]:
    return drop_nulls(_team_body(member) if isinstance(member, Team) else _component_body(member, None))


def _component_body(component: Agent | Team, entry: AgentEntry | TeamEntry | None) -> dict[str, Any]:
    """The settings an agent and a team (its leader) describe alike. A member has no entry of its
    own: its ids and flags are its runtime object's."""
    tools = [_tool(function) for function in component.functions.values()]
    if component.knowledge is not None and component.search_knowledge:
        # The tool each run gets for its user (AgentOS lists it with the agent's own).
        tools.append(_tool(search_knowledge_tool(
            component.knowledge, user_id=None, filters=None, agentic=component.enable_agentic_knowledge_filters,
            references_format=component.references_format, clock=lambda: 0.0, record=None,
        )))
    return {
        "id": component.id,
        "name": entry.name if entry is not None else component.name or component.id,
        "db_id": database_id(),
        "description": entry.description if entry is not None else component.description,
        "is_factory": entry.is_factory if entry is not None else component.is_factory,
        "model": component.model.to_dict(),
        "tools": drop_nulls({"tools": tools or None, "tool_call_limit": component.tool_call_limit}) or None,
        "sessions": drop_nulls({
            "session_table": "agno_sessions",
            "add_history_to_context": component.add_history_to_context or None,
            "num_history_runs": component.num_history_runs if component.num_history_runs != 3 else None,
            "enable_session_summaries": component.enable_session_summaries or None,
            "search_past_sessions": component.search_past_sessions or None,
        }),
        "knowledge": {"db_id": database_id(), "knowledge_table": "agno_knowledge"} if component.knowledge is not None else None,
        "memory": drop_nulls({
            "update_memory_on_run": component.update_memory_on_run or None,
            "add_memories_to_context": component.add_memories_to_context or None,
        }) or None,
        "system_message": drop_nulls({
            "description": component.description or None,
            "instructions": component.instructions or None,
            "markdown": component.markdown or None,
        }) or None,
        # As AgentOS: only what differs from Agno's defaults (history of 3 runs, no markdown...).
        "metadata": component.metadata or None,
        "is_component": entry.is_component if entry is not None else False,
        "current_version": entry.version if entry is not None else None,
        "stage": entry.stage if entry is not None else None,
        "sandboxed": False,
    }


def team_summary(entry: TeamEntry) -> dict[str, Any]:
    """``TeamSummaryResponse`` (in /config): an agent's summary plus ``mode``."""
    if entry.factory is not None:
        return _factory_summary(entry)
    team = entry.template
    assert team is not None
    return _summary(team, entry, mode=team.mode)


def _factory_summary(entry: AgentEntry | TeamEntry) -> dict[str, Any]:
    """A factory in /config: its model exists only per request, so the summary has none."""
    return drop_nulls({"id": entry.component_id, "name": entry.name, "description": entry.description, "db_id": database_id(), "sandboxed": False})


def _summary(component: Agent | Team, entry: AgentEntry | TeamEntry, **extra: Any) -> dict[str, Any]:
    return drop_nulls({
        "id": entry.component_id,
        "name": entry.name,
        "description": entry.description,
        "db_id": database_id(),
        **extra,
        "model": {"id": component.model.id, "provider": component.model.provider},
        "metadata": component.metadata or None,
        "sandboxed": False,
    })


def workflow_response(entry: WorkflowEntry) -> dict[str, Any]:
    """``WorkflowResponse``: the workflow and its steps, each with its agent's or team's detail."""
    if entry.factory is not None:
        return factory_response(entry)
    workflow = entry.template
    assert workflow is not None
    spec = workflow.input_schema_spec
    return drop_nulls({
        "id": entry.workflow_id,
        "name": entry.name,
        "db_id": database_id(),
        "description": entry.description,
        "input_schema": spec.schema if spec is not None else None,
        "steps": [_step_body(step) for step in workflow.steps],
        "metadata": workflow.metadata or None,
        "is_factory": entry.is_factory,
        "is_component": entry.is_component,
        "current_version": entry.version,
        "stage": entry.stage,
        "sandboxed": False,
    })


def _step_body(step: Any) -> dict[str, Any]:
    """One step as AgentOS describes it: ``{name, type, description?, agent?|team?|executor?,
    steps?|choices?}``, nested steps recursively."""
    body: dict[str, Any] = {"name": step.name, "type": step.step_type, "description": step.description}
    agent, team, executor = (getattr(step, name, None) for name in ("agent", "team", "executor"))
    if agent is not None:
        body["agent"] = _member_body(agent)
    if team is not None:
        body["team"] = _member_body(team)
    if executor is not None:
        body["executor"] = getattr(executor, "__name__", None)
    if getattr(step, "steps", None):
        body["steps"] = [_step_body(inner) for inner in step.steps]
    if getattr(step, "choices", None):
        body["choices"] = [_step_body(inner) for inner in step.choices]
    return drop_nulls(body)


def workflow_summary(entry: WorkflowEntry) -> dict[str, Any]:
    """``WorkflowSummaryResponse`` (GET /workflows and /config)."""
    return drop_nulls({
        "id": entry.workflow_id,
        "name": entry.name,
        "description": entry.description,
        "db_id": database_id(),
        "is_factory": entry.is_factory,
        "factory_input_schema": entry.factory.input_schema if entry.factory is not None else None,
        "is_component": entry.is_component,
        "current_version": entry.version,
        "stage": entry.stage,
        "sandboxed": False,
    })


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
    if entry.factory is not None:
        return _factory_summary(entry)
    agent = entry.template
    assert agent is not None
    return _summary(agent, entry)


def run_output(run: Run, events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The stored RunOutput of a run, as ``GET /agents/{id}/runs/{run_id}`` returns it."""
    body = dict(run.run_data or {})
    body.setdefault("run_id", run.run_id)
    body.setdefault("session_id", run.session_id)
    if "team_id" not in body:
        body.setdefault(f"{run.run_type}_id", run.component_id)
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


# The events Agno keeps on a team or workflow run that was not streamed: AgentOS turns
# ``store_events`` on for both, and without a stream only these reach the run's list (Agno
# records an agent's non-streamed run with none). A non-streamed answer lists them, as
# AgentOS's does: a team paused by a member answers ``[TeamRunPaused]``, and once continued
# ``[TeamRunPaused, TeamRunContinued]``; a continued workflow ``[StepContinued]``.
UNSTREAMED_EVENTS = {
    "team": frozenset({"TeamRunPaused", "TeamRunContinued", "TeamRunError", "TeamRunCancelled"}),
    "workflow": frozenset({"StepContinued"}),
}


def with_unstreamed_events(output: dict[str, Any], kind: str, owner_id: str | None) -> dict[str, Any]:
    """A non-streamed run's answer with the ``events`` Agno keeps for it (``UNSTREAMED_EVENTS``),
    read from the run's stored events: a continuation's list starts with the pause it continues.
    Unchanged when there are none (AgentOS leaves the key out then)."""
    kept = UNSTREAMED_EVENTS.get(kind)
    run_id = output.get("run_id")
    if kept is None or not run_id:
        return output
    stored = run_events_kept(user=owner_id, run_ids=[run_id]).get(run_id, [])
    events = [event for event in stored if event.get("event") in kept and event.get("run_id") == run_id]
    return {**output, "events": events} if events else output
