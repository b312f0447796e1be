"""The tools the platform's MCP server offers (``/mcp``), named as AgentOS's ``mcp_server=True``
names them: ``get_agentos_config`` (what the caller may see), ``run_agent``, ``run_team``,
``run_workflow``, ``get_sessions`` and ``get_session_runs``; and, listed for each caller, one tool
per agent, team and workflow it may see (``agent__<id>``, ``team__<id>``, ``workflow__<id>``: a
message and an optional session id), so a client such as Claude Desktop offers them by name.

Every call acts as the principal the request authenticated (``mcp_server.asgi``), with its scopes
as they stand now. A run goes through the one pipeline (``agents.pipeline.submit.submit_run``,
whose authority check is ``agents.pipeline.authority``): a caller who may read a component but not
run it, a session id of another user, a full queue, all end as the pipeline decides, and the MCP
client receives the refusal as a failed tool call (``isError``) with AgentOS's message, never a run.
"""
from __future__ import annotations

import json
import re
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool, ToolAnnotations
from pydantic import Field
from rest_framework.exceptions import APIException

from core.auth import Principal

PRINCIPAL_KEY = "agno_site.principal"  # where mcp_server.asgi leaves the caller in the ASGI scope
ADDRESS_KEY = "agno_site.client_address"  # and its address (a guest's runs are capped per address)
KINDS = {"agent": "agents", "team": "teams", "workflow": "workflows"}

Message = Annotated[str, Field(description="The message (input) for the run.")]
SessionId = Annotated[str | None, Field(description="Continue this session of yours; omitted: a new session.")]
UserId = Annotated[str | None, Field(description="Act for this user (admins and open servers only; otherwise you act as yourself).")]

RUNS = ToolAnnotations(readOnlyHint=False, destructiveHint=True, openWorldHint=True)
READS = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)


def principal_of(ctx: Context) -> Principal:
    return principal_of_request(ctx.request_context)


def _refusals() -> tuple[type[BaseException], ...]:
    """The pipeline's refusals of a caller's request (the API answers each with a 4xx): its
    domain errors (core.errors) and DRF's own client errors."""
    from core.errors import domain_errors

    return (*domain_errors(), APIException)


async def _in_thread(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
    """Django's ORM and the pipeline's sync phases in a run thread (the API's pool), off the event
    loop; their refusals as the failed tool call the client sees."""
    from jobs.services.executor import in_run_thread

    try:
        return await in_run_thread(fn, *args, **kwargs)
    except _refusals() as exc:
        detail = getattr(exc, "detail", None)
        raise ToolError(str(detail) if detail is not None else str(exc)) from None


def address_of(request: Any) -> str:
    return str(request.scope.get(ADDRESS_KEY) or "") if request is not None else ""


async def _run(principal: Principal, kind: str, component_id: str, message: str, session_id: str | None, user_id: str | None, address: str = "") -> dict[str, Any]:
    """One run, as the API's ``stream=false``: submitted (checked whole, then begun) in a run
    thread, then driven on this event loop, which holds no thread while the model answers."""
    from agents.api.streaming import answer_on_loop
    from agents.pipeline.runs import RunRequest
    from agents.pipeline.submit import Finished, submit_run

    request = RunRequest(message=message, session_id=session_id or None, user_id=user_id or None, stream=False, stream_events=False)
    submitted = await _in_thread(
        submit_run, principal=principal, component_id=component_id, kind=kind, request=request, wait=False, client_address=address,
    )
    output = submitted.output if isinstance(submitted, Finished) else await answer_on_loop(submitted)
    return {
        key: output.get(key)
        for key in ("run_id", "session_id", "user_id", f"{kind}_id", "status", "content", "content_type", "tools", "requirements")
        if output.get(key) is not None
    }


def _config(principal: Principal) -> dict[str, Any]:
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


def _sessions(principal: Principal, session_type: str, user_id: str | None, limit: int) -> list[dict[str, Any]]:
    from core.tenancy import scope_queryset
    from sessions.models import Session

    if not principal.can("sessions", "read"):
        raise ToolError("Insufficient permissions. Required scope(s): sessions:read")
    scope = principal.read_scope(user_id)
    rows = scope_queryset(Session.objects, scope).filter(session_type=session_type).order_by("-updated_at")[:limit]
    return [
        {"session_id": row.pk, "session_name": row.session_name or None, "component_id": row.component_id, "user_id": row.user_id or None,
         "updated_at": row.updated_at.isoformat() if row.updated_at else None}
        for row in rows
    ]


def _session_runs(principal: Principal, session_id: str, user_id: str | None) -> list[dict[str, Any]]:
    from core.tenancy import scope_queryset
    from sessions.models import Run, Session

    if not principal.can("sessions", "read"):
        raise ToolError("Insufficient permissions. Required scope(s): sessions:read")
    scope = principal.read_scope(user_id)
    if not scope_queryset(Session.objects, scope).filter(pk=session_id).exists():
        raise ToolError("Session not found")
    runs = scope_queryset(Run.objects, scope).filter(session_id=session_id).order_by("run_index")
    return [
        {"run_id": run.pk, "component_id": run.component_id, "status": run.status, "input": (run.input or {}).get("input_content"), "content": run.content}
        for run in runs
    ]


COMPONENT_SCHEMA = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "The message (input) for the run."},
        "session_id": {"type": ["string", "null"], "description": "Continue this session of yours; omitted: a new session.", "default": None},
    },
    "required": ["message"],
}


