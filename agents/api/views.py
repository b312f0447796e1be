"""The /agents family: catalogue, runs (JSON or SSE), poll, list, cancel, continue, resume,
checkpoints, session forks; and what every kind's views share.

One set of views serves every kind: a view reads which kind it serves from ``of`` (AGENT, TEAM
or WORKFLOW), and the component's id from its path (``agent_id`` / ``team_id`` /
``workflow_id``). The team views (``teams.py``) and the workflow views (``workflows.py``) are
these views with their path, scopes, operation ids and docs (a workflow has no checkpoints or
forks, as in AgentOS).
"""
from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response

from core.addresses import client_address
from core.api import params
from core.api.errors import BadRequest, NotFound, invalid, missing
from core.api.sse import control_frame, event_frame
from core.api.views import AgentOSView, AsyncAgentOSView, FormView
from engine.checkpoints import checkpoint_snapshot, checkpoints
from jobs.selectors import run_waiting_on
from jobs.services.executor import in_run_thread
from jobs.services.jobs import IDEMPOTENCY_KEY_MAX, STRATEGIES
from sessions.api.serializers import render_run, run_by_own_kind, stored_run
from sessions.api.serializers.runs import RunOut
from sessions.models import Run, RunStatus
from sessions.selectors import component_runs, run_events_kept, session_get
from sessions.services.sessions import session_fork

from ..pipeline.runs import RunNotFound, cancel_for_caller, run_for_caller
from ..pipeline.submit import Submitted, submit_continue, submit_run
from ..pipeline.tail import resume
from ..registry import agent_list, entry_get, team_list, workflow_list
from . import schema as docs
from .forms import form_data, parse_continuation, parse_run_form, parse_step_requirements, parse_tools_field
from .presenters import agent_response, run_output, team_response, workflow_response, workflow_summary
from .streaming import database_error_frame, sse_response, submission_response



@dataclass(frozen=True)
class Kind:
    """What a view serves: a kind of component, its API family (and scope family), its path."""

    kind: str  # "agent"
    family: str  # "agents"
    label: str  # "Agent": AgentOS's "Agent not found"
    path_kwarg: str  # "agent_id"

    def get(self, component_id: str, version: int | None = None) -> Any:
        return entry_get(self.kind, component_id, version=version)

    def require(self, component_id: str) -> None:
        if self.get(component_id) is None:
            raise NotFound(f"{self.label} not found")

    def entries(self) -> list[Any]:
        return {"team": team_list, "workflow": workflow_list}.get(self.kind, agent_list)()

    def present(self, entry: Any) -> dict[str, Any]:
        return {"team": team_response, "workflow": workflow_response}.get(self.kind, agent_response)(entry)

    def listed(self, entry: Any) -> dict[str, Any]:
        """An entry of the kind's list: the detail shape, except for workflows (their summary)."""
        return workflow_summary(entry) if self.kind == "workflow" else self.present(entry)


AGENT = Kind("agent", "agents", "Agent", "agent_id")
TEAM = Kind("team", "teams", "Team", "team_id")
WORKFLOW = Kind("workflow", "workflows", "Workflow", "workflow_id")


class OfAnAgent:
    """A view of one agent (``agent_id`` in the path): its ``agents`` scopes, reading by default."""

    of = AGENT
    scope_family = "agents"
    scope_resource_kwarg = "agent_id"

    @property
    def component_id(self) -> str:
        return self.kwargs[self.of.path_kwarg]  # type: ignore[attr-defined]


class RunsAnAgent(OfAnAgent):
    """A view that runs, continues or acts on an agent's runs: ``agents:run`` for every method."""

    scope_actions = {"GET": "run", "POST": "run"}


class ComponentAsyncView(AsyncAgentOSView):
    """Blocking work goes to the run threads (jobs.services.executor); a service's refusal
    is told by the one exception handler (core.errors)."""

    async def in_thread(self, fn, /, *args: Any, **kwargs: Any) -> Any:
        return await in_run_thread(fn, *args, **kwargs)


def visible_components(principal, of: Kind = AGENT) -> list:
    """The components of a kind that ``principal`` may read (AgentOS: 403 when it holds no scope
    of the family at all)."""
    from rest_framework.exceptions import PermissionDenied

    if not principal.holds_any(of.family):
        raise PermissionDenied(f"Insufficient permissions. Required scope(s): {of.family}:read")
    ids = principal.visible_ids(of.family)
    return [entry for entry in of.entries() if ids is None or entry.component_id in ids]


class AgentListView(AgentOSView):
    # Filtered to the agents the caller may read; a token with no agent scope at all is refused.
    authenticated_only = True
    of = AGENT

    @extend_schema(operation_id="get_agents", tags=["Agents"], responses={200: docs.AgentResponse(many=True)})
    def get(self, request):
        return Response([self.of.listed(entry) for entry in visible_components(self.principal, self.of)])


