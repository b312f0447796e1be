"""What the platform's MCP tools do (``mcp_server.tools`` registers them), each a synchronous
function of the caller's principal, run in a run thread: Django's ORM and the pipeline's checks.

Nothing here decides who may do what on its own: a run, a continuation and a cancel go through the
pipeline (``agents.pipeline``) and its one authority check (``run_authorize``); reads go through
the caller's read scope (``Principal.read_scope``), so another user's session or run is missing,
exactly as the REST API answers it.
"""
from __future__ import annotations

import re
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from core.auth import Principal

KINDS = {"agent": "agents", "team": "teams", "workflow": "workflows"}


def require_sessions_read(principal: Principal) -> None:
    if not principal.can("sessions", "read"):
        raise ToolError("Insufficient permissions. Required scope(s): sessions:read")


def config(principal: Principal) -> dict[str, Any]:
    """``get_agentos_config``: the components the caller may read (ids, names, descriptions)."""
    from agents.api.views import AGENT, TEAM, WORKFLOW

    found: dict[str, Any] = {}
    for of in (AGENT, TEAM, WORKFLOW):
        ids = principal.visible_ids(of.family)
        entries = of.entries() if principal.holds_any(of.family) else []
        found[of.family] = [
            {"id": entry.component_id, "name": entry.name, "description": entry.description}
            for entry in entries
            if ids is None or entry.component_id in ids
        ]
    return {"os_id": "agno-site", "description": "Agno Site", **found}


def sessions_page(
    principal: Principal, *, session_type: str, component_id: str | None, session_name: str | None, user_id: str | None,
    limit: int, page: int, sort_by: str, sort_order: str,
) -> dict[str, Any]:
    """``get_sessions``: one page of the caller's sessions, as AgentOS's paginated answer."""
    from sessions.selectors import session_list

    require_sessions_read(principal)
    rows, total = session_list(
        user=principal.read_scope(user_id), session_type=session_type, component_id=component_id or None,
        session_name=session_name or None, sort_by=sort_by, descending=sort_order != "asc", offset=(page - 1) * limit, limit=limit,
    )
    data = [
        {"session_id": row.pk, "session_name": row.session_name or None, "session_type": row.session_type, "component_id": row.component_id,
         "user_id": row.user_id or None, "created_at": _iso(row.created_at), "updated_at": _iso(row.updated_at)}
        for row in rows
    ]
    return {"data": data, "meta": {"page": page, "limit": limit, "total_count": total, "total_pages": (total + limit - 1) // limit}}


def session_runs(principal: Principal, *, session_id: str, run_id: str | None, user_id: str | None) -> list[dict[str, Any]]:
    """``get_session_runs``: a session's runs, trimmed (input, content, status); with ``run_id``,
    that one run in full, as ``GET /sessions/{id}/runs/{run_id}`` answers it."""
    from sessions.models import Run
    from sessions.selectors import run_events_kept, session_get, session_run_get
    from core.tenancy import scope_queryset

    require_sessions_read(principal)
    scope = principal.read_scope(user_id)
    if run_id is not None:
        from sessions.api.serializers.runs import render_run, run_by_own_kind, stored_run

        found = session_run_get(user=scope, session_id=session_id, run_id=run_id)
        if found.session is None:
            raise ToolError("Session not found")
        if found.run is None:
            raise ToolError(f"Run {run_id} not found in session {session_id}")
        events = run_events_kept(user=scope, run_ids=[found.run.pk]).get(found.run.pk)
        kind, data = run_by_own_kind(stored_run(found.run, events=events), session=found.session)
        return [render_run(kind, data, keep_nulls=False)]
    if session_get(user=scope, session_id=session_id) is None:
        raise ToolError("Session not found")
    runs = scope_queryset(Run.objects, scope).filter(session_id=session_id).order_by("run_index")
    return [
        {"run_id": run.pk, "component_id": run.component_id, "status": run.status, "input": (run.input or {}).get("input_content"),
         "content": run.content, "created_at": _iso(run.created_at)}
        for run in runs
    ]


def lifecycle_target(agent_id: str | None, team_id: str | None, workflow_id: str | None) -> tuple[str, str]:
    """The one component a continue or a cancel names: (kind, id)."""
    given = [(kind, value) for kind, value in (("agent", agent_id), ("team", team_id), ("workflow", workflow_id)) if value]
    if len(given) != 1:
        raise ToolError("Provide exactly one of agent_id, team_id, or workflow_id")
    return given[0]


def decisions(kind: str, requirements: list[dict[str, Any]] | None, tools: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """A continue's answers as the pipeline takes them: a workflow's step requirements as they
    are; an agent's or team's RunRequirement and/or ToolExecution objects as ToolExecution dicts
    (the REST continue form's ``requirements`` and ``tools``)."""
    from engine.hitl import supplied_decisions

    if kind == "workflow":
        return requirements or None
    if not requirements and not tools:
        return None
    return list(supplied_decisions(tools, requirements).values())


def cancel(principal: Principal, *, kind: str, component_id: str, run_id: str, session_id: str | None) -> str:
    """``cancel_run``: as ``POST /<kind>s/{id}/runs/{run_id}/cancel``. The caller must hold the
    component's run scope (the one authority); the pipeline stops only the caller's own run, and
    answers for another user's run or session exactly as for an unknown id (nothing leaks)."""
    from agents.pipeline.authority import run_authorize
    from agents.pipeline.runs import cancel_for_caller

    run_authorize(principal, kind, component_id)
    try:
        cancel_for_caller(principal=principal, run_id=run_id, session_id=session_id)
    except ValueError as exc:  # an isolated caller named no session
        raise ToolError(str(exc)) from None
    return f"Run {run_id} cancellation requested"


def component_tool_name(kind: str, component_id: str) -> str:
    """``agent__<id>``: what MCP clients accept in a tool name (letters, digits, ``_`` and ``-``, 64 at most)."""
    return f"{kind}__{re.sub(r'[^A-Za-z0-9_-]', '_', component_id)}"[:64]


def component_tools(principal: Principal) -> list[dict[str, Any]]:
    """The caller's components as tools: those it may read (``get_agentos_config``'s)."""
    found = config(principal)
    return [
        {"name": component_tool_name(kind, item["id"]), "kind": kind, "id": item["id"], "title": f"{kind.title()}: {item['name']}",
         "description": item["description"] or f"Run the {kind} {item['name']} with a message."}
        for kind, family in KINDS.items()
        for item in found[family]
    ]


def _iso(moment: Any) -> str | None:
    return moment.isoformat() if moment else None