def component_tool_name(kind: str, component_id: str) -> str:
    """``agent__<id>``: what MCP clients accept in a tool name (letters, digits, ``_`` and ``-``, 64 at most)."""
    return f"{kind}__{re.sub(r'[^A-Za-z0-9_-]', '_', component_id)}"[:64]


def _component_tools(principal: Principal) -> list[dict[str, Any]]:
    """The caller's components as tools: those it may read (``get_agentos_config``'s)."""
    config = _config(principal)
    return [
        {"name": component_tool_name(kind, item["id"]), "kind": kind, "id": item["id"], "title": f"{kind.title()}: {item['name']}",
         "description": item["description"] or f"Run the {kind} {item['name']} with a message."}
        for kind, family in KINDS.items()
        for item in config[family]
    ]


class PlatformServer(MCPServer):
    """The SDK's server with, besides its registered tools, the caller's components as tools:
    listed per request, run through the pipeline like run_agent/run_team/run_workflow."""

    async def _handle_list_tools(self, ctx: Any, params: Any) -> ListToolsResult:
        principal = principal_of_request(ctx)
        components = await _in_thread(_component_tools, principal)
        tools = [Tool(name=c["name"], title=c["title"], description=c["description"], input_schema=COMPONENT_SCHEMA, annotations=RUNS) for c in components]
        return ListToolsResult(tools=[*await self.list_tools(), *tools])

    def _tool_input_schema(self, name: str) -> dict[str, Any] | None:
        found = super()._tool_input_schema(name)
        return found if found is not None or "__" not in name else COMPONENT_SCHEMA

    async def _handle_call_tool(self, ctx: Any, params: Any) -> Any:
        if "__" not in params.name or self._tool_manager.get_tool(params.name) is not None:
            return await super()._handle_call_tool(ctx, params)
        arguments = params.arguments or {}
        try:
            principal = principal_of_request(ctx)
            message = arguments.get("message")
            if not isinstance(message, str) or not message:
                raise ToolError("message is required: the input for the run")
            components = await _in_thread(_component_tools, principal)
            component = next((c for c in components if c["name"] == params.name), None)
            if component is None:
                raise ToolError(f"Unknown tool: {params.name}")
            output = await _run(principal, component["kind"], component["id"], message, arguments.get("session_id"), None, address_of(getattr(ctx, "request", None)))
        except ToolError as exc:
            return CallToolResult(content=[TextContent(type="text", text=f"Error executing tool {params.name}: {exc}")], is_error=True)
        return CallToolResult(content=[TextContent(type="text", text=json.dumps(output, ensure_ascii=False))], structured_content=output)