class AgentDetailView(OfAnAgent, AgentOSView):
    @extend_schema(operation_id="get_agent", tags=["Agents"], responses={200: docs.AgentResponse, 404: docs.ERROR})
    def get(self, request, **path: str):
        entry = self.of.get(self.component_id)
        if entry is None:
            raise NotFound(f"{self.of.label} not found")
        return Response(self.of.present(entry))


class AgentRunsView(OfAnAgent, ComponentAsyncView):
    scope_actions = {"POST": "run"}

    @extend_schema(
        operation_id="create_agent_run",
        tags=["Agents"],
        request={"application/x-www-form-urlencoded": docs.RunForm, "multipart/form-data": docs.RunForm},
        responses={
            200: OpenApiResponse(docs.RunOutput, description="stream=false: the RunOutput; stream=true (the default): text/event-stream of run events"),
            202: docs.BackgroundAccepted,
            400: docs.ERROR,
            404: docs.ERROR,
            409: OpenApiResponse(docs.ERROR, description="the caller holds MAX_SESSIONS_PER_USER sessions and the run would start another; background: the session has a run in progress (session_strategy=reject), or an Idempotency-Key was reused differently"),
            413: OpenApiResponse(docs.ERROR, description="an upload over UPLOAD_MAX_FILE_BYTES or UPLOAD_MAX_TOTAL_BYTES, the message over RUN_MAX_MESSAGE_CHARS, or the form fields over DATA_UPLOAD_MAX_MEMORY_SIZE"),
            422: docs.VALIDATION_ERROR,
            429: OpenApiResponse(docs.ERROR, description="the user has RUN_MAX_PER_USER runs in progress; background: the job queue, or the user's share of it, is full (see Retry-After)"),
        },
    )
    async def post(self, request, **path: str):
        return await submission_response(self.prepared, self.of.kind)

    def prepare_post(self, request, **path: str) -> Submitted:
        """In a run thread, once the caller is authenticated: the submission, checked whole
        (a 4xx before anything runs or is stored), then run, begun for its stream, or accepted."""
        run_request, background = parse_run_form(request)
        key, strategy = None, "enqueue"
        if background:
            key = request.headers.get("Idempotency-Key") or None
            if key is not None and len(key) > IDEMPOTENCY_KEY_MAX:
                raise invalid(["header", "Idempotency-Key"], "Idempotency-Key must be at most 512 characters", kind="string_too_long")
            strategy = params.choice(form_data(request), "session_strategy", STRATEGIES, "enqueue", where="body")
        return submit_run(
            principal=self.principal, component_id=self.component_id, kind=self.of.kind, request=run_request,
            background=background, client_address=client_address(self.request) or "", idempotency_key=key, strategy=strategy, wait=False,
        )

    @extend_schema(
        operation_id="list_agent_runs",
        tags=["Agents"],
        parameters=[
            OpenApiParameter("session_id", str, required=True),
            OpenApiParameter("status", str, description="exact, case-sensitive run status"),
        ],
        responses={200: RunOut(many=True), 404: docs.ERROR, 422: docs.VALIDATION_ERROR},
    )
    async def get(self, request, **path: str):
        return Response(self.prepared)

    def prepare_get(self, request, **path: str) -> list[dict[str, Any]]:
        component_id = self.component_id
        self.of.require(component_id)
        session_id = request.query_params.get("session_id")
        if not session_id:
            raise missing(["query", "session_id"])
        scope = self.principal.read_scope(request.query_params.get("user_id"))
        runs = component_runs(user=scope, session_id=session_id, component_id=component_id, status=request.query_params.get("status"))
        if runs is None:
            raise NotFound("Session not found")
        events = run_events_kept(user=scope, run_ids=[run.pk for run in runs])
        # Explicit nulls, as AgentOS answers this list (the session's runs list drops them).
        return [render_run(*run_by_own_kind(stored_run(run, events=events.get(run.pk))), keep_nulls=True) for run in runs]


def _run_in_path(view: Any, request, run_id: str) -> Run:
    """The component's run named in the path, in the session the query names, if the caller may see it."""
    component_id = view.component_id
    view.of.require(component_id)
    session_id = request.query_params.get("session_id")
    if not session_id:
        raise missing(["query", "session_id"])
    return run_for_caller(principal=view.principal, run_id=run_id, session_id=session_id, requested_user_id=request.query_params.get("user_id"), component_id=component_id)


