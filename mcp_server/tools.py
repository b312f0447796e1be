"""The tools the platform's MCP server offers (``/mcp``), named as AgentOS's ``mcp_server=True``
names them: ``get_agentos_config`` (what the caller may see), ``run_agent``, ``run_team``,
``run_workflow``, ``continue_run`` (a PAUSED run, with the human's decisions), ``cancel_run``,
``get_sessions`` and ``get_session_runs``; and, listed for each caller, one tool per agent, team
and workflow it may see (``agent__<id>``, ``team__<id>``, ``workflow__<id>``: a message and an
optional session id), so a client such as Claude Desktop offers them by name.

Every call acts as the principal the request authenticated (``mcp_server.asgi``), with its scopes
as they stand now. A run, a continuation and a cancel go through the one pipeline
(``agents.pipeline.submit``, ``agents.pipeline.runs``), whose authority check is
``agents.pipeline.authority``: a caller who may read a component but not run it, a session or run
id of another user, a full queue, all end as the pipeline decides, and the MCP client receives the
refusal as a failed tool call (``isError``) with AgentOS's message, never a run. What each tool
does is in ``mcp_server.actions``.
"""
from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool, ToolAnnotations
from pydantic import Field
from rest_framework.exceptions import APIException

from core.auth import Principal
from engine.errors import InvalidContinuation

from . import actions

PRINCIPAL_KEY = "agno_site.principal"  # where mcp_server.asgi leaves the caller in the ASGI scope
ADDRESS_KEY = "agno_site.client_address"  # and its address (a guest's runs are capped per address)

Message = Annotated[str, Field(description="The message (input) for the run.")]
SessionId = Annotated[str | None, Field(description="Continue this session of yours; omitted: a new session.")]
UserId = Annotated[str | None, Field(description="Act for this user (admins and open servers only; otherwise you act as yourself).")]
RunId = Annotated[str, Field(description="The run_id a run tool returned.")]
OfSession = Annotated[str | None, Field(description="The session_id of the run, as the run tool returned it.")]
AgentId = Annotated[str | None, Field(description="The agent the run belongs to (exactly one of agent_id, team_id, workflow_id).")]
TeamId = Annotated[str | None, Field(description="The team the run belongs to.")]
WorkflowId = Annotated[str | None, Field(description="The workflow the run belongs to.")]

RUNS = ToolAnnotations(readOnlyHint=False, destructiveHint=True, openWorldHint=True)
CONTINUES = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=True)
CANCELS = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=False)
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
    return _answer(submitted.output if isinstance(submitted, Finished) else await answer_on_loop(submitted), kind)


async def _continue(
    principal: Principal, kind: str, component_id: str, run_id: str, session_id: str | None, decisions: list[dict[str, Any]] | None,
    user_id: str | None, address: str,
) -> dict[str, Any]:
    """A paused run continued with the caller's decisions, as the API's continue with
    ``stream=false``: the pipeline's gates first (the run scope, the caller's own run, a pending
    operator approval), then driven on this loop."""
    from agents.api.streaming import answer_on_loop
    from agents.pipeline.submit import Finished, submit_continue

    if not session_id:
        raise ToolError("session_id is required for this action")
    submitted = await _in_thread(
        submit_continue, principal=principal, component_id=component_id, kind=kind, run_id=run_id, session_id=session_id,
        requested_user_id=user_id or None, tools=decisions, stream=False, stream_events=False, wait=False, client_address=address,
    )
    return _answer(submitted.output if isinstance(submitted, Finished) else await answer_on_loop(submitted), kind)


def _answer(output: dict[str, Any], kind: str) -> dict[str, Any]:
    """A run's RunOutput, trimmed to what an MCP client acts on (a PAUSED run: its requirements)."""
    keys = ("run_id", "session_id", "user_id", f"{kind}_id", "status", "content", "content_type", "tools", "requirements", "step_requirements")
    return {key: output.get(key) for key in keys if output.get(key) is not None}


COMPONENT_SCHEMA = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "The message (input) for the run."},
        "session_id": {"type": ["string", "null"], "description": "Continue this session of yours; omitted: a new session.", "default": None},
    },
    "required": ["message"],
}