def principal_of_request(ctx: Any) -> Principal:
    """The caller mcp_server.asgi authenticated, from a request context of the SDK."""
    request = getattr(ctx, "request", None)
    principal = request.scope.get(PRINCIPAL_KEY) if request is not None else None
    if not isinstance(principal, Principal):  # only mcp_server.asgi serves these tools
        raise ToolError("Not authenticated")
    return principal


def build_server() -> MCPServer:
    """A new MCP server with the platform's tools (one per event loop: see mcp_server.asgi)."""
    server = PlatformServer(
        "agno-site",
        instructions=(
            "Agno Site: AI agents, teams and workflows. Call get_agentos_config to see what you may run, "
            "then run_agent, run_team or run_workflow with a message; pass the session_id a run returned to continue it."
        ),
    )

    @server.tool(name="get_agentos_config", title="Get AgentOS Configuration", annotations=READS)
    async def get_agentos_config(ctx: Context) -> dict[str, Any]:
        """Discover this server: the agents, teams and workflows you may see (ids, names,
        descriptions). Call this first to learn what you can run."""
        return await _in_thread(_config, principal_of(ctx))

    @server.tool(name="run_agent", title="Run Agent", annotations=RUNS)
    async def run_agent(
        agent_id: Annotated[str, Field(description="ID of the agent to run, from get_agentos_config.")],
        message: Message, ctx: Context, session_id: SessionId = None, user_id: UserId = None,
    ) -> dict[str, Any]:
        """Run an agent with a message and get its response (run_id, session_id, status, content).
        A PAUSED run waits for a human: continue it in the chat or the REST API."""
        return await _run(principal_of(ctx), "agent", agent_id, message, session_id, user_id, address_of(ctx.request_context.request))

    @server.tool(name="run_team", title="Run Team", annotations=RUNS)
    async def run_team(
        team_id: Annotated[str, Field(description="ID of the team to run, from get_agentos_config.")],
        message: Message, ctx: Context, session_id: SessionId = None, user_id: UserId = None,
    ) -> dict[str, Any]:
        """Run a team of agents with a message and get its response."""
        return await _run(principal_of(ctx), "team", team_id, message, session_id, user_id, address_of(ctx.request_context.request))

    @server.tool(name="run_workflow", title="Run Workflow", annotations=RUNS)
    async def run_workflow(
        workflow_id: Annotated[str, Field(description="ID of the workflow to run, from get_agentos_config.")],
        message: Message, ctx: Context, session_id: SessionId = None, user_id: UserId = None,
    ) -> dict[str, Any]:
        """Run a workflow with an input message and get its result."""
        return await _run(principal_of(ctx), "workflow", workflow_id, message, session_id, user_id, address_of(ctx.request_context.request))

    @server.tool(name="get_sessions", title="Get Sessions", annotations=READS)
    async def get_sessions(
        ctx: Context,
        session_type: Annotated[str, Field(description="agent, team or workflow")] = "agent",
        user_id: UserId = None,
        limit: Annotated[int, Field(ge=1, le=100)] = 20,
    ) -> dict[str, Any]:
        """Your sessions of one type, the most recently updated first."""
        if session_type not in KINDS:
            raise ToolError("session_type must be agent, team or workflow")
        return {"sessions": await _in_thread(_sessions, principal_of(ctx), session_type, user_id, limit)}

    @server.tool(name="get_session_runs", title="Get Session Runs", annotations=READS)
    async def get_session_runs(
        session_id: Annotated[str, Field(description="A session of yours, from get_sessions or a run's result.")],
        ctx: Context, user_id: UserId = None,
    ) -> dict[str, Any]:
        """The runs of one of your sessions, in order: input, content and status of each."""
        return {"runs": await _in_thread(_session_runs, principal_of(ctx), session_id, user_id)}

    return server

