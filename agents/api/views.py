"""The /agents, /teams and /workflows families: catalogue, runs (JSON or SSE), poll, list,
cancel, continue, resume, checkpoints, session forks.

One set of views serves every kind: a view reads which kind it serves from ``of`` (AGENT, TEAM
or WORKFLOW), and the component's id from its path (``agent_id`` / ``team_id`` /
``workflow_id``). The team and workflow views are the agent views with their path, scopes,
operation ids and docs (a workflow has no checkpoints or forks, as in AgentOS).
"""
from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response

from core.api import params
from core.api.errors import DATABASE_UNAVAILABLE, BadRequest, NotFound, invalid, missing
from core.api.sse import control_frame, event_frame
from core.addresses import client_address
from core.api.views import AgentOSView, AsyncAgentOSView, FormView, json_response
from core.tenancy import scope_queryset
from sessions.models import Run, RunStatus, Session
from sessions.api.serializers import render_run, run_by_own_kind, stored_run
from sessions.api.serializers.runs import RunOut
from sessions.selectors import run_events_kept, session_get
from sessions.services.sessions import session_fork

from jobs.models import Job
from ..registry import agent_list, entry_get, team_list, workflow_list
from engine.checkpoints import checkpoint_snapshot, checkpoints, parse_continue_from
from jobs.services.executor import in_run_thread
from jobs.services.jobs import IDEMPOTENCY_KEY_MAX, STRATEGIES, waiting_on
from ..pipeline.runs import Continuation, RunNotFound, cancel_for_caller, run_for_caller
from ..pipeline.submit import Finished, Started, Submitted, submit_continue, submit_run
from ..pipeline.tail import follow, resume
from . import schema as docs
from .forms import bounded_text, form_data, object_or_dropped, parse_run_form, parse_step_requirements, parse_tools_field
from .presenters import UNSTREAMED_EVENTS, agent_response, run_output, team_response, with_unstreamed_events, workflow_response, workflow_summary
from .streaming import answer_on_loop, sse_response, stream_on_loop

logger = logging.getLogger("agno_site.runs")


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


class OfATeam:
    """Mixed in before an agent view: the same view, of a team (``team_id``, ``teams`` scopes)."""

    of = TEAM
    scope_family = "teams"
    scope_resource_kwarg = "team_id"


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
        return await _rendered(self.prepared, self.of.kind)

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
        if not scope_queryset(Session.objects, scope).filter(pk=session_id).exists():
            raise NotFound("Session not found")
        runs = scope_queryset(Run.objects, scope).filter(session_id=session_id, component_id=component_id).order_by("run_index")
        status = request.query_params.get("status")
        if status:
            runs = runs.filter(status=status)
        runs = list(runs)
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
        if run.status == RunStatus.PENDING:
            job = Job.objects.unscoped("the run's own job; the run's access was checked").filter(pk=run.pk).first()
            blocker = waiting_on(job) if job is not None else None
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
        return await _rendered(self.prepared, self.of.kind)

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
            requested_user_id=data.get("user_id") or None, tools=tools, continuation=_continuation(data),
            stream=params.boolean(data, "stream", True, where="body"), stream_events=params.boolean(data, "stream_events", True, where="body"),
            background=params.boolean(data, "background", False, where="body"), client_address=client_address(self.request) or "",
            wait=False,
        )


async def _rendered(submitted: Submitted, kind: str):
    """A submission's answer, on the event loop: the run's stream, or its RunOutput once it ends
    (driven on this loop, holding no thread while it waits; a team's or workflow's with the
    events Agno keeps for it), or a background run's 202 (or its events, followed, when the
    submission streams)."""
    if isinstance(submitted, Started):
        if submitted.streamed:
            return sse_response(stream_on_loop(submitted))
        output = await answer_on_loop(submitted)
        if kind in UNSTREAMED_EVENTS:
            output = await in_run_thread(with_unstreamed_events, output, kind, submitted.prepared.owner_id)
        return json_response(output)
    if isinstance(submitted, Finished):
        return json_response(submitted.output)
    if submitted.stream:
        return sse_response(_tail_frames(submitted.job.pk, submitted.job.user_id, submitted.after))
    return Response(submitted.body, status=202)