class AgentRunDetailView(OfAnAgent, AgentOSView):
    @extend_schema(
        operation_id="get_agent_run",
        tags=["Agents"],
        parameters=[OpenApiParameter("session_id", str, required=True)],
        responses={200: docs.RunOutput, 404: docs.ERROR, 422: docs.VALIDATION_ERROR},
    )
    def get(self, request, run_id: str, **path: str):
        run = _run_in_path(self, request, run_id)
        body = run_output(run, events=run_events_kept(user=run.user_id or None, run_ids=[run.pk]).get(run.pk, []))
        blocker = run_waiting_on(run_id=run.pk) if run.status == RunStatus.PENDING else None
        if blocker:
            body["waiting_on"] = blocker
        return Response(body)


class AgentRunCheckpointsView(RunsAnAgent, AgentOSView):
    @extend_schema(
        operation_id="list_agent_run_checkpoints",
        summary="List Agent Run Checkpoints",
        description="The boundaries a run can be continued from (its transcript's end, and where it was last continued from). Pass an entry's message_index as continue_from.",
        tags=["Agents"],
        parameters=[OpenApiParameter("session_id", str, required=True)],
        responses={200: docs.RunCheckpoints, 404: docs.ERROR, 422: docs.VALIDATION_ERROR},
    )
    def get(self, request, run_id: str, **path: str):
        run = _run_in_path(self, request, run_id)
        return Response({"run_id": run.pk, "session_id": run.session_id, "checkpoints": checkpoints(run.run_data)})


class AgentRunCheckpointView(RunsAnAgent, AgentOSView):
    @extend_schema(
        operation_id="get_agent_run_checkpoint_snapshot",
        summary="Get Agent Run Checkpoint Snapshot",
        description="The run as it stood after message_index messages (never between a tool call and its result). Use message_index as continue_from to continue from there.",
        tags=["Agents"],
        parameters=[OpenApiParameter("message_index", int, OpenApiParameter.PATH), OpenApiParameter("session_id", str, required=True)],
        responses={200: docs.RunCheckpointSnapshot, 400: docs.ERROR, 404: docs.ERROR, 422: docs.VALIDATION_ERROR},
    )
    def get(self, request, run_id: str, message_index: str, **path: str):
        index = params.integer({"message_index": message_index}, "message_index", where="path")
        run = _run_in_path(self, request, run_id)
        return Response(checkpoint_snapshot(run.run_data, index))


class AgentRunCancelView(RunsAnAgent, FormView):
    @extend_schema(
        operation_id="cancel_agent_run",
        tags=["Agents"],
        request=None,
        parameters=[OpenApiParameter("session_id", str)],
        responses={200: OpenApiTypes.OBJECT, 400: docs.ERROR, 404: docs.ERROR},
    )
    def post(self, request, run_id: str, **path: str):
        self.of.require(self.component_id)
        try:
            cancel_for_caller(principal=self.principal, run_id=run_id, session_id=request.query_params.get("session_id"))
        except ValueError as exc:  # an isolated caller named no session
            raise BadRequest(str(exc)) from None
        return Response({})


class AgentSessionForkView(RunsAnAgent, FormView):
    @extend_schema(
        operation_id="fork_agent_session",
        summary="Fork Agent Session",
        description=(
            "Copy a session into a new, independent one: every finished or paused run, with fresh run ids, "
            "its events, and the session's name, state, metadata and summary. The original is untouched."
        ),
        tags=["Agents"],
        request=None,
        parameters=[OpenApiParameter("user_id", str, description="Whose session to fork (ignored, and forced to the caller, under user isolation)")],
        responses={
            200: docs.ForkedSession,
            400: OpenApiResponse(docs.ERROR, description="The source session is missing or has no runs"),
            404: OpenApiResponse(docs.ERROR, description="No such agent, or the session is another agent's"),
            409: OpenApiResponse(docs.ERROR, description="The copy's owner holds MAX_SESSIONS_PER_USER sessions already"),
        },
    )
    def post(self, request, session_id: str, **path: str):
        component_id = self.component_id
        self.of.require(component_id)
        user_id = request.query_params.get("user_id") or None
        # The copy is the caller's when they are bound to their identity, else it stays with the
        # session's owner (or the user the query names), as in AgentOS: an admin who forks
        # someone's conversation does not take a copy of it into their own account.
        owner_id = self.principal.user_id if self.principal.isolated else user_id
        fork = session_fork(
            user=self.principal.read_scope(user_id), owner_id=owner_id, source_session_id=session_id, component_id=component_id,
        )
        return Response({"session_id": fork.pk, "forked_from_session_id": session_id})