class PlatformServer(MCPServer):
    """The SDK's server with, besides its registered tools, the caller's components as tools:
    listed per request, run through the pipeline like run_agent/run_team/run_workflow."""

    async def _handle_list_tools(self, ctx: Any, params: Any) -> ListToolsResult:
        principal = principal_of_request(ctx)
        components = await _in_thread(actions.component_tools, principal)
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
            components = await _in_thread(actions.component_tools, principal)
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
            "then run_agent, run_team or run_workflow with a message; pass the session_id a run returned to continue it. "
            "A PAUSED run waits for a human: resolve its requirements and call continue_run; cancel_run stops a run."
        ),
    )

    @server.tool(name="get_agentos_config", title="Get AgentOS Configuration", annotations=READS)
    async def get_agentos_config(ctx: Context) -> dict[str, Any]:
        """Discover this server: the agents, teams and workflows you may see (ids, names,
        descriptions). Call this first to learn what you can run."""
        return await _in_thread(actions.config, principal_of(ctx))

    @server.tool(name="run_agent", title="Run Agent", annotations=RUNS)
    async def run_agent(
        agent_id: Annotated[str, Field(description="ID of the agent to run, from get_agentos_config.")],
        message: Message, ctx: Context, session_id: SessionId = None, user_id: UserId = None,
    ) -> dict[str, Any]:
        """Run an agent with a message and get its response (run_id, session_id, status, content).
        A PAUSED run waits for a human: resolve its requirements and call continue_run."""
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

    @server.tool(name="continue_run", title="Continue Run", annotations=CONTINUES)
    async def continue_run(
        run_id: RunId, ctx: Context, session_id: OfSession = None,
        agent_id: AgentId = None, team_id: TeamId = None, workflow_id: WorkflowId = None,
        requirements: Annotated[list[dict[str, Any]] | None, Field(description=(
            "The PAUSED result's requirements (a workflow's step_requirements), each with its resolution set: "
            "confirmation=true or false, user_input values, or an external execution's result."
        ))] = None,
        tools: Annotated[list[dict[str, Any]] | None, Field(description="Or the PAUSED result's tools, each with confirmed=true or false.")] = None,
        user_id: UserId = None,
    ) -> dict[str, Any]:
        """Resume a PAUSED run after resolving its requirements (human-in-the-loop): pass the
        run_id, its session_id and exactly one of agent_id / team_id / workflow_id, with the
        requirements the run returned, each resolved. A run awaiting an operator's approval
        continues only once the approval is resolved."""
        kind, component_id = actions.lifecycle_target(agent_id, team_id, workflow_id)
        try:
            decisions = actions.decisions(kind, requirements, tools)
        except InvalidContinuation as exc:
            raise ToolError(str(exc)) from None
        return await _continue(principal_of(ctx), kind, component_id, run_id, session_id, decisions, user_id, address_of(ctx.request_context.request))

    @server.tool(name="cancel_run", title="Cancel Run", annotations=CANCELS)
    async def cancel_run(
        run_id: RunId, ctx: Context, session_id: OfSession = None,
        agent_id: AgentId = None, team_id: TeamId = None, workflow_id: WorkflowId = None,
    ) -> str:
        """Request cancellation of a run of yours: it stops at its next step and is marked
        CANCELLED (a run not started yet is cancelled when it starts). Pass the run_id, its
        session_id and exactly one of agent_id / team_id / workflow_id."""
        kind, component_id = actions.lifecycle_target(agent_id, team_id, workflow_id)
        return await _in_thread(actions.cancel, principal_of(ctx), kind=kind, component_id=component_id, run_id=run_id, session_id=session_id)

    @server.tool(name="get_sessions", title="Get Sessions", annotations=READS)
    async def get_sessions(
        ctx: Context,
        session_type: Annotated[Literal["agent", "team", "workflow"], Field(description="agent, team or workflow")] = "agent",
        component_id: Annotated[str | None, Field(description="Only the sessions of this agent, team or workflow.")] = None,
        user_id: UserId = None,
        session_name: Annotated[str | None, Field(description="Only sessions whose name contains this.")] = None,
        limit: Annotated[int, Field(ge=1, le=100)] = 20,
        page: Annotated[int, Field(ge=1)] = 1,
        sort_by: Literal["created_at", "updated_at", "session_name"] = "created_at",
        sort_order: Literal["asc", "desc"] = "desc",
    ) -> dict[str, Any]:
        """List your sessions (conversations), newest first: data and meta (page, total_count).
        Pass a session_id to a run tool to continue that conversation, or to get_session_runs to
        read it."""
        return await _in_thread(
            actions.sessions_page, principal_of(ctx), session_type=session_type, component_id=component_id, session_name=session_name,
            user_id=user_id, limit=limit, page=page, sort_by=sort_by, sort_order=sort_order,
        )

    @server.tool(name="get_session_runs", title="Get Session Runs", annotations=READS)
    async def get_session_runs(
        session_id: Annotated[str, Field(description="A session of yours, from get_sessions or a run's result.")],
        ctx: Context,
        run_id: Annotated[str | None, Field(description="Only this run, in full (its messages, events and metrics): can be large.")] = None,
        user_id: UserId = None,
    ) -> dict[str, Any]:
        """The runs of one of your sessions, oldest first: input, content and status of each;
        with run_id, that one run in full."""
        return {"runs": await _in_thread(actions.session_runs, principal_of(ctx), session_id=session_id, run_id=run_id, user_id=user_id)}

    return server