def _continuation(data: Any) -> Continuation:
    """The unified-continue fields of a continue form, with AgentOS's 400s for what conflicts."""
    continue_from = parse_continue_from(data.get("continue_from"))
    fork = params.boolean(data, "fork", False, where="body")
    regenerate = params.boolean(data, "regenerate", False, where="body")
    replace_original = None if data.get("replace_original") in (None, "") else params.boolean(data, "replace_original", True, where="body")
    text = bounded_text(data, "input") or None
    instructions = bounded_text(data, "additional_instructions") or None
    if text is not None and instructions is not None:
        raise BadRequest("Provide either `additional_instructions` or `input`, not both.")
    if replace_original is not None and not regenerate:
        raise BadRequest("`replace_original` only makes sense with `regenerate=True`.")
    if regenerate and fork:
        raise BadRequest("`regenerate=True` derives the destructive/preserving choice from `replace_original`; do not pass `fork=True` directly.")
    return Continuation(
        continue_from=continue_from, fork=fork, regenerate=regenerate, replace_original=replace_original, input=text or instructions,
        factory_input=object_or_dropped(data, "factory_input"),
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
            run = run_for_caller(principal=self.principal, run_id=run_id, session_id=session_id, component_id=component_id)
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


async def _tail_frames(run_id: str, owner: str | None, after: int) -> AsyncIterator[str]:
    """SSE frames of a run's events after ``after`` until it ends (durable, resumable)."""
    try:
        async for event in follow(run_id, owner, after):
            yield event_frame(event)
    except DatabaseError as exc:
        yield database_error_frame(run_id, exc)


def database_error_frame(run_id: str, exc: DatabaseError) -> str:
    """The in-band end of a stream whose database went away: the run goes on; resume it later."""
    logger.warning("stream of run %s lost the database: %s", run_id, type(exc.__cause__ or exc).__name__)
    return control_frame("error", {"error": f"{DATABASE_UNAVAILABLE}: resume run {run_id} later", "run_id": run_id})


# ---- /teams: the same views, of a team -----------------------------------------------------------

_TEAM_RUN_RESPONSES = {
    200: OpenApiResponse(docs.RunOutput, description="stream=false: the TeamRunOutput (member_responses included); stream=true (the default): text/event-stream of team and member events"),
    202: docs.BackgroundAccepted,
    400: docs.ERROR,
    404: docs.ERROR,
    409: docs.ERROR,
    413: docs.ERROR,
    422: docs.VALIDATION_ERROR,
    429: docs.ERROR,
}
_FORMS = {"application/x-www-form-urlencoded": docs.RunForm, "multipart/form-data": docs.RunForm}
_CONTINUE_FORMS = {"application/x-www-form-urlencoded": docs.ContinueForm, "multipart/form-data": docs.ContinueForm}
_IN_SESSION = [OpenApiParameter("session_id", str, required=True)]


class TeamListView(AgentListView):
    of = TEAM

    @extend_schema(operation_id="get_teams", tags=["Teams"], responses={200: docs.TeamResponse(many=True)})
    def get(self, request):
        return super().get(request)


class TeamDetailView(OfATeam, AgentDetailView):
    @extend_schema(operation_id="get_team", tags=["Teams"], responses={200: docs.TeamResponse, 404: docs.ERROR})
    def get(self, request, **path: str):
        return super().get(request, **path)


class TeamRunsView(OfATeam, AgentRunsView):
    @extend_schema(operation_id="create_team_run", tags=["Teams"], request=_FORMS, responses=_TEAM_RUN_RESPONSES)
    async def post(self, request, **path: str):
        return await super().post(request, **path)

    @extend_schema(
        operation_id="list_team_runs", tags=["Teams"],
        parameters=[*_IN_SESSION, OpenApiParameter("status", str, description="exact, case-sensitive run status")],
        responses={200: RunOut(many=True), 404: docs.ERROR, 422: docs.VALIDATION_ERROR},
    )
    async def get(self, request, **path: str):
        return await super().get(request, **path)


class TeamRunDetailView(OfATeam, AgentRunDetailView):
    @extend_schema(operation_id="get_team_run", tags=["Teams"], parameters=_IN_SESSION, responses={200: docs.RunOutput, 404: docs.ERROR, 422: docs.VALIDATION_ERROR})
    def get(self, request, run_id: str, **path: str):
        return super().get(request, run_id, **path)


class TeamRunCheckpointsView(OfATeam, AgentRunCheckpointsView):
    @extend_schema(
        operation_id="list_team_run_checkpoints", tags=["Teams"], parameters=_IN_SESSION,
        responses={200: docs.RunCheckpoints, 404: docs.ERROR, 422: docs.VALIDATION_ERROR},
    )
    def get(self, request, run_id: str, **path: str):
        return super().get(request, run_id, **path)


class TeamRunCheckpointView(OfATeam, AgentRunCheckpointView):
    @extend_schema(
        operation_id="get_team_run_checkpoint_snapshot", tags=["Teams"],
        parameters=[OpenApiParameter("message_index", int, OpenApiParameter.PATH), *_IN_SESSION],
        responses={200: docs.RunCheckpointSnapshot, 400: docs.ERROR, 404: docs.ERROR, 422: docs.VALIDATION_ERROR},
    )
    def get(self, request, run_id: str, message_index: str, **path: str):
        return super().get(request, run_id, message_index, **path)


class TeamRunCancelView(OfATeam, AgentRunCancelView):
    @extend_schema(
        operation_id="cancel_team_run", tags=["Teams"], request=None, parameters=[OpenApiParameter("session_id", str)],
        responses={200: OpenApiTypes.OBJECT, 400: docs.ERROR, 404: docs.ERROR},
    )
    def post(self, request, run_id: str, **path: str):
        return super().post(request, run_id, **path)


class TeamSessionForkView(OfATeam, AgentSessionForkView):
    @extend_schema(
        operation_id="fork_team_session", tags=["Teams"], request=None,
        parameters=[OpenApiParameter("user_id", str, description="Whose session to fork (ignored, and forced to the caller, under user isolation)")],
        responses={200: docs.ForkedSession, 400: docs.ERROR, 404: docs.ERROR, 409: docs.ERROR},
    )
    def post(self, request, session_id: str, **path: str):
        return super().post(request, session_id, **path)


class TeamRunContinueView(OfATeam, AgentRunContinueView):
    @extend_schema(operation_id="continue_team_run", tags=["Teams"], request=_CONTINUE_FORMS, responses=_TEAM_RUN_RESPONSES)
    async def post(self, request, run_id: str, **path: str):
        return await super().post(request, run_id, **path)


class TeamRunResumeView(OfATeam, AgentRunResumeView):
    @extend_schema(
        operation_id="resume_team_run_stream", tags=["Teams"], request={"application/x-www-form-urlencoded": docs.ResumeForm},
        responses={200: OpenApiResponse(description="text/event-stream: replay/catch_up/subscribed frames and team events"), 400: docs.ERROR, 404: docs.ERROR},
    )
    async def post(self, request, run_id: str, **path: str):
        return await super().post(request, run_id, **path)


# ---- /workflows: the same views, of a workflow ---------------------------------------------------


class OfAWorkflow:
    """Mixed in before an agent view: the same view, of a workflow (``workflow_id``, ``workflows`` scopes)."""

    of = WORKFLOW
    scope_family = "workflows"
    scope_resource_kwarg = "workflow_id"


# AgentOS's input for a workflow factory: no workflow of this server is one, so it is ignored.
_FACTORY_INPUT = OpenApiParameter("factory_input", str, description="A JSON object a factory-built workflow is built from (ignored by the others)")
_WORKFLOW_RUN_RESPONSES = {
    **_TEAM_RUN_RESPONSES,
    200: OpenApiResponse(docs.RunOutput, description="stream=false: the WorkflowRunOutput (step_results, step_executor_runs); stream=true (the default): text/event-stream of workflow, step and executor events"),
}


class WorkflowListView(AgentListView):
    of = WORKFLOW

    @extend_schema(operation_id="get_workflows", tags=["Workflows"], responses={200: docs.WorkflowSummary(many=True)})
    def get(self, request):
        return super().get(request)


class WorkflowDetailView(OfAWorkflow, AgentDetailView):
    @extend_schema(
        operation_id="get_workflow", tags=["Workflows"],
        parameters=[OpenApiParameter("version", int, description="A stored version (code workflows have none: not found)")],
        responses={200: docs.WorkflowResponse, 404: docs.ERROR, 422: docs.VALIDATION_ERROR},
    )
    def get(self, request, **path: str):
        entry = self.of.get(self.component_id, params.integer(request.query_params, "version", None, minimum=1))
        if entry is None:
            raise NotFound("Workflow not found")
        return Response(self.of.present(entry))


class WorkflowRunsView(OfAWorkflow, AgentRunsView):
    @extend_schema(operation_id="create_workflow_run", tags=["Workflows"], request=_FORMS, responses=_WORKFLOW_RUN_RESPONSES)
    async def post(self, request, **path: str):
        return await super().post(request, **path)

    @extend_schema(
        operation_id="list_workflow_runs", tags=["Workflows"],
        parameters=[
            *_IN_SESSION, OpenApiParameter("status", str, description="exact, case-sensitive run status"),
            _FACTORY_INPUT,
        ],
        responses={200: RunOut(many=True), 404: docs.ERROR, 422: docs.VALIDATION_ERROR},
    )
    async def get(self, request, **path: str):
        return await super().get(request, **path)


class WorkflowRunDetailView(OfAWorkflow, AgentRunDetailView):
    @extend_schema(operation_id="get_workflow_run", tags=["Workflows"], parameters=[*_IN_SESSION, _FACTORY_INPUT], responses={200: docs.RunOutput, 404: docs.ERROR, 422: docs.VALIDATION_ERROR})
    def get(self, request, run_id: str, **path: str):
        return super().get(request, run_id, **path)


class WorkflowRunCancelView(OfAWorkflow, AgentRunCancelView):
    @extend_schema(
        operation_id="cancel_workflow_run", tags=["Workflows"], request=None, parameters=[OpenApiParameter("session_id", str)],
        responses={200: OpenApiTypes.OBJECT, 400: docs.ERROR, 404: docs.ERROR},
    )
    def post(self, request, run_id: str, **path: str):
        return super().post(request, run_id, **path)


class WorkflowRunContinueView(OfAWorkflow, AgentRunContinueView):
    @extend_schema(
        operation_id="continue_workflow_run", tags=["Workflows"],
        request={"application/x-www-form-urlencoded": docs.WorkflowContinueForm, "multipart/form-data": docs.WorkflowContinueForm},
        responses=_WORKFLOW_RUN_RESPONSES,
    )
    async def post(self, request, run_id: str, **path: str):
        return await super().post(request, run_id, **path)


class WorkflowRunResumeView(OfAWorkflow, AgentRunResumeView):
    @extend_schema(
        operation_id="resume_workflow_run_stream", tags=["Workflows"], request={"application/x-www-form-urlencoded": docs.ResumeForm},
        responses={200: OpenApiResponse(description="text/event-stream: replay/catch_up/subscribed frames and workflow events"), 400: docs.ERROR, 404: docs.ERROR},
    )
    async def post(self, request, run_id: str, **path: str):
        return await super().post(request, run_id, **path)