class AgentSessionCompactView(RunsAnAgent, FormView):
    """Compaction folds a session's older history into a summary; no agent here offers it (their
    history is the last ``num_history_runs`` runs), so a session gets AgentOS's answer for an
    agent without it."""

    @extend_schema(
        operation_id="compact_agent_session",
        summary="Compact Agent Session",
        description="Always answers status not_enabled: no agent of this server compacts its history.",
        tags=["Agents"],
        request=None,
        parameters=[OpenApiParameter("user_id", str, description="Whose session (ignored, and forced to the caller, under user isolation)")],
        responses={200: docs.CompactionResult, 404: OpenApiResponse(docs.ERROR, description="No such agent, or no such session of this agent")},
    )
    def post(self, request, session_id: str, **path: str):
        component_id = self.component_id
        self.of.require(component_id)
        session = session_get(user=self.principal.read_scope(request.query_params.get("user_id") or None), session_id=session_id)
        if session is None or session.component_id != component_id:
            raise NotFound("Session not found")
        return Response({"status": "not_enabled", "message": "Compaction is not enabled on this agent.", "compacted": False, "record": None, "metrics": None})


class AgentRunContinueView(RunsAnAgent, ComponentAsyncView):
    @extend_schema(
        operation_id="continue_agent_run",
        tags=["Agents"],
        request={"application/x-www-form-urlencoded": docs.ContinueForm, "multipart/form-data": docs.ContinueForm},
        responses={
            200: OpenApiResponse(docs.RunOutput, description="stream=false: the RunOutput; stream=true (the default): text/event-stream of run events"),
            202: OpenApiResponse(docs.BackgroundAccepted, description="background=true, stream=false: the continuation is queued (a paused run under its own id, anything else as a new run)"),
            400: docs.ERROR,
            404: docs.ERROR,
            409: docs.ERROR,
            413: OpenApiResponse(docs.ERROR, description="input or additional_instructions over RUN_MAX_MESSAGE_CHARS, or the form fields over DATA_UPLOAD_MAX_MEMORY_SIZE"),
            422: docs.VALIDATION_ERROR,
            429: OpenApiResponse(docs.ERROR, description="the user has RUN_MAX_PER_USER runs in progress; background: the job queue, or the user's share of it, is full (see Retry-After)"),
        },
    )
    async def post(self, request, run_id: str, **path: str):
        return await submission_response(self.prepared, self.of.kind)

    def prepare_post(self, request, run_id: str, **path: str) -> Submitted:
        """In a run thread, once the caller is authenticated: the continuation back on the queue
        (background), continued whole (stream=false), or begun for its stream."""
        data = form_data(request)
        tools = parse_step_requirements(data) if self.of.kind == "workflow" else parse_tools_field(data)
        session_id = data.get("session_id") or None
        if not session_id:
            raise BadRequest("session_id is required for this action")
        return submit_continue(
            principal=self.principal, component_id=self.component_id, kind=self.of.kind, run_id=run_id, session_id=session_id,
            requested_user_id=data.get("user_id") or None, tools=tools, continuation=parse_continuation(data),
            stream=params.boolean(data, "stream", True, where="body"), stream_events=params.boolean(data, "stream_events", True, where="body"),
            background=params.boolean(data, "background", False, where="body"), client_address=client_address(self.request) or "",
            wait=False,
        )


class AgentRunResumeView(RunsAnAgent, ComponentAsyncView):
    """Replays a run's stored events after ``last_event_index``, then follows it until it ends.

    Always 200: not-found and failures are in-band ``event: error`` frames, as in AgentOS.
    """


    @extend_schema(
        operation_id="resume_agent_run_stream",
        tags=["Agents"],
        request={"application/x-www-form-urlencoded": docs.ResumeForm},
        responses={200: OpenApiResponse(description="text/event-stream: replay/catch_up/subscribed frames and run events"), 400: docs.ERROR, 404: docs.ERROR},
    )
    async def post(self, request, run_id: str, **path: str):
        run, last = self.prepared
        return sse_response(self._frames(run, run_id, last))

    def prepare_post(self, request, run_id: str, **path: str) -> tuple[Run | None, int]:
        """The run, if the caller may see it (None: reported in band), and the index to replay after."""
        component_id = self.component_id
        self.of.require(component_id)
        data = form_data(request)
        session_id = data.get("session_id") or None
        if self.principal.isolated and not session_id:
            raise BadRequest("session_id is required for this action")
        last = params.integer(data, "last_event_index", None, where="body")
        try:
            # The user_id a guest (or an admin) acts for, as the run's GET and its continue read it:
            # without it a guest sees only ownerless runs, so its own background run was "not found".
            requested = data.get("user_id") or request.query_params.get("user_id") or None
            run = run_for_caller(principal=self.principal, run_id=run_id, session_id=session_id, requested_user_id=requested, component_id=component_id)
        except RunNotFound:
            run = None
        return run, -1 if last is None else last

    async def _frames(self, run: Run | None, run_id: str, last: int) -> AsyncIterator[str]:
        if run is None:
            yield control_frame("error", {"error": f"Run {run_id} not found in buffer or database"})
            return
        try:
            async for kind, data in resume(run, last):
                yield event_frame(data) if kind == "event" else control_frame(kind, data)
        except DatabaseError as exc:
            yield database_error_frame(run_id, exc)
