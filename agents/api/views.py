"""The /agents family: catalogue, runs (JSON or SSE), poll, list, cancel, continue, resume, session forks."""
from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

from django.db import DatabaseError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response

from core.api import params
from core.api.errors import DATABASE_UNAVAILABLE, BadRequest, Conflict, NotFound, TooManyRequests, invalid, missing
from core.api.sse import control_frame, event_frame
from core.addresses import client_address
from core.api.views import AgentOSView, AsyncAgentOSView, FormView, json_response
from core.tenancy import scope_queryset
from sessions.models import Run, RunStatus, Session
from sessions.api.serializers import render_run, run_by_own_kind, stored_run
from sessions.api.serializers.runs import RunOut
from sessions.selectors import run_events_kept, session_get
from sessions.services.runs import SessionLimitReached, SessionNotFound
from sessions.services.sessions import NothingToFork, session_fork

from ..models import Job, Stage
from ..registry import agent_get, agent_list
from ..runtime import InvalidContinuation
from ..runtime.checkpoints import checkpoint_snapshot, checkpoints, parse_continue_from
from ..services.capacity import RETRY_AFTER_SECONDS, Slot, TooManyRuns, run_slot_acquire, run_slot_key
from ..services.executor import in_run_thread
from ..services.jobs import (
    IDEMPOTENCY_KEY_MAX,
    STRATEGIES,
    IdempotencyConflict,
    QueueFull,
    SessionBusy,
    job_continue,
    job_submit,
    waiting_on,
)
from ..services.runs import (
    DECISIONS_WITH_BRANCH,
    AgentNotFound,
    Continuation,
    PreparedRun,
    branch_submit,
    RunNotContinuable,
    RunNotFound,
    RunRequest,
    agent_entry_for,
    cancel_for_caller,
    continue_execute,
    continue_prepare,
    run_execute,
    run_for_caller,
    run_prepare,
    session_for_run,
)
from ..services.tail import follow, resume
from . import schema as docs
from .forms import bounded_text, form_data, parse_run_form, parse_tools_field
from .presenters import agent_response, run_output
from .streaming import sse_response, stream_in_thread

logger = logging.getLogger("agno_site.runs")


# Service exceptions -> the AgentOS error each one is on the wire.
_SERVICE_ERRORS = {
    AgentNotFound: lambda exc: NotFound("Agent not found"),
    SessionNotFound: lambda exc: NotFound("Session not found"),
    SessionLimitReached: lambda exc: Conflict(str(exc)),
    RunNotFound: lambda exc: NotFound("Run not found"),
    InvalidContinuation: lambda exc: BadRequest(str(exc)),
    RunNotContinuable: lambda exc: Conflict(str(exc)),
    SessionBusy: lambda exc: Conflict(str(exc)),
    IdempotencyConflict: lambda exc: Conflict(str(exc)),
    QueueFull: lambda exc: TooManyRequests(str(exc), headers={"Retry-After": "5"}),
    TooManyRuns: lambda exc: TooManyRequests(str(exc), headers={"Retry-After": str(RETRY_AFTER_SECONDS)}),
}


def _translated(fn, /, *args: Any, **kwargs: Any) -> Any:
    """Call a service, turning its exceptions into API errors."""
    try:
        return fn(*args, **kwargs)
    except tuple(_SERVICE_ERRORS) as exc:
        translate = next(make for kind, make in _SERVICE_ERRORS.items() if isinstance(exc, kind))
        raise translate(exc) from None


class OfAnAgent:
    """A view of one agent (``agent_id`` in the path): its ``agents`` scopes, reading by default."""

    scope_family = "agents"
    scope_resource_kwarg = "agent_id"


class RunsAnAgent(OfAnAgent):
    """A view that runs, continues or acts on an agent's runs: ``agents:run`` for every method."""

    scope_actions = {"GET": "run", "POST": "run"}


class AgentAsyncView(AsyncAgentOSView):
    """Blocking work goes to the run threads (agents.services.executor), with service errors
    turned into API errors."""

    async def in_thread(self, fn, /, *args: Any, **kwargs: Any) -> Any:
        return await in_run_thread(_translated, fn, *args, **kwargs)

    def run_slot(self, prepared: PreparedRun) -> Slot:
        """A place for one inline or streamed run of the user it belongs to (429 over
        RUN_MAX_PER_USER), taken once the run is prepared and nothing is left to refuse it. The
        run gives it back when it ends: ``with`` for a whole run here, the stream's thread for a
        streamed one."""
        # The address the anonymous rate limit keys on (core.addresses: X-Forwarded-For only
        # from TRUSTED_PROXIES): one notion of who a client is, which a made-up header can't change.
        address = client_address(self.request) or ""
        return _translated(run_slot_acquire, run_slot_key(owner_id=prepared.owner_id, client_address=address))


def visible_agents(principal) -> list:
    """The agents ``principal`` may read (AgentOS: 403 when it holds no agent scope at all)."""
    from rest_framework.exceptions import PermissionDenied

    if not principal.holds_any("agents"):
        raise PermissionDenied("Insufficient permissions. Required scope(s): agents:read")
    ids = principal.visible_ids("agents")
    return [entry for entry in agent_list() if ids is None or entry.agent_id in ids]


def _require_agent(agent_id: str) -> None:
    if agent_get(agent_id) is None:
        raise NotFound("Agent not found")


class AgentListView(AgentOSView):
    # Filtered to the agents the caller may read; a token with no agent scope at all is refused.
    authenticated_only = True

    @extend_schema(operation_id="get_agents", tags=["Agents"], responses={200: docs.AgentResponse(many=True)})
    def get(self, request):
        return Response([agent_response(entry) for entry in visible_agents(self.principal)])


class AgentDetailView(OfAnAgent, AgentOSView):
    @extend_schema(operation_id="get_agent", tags=["Agents"], responses={200: docs.AgentResponse, 404: docs.ERROR})
    def get(self, request, agent_id: str):
        entry = agent_get(agent_id)
        if entry is None:
            raise NotFound("Agent not found")
        return Response(agent_response(entry))


class AgentRunsView(OfAnAgent, AgentAsyncView):
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
    async def post(self, request, agent_id: str):
        kind, result, stream = self.prepared
        if kind == "background":
            job = result.job
            if not stream:
                return Response({"run_id": job.pk, "session_id": job.session_id, "status": result.run_status}, status=202)
            return sse_response(_tail_frames(job.pk, job.user_id, -1))
        if kind == "output":
            return json_response(result)
        prepared, slot = result
        return sse_response(stream_in_thread(prepared.run_id, partial(run_execute, prepared), slot=slot))

    def prepare_post(self, request, agent_id: str) -> tuple[str, Any, bool]:
        """In a run thread, once the caller is authenticated: a whole non-streamed run, a streamed
        run's preparation (the stream then runs in a thread of its own), or a background run's
        acceptance, committed before the 202."""
        run_request, background = parse_run_form(request)
        if self.principal.session_id:
            run_request.session_id = self.principal.session_id  # a token bound to one session
        if background:
            key = request.headers.get("Idempotency-Key") or None
            if key is not None and len(key) > IDEMPOTENCY_KEY_MAX:
                raise invalid(["header", "Idempotency-Key"], "Idempotency-Key must be at most 512 characters", kind="string_too_long")
            strategy = params.choice(form_data(request), "session_strategy", STRATEGIES, "enqueue", where="body")
            return "background", _translated(self._accept, agent_id, run_request, key, strategy), run_request.stream
        prepared = _translated(run_prepare, principal=self.principal, agent_id=agent_id, request=run_request)
        slot = self.run_slot(prepared)
        if not run_request.stream:
            with slot:
                return "output", _translated(run_execute, prepared), False
        return "stream", (prepared, slot), True

    def _accept(self, agent_id: str, run_request: RunRequest, key: str | None, strategy: str):
        entry = agent_entry_for(principal=self.principal, agent_id=agent_id, version=run_request.version)
        session, session_id, owner_id = session_for_run(principal=self.principal, session_id=run_request.session_id, requested_user_id=run_request.user_id)
        payload = {name: getattr(run_request, name) for name in RunRequest.__dataclass_fields__ if name not in ("session_id", "user_id")}
        if entry.stage == Stage.DRAFT:
            # Only an admin gets here (agent_entry_for); the worker runs the draft on this check.
            payload["draft_allowed"] = True
        run_input = run_request.stored_input()
        return job_submit(
            owner_id=owner_id, session=session, session_id=session_id, component_id=agent_id, payload=payload,
            input=run_input, stream=run_request.stream, idempotency_key=key, strategy=strategy,
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
    async def get(self, request, agent_id: str):
        return Response(self.prepared)

    def prepare_get(self, request, agent_id: str) -> list[dict[str, Any]]:
        _require_agent(agent_id)
        session_id = request.query_params.get("session_id")
        if not session_id:
            raise missing(["query", "session_id"])
        scope = self.principal.read_scope(request.query_params.get("user_id"))
        if not scope_queryset(Session.objects, scope).filter(pk=session_id).exists():
            raise NotFound("Session not found")
        runs = scope_queryset(Run.objects, scope).filter(session_id=session_id, component_id=agent_id).order_by("run_index")
        status = request.query_params.get("status")
        if status:
            runs = runs.filter(status=status)
        runs = list(runs)
        events = run_events_kept(user=scope, run_ids=[run.pk for run in runs])
        # Explicit nulls, as AgentOS answers this list (the session's runs list drops them).
        return [render_run(*run_by_own_kind(stored_run(run, events=events.get(run.pk))), keep_nulls=True) for run in runs]


def _run_in_path(view: AgentOSView, request, agent_id: str, run_id: str) -> Run:
    """The agent's run named in the path, in the session the query names, if the caller may see it."""
    _require_agent(agent_id)
    session_id = request.query_params.get("session_id")
    if not session_id:
        raise missing(["query", "session_id"])
    try:
        return run_for_caller(principal=view.principal, run_id=run_id, session_id=session_id, requested_user_id=request.query_params.get("user_id"), component_id=agent_id)
    except RunNotFound:
        raise NotFound("Run not found") from None


class AgentRunDetailView(OfAnAgent, AgentOSView):
    @extend_schema(
        operation_id="get_agent_run",
        tags=["Agents"],
        parameters=[OpenApiParameter("session_id", str, required=True)],
        responses={200: docs.RunOutput, 404: docs.ERROR, 422: docs.VALIDATION_ERROR},
    )
    def get(self, request, agent_id: str, run_id: str):
        run = _run_in_path(self, request, agent_id, run_id)
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
    def get(self, request, agent_id: str, run_id: str):
        run = _run_in_path(self, request, agent_id, run_id)
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
    def get(self, request, agent_id: str, run_id: str, message_index: str):
        index = params.integer({"message_index": message_index}, "message_index", where="path")
        run = _run_in_path(self, request, agent_id, run_id)
        try:
            return Response(checkpoint_snapshot(run.run_data, index))
        except InvalidContinuation as exc:
            raise BadRequest(str(exc)) from None


class AgentRunCancelView(RunsAnAgent, FormView):
    @extend_schema(
        operation_id="cancel_agent_run",
        tags=["Agents"],
        request=None,
        parameters=[OpenApiParameter("session_id", str)],
        responses={200: OpenApiTypes.OBJECT, 400: docs.ERROR, 404: docs.ERROR},
    )
    def post(self, request, agent_id: str, run_id: str):
        _require_agent(agent_id)
        try:
            cancel_for_caller(principal=self.principal, run_id=run_id, session_id=request.query_params.get("session_id"))
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        except RunNotFound:
            raise NotFound("Run not found") from None
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
    def post(self, request, agent_id: str, session_id: str):
        _require_agent(agent_id)
        user_id = request.query_params.get("user_id") or None
        # The copy is the caller's when they are bound to their identity, else it stays with the
        # session's owner (or the user the query names), as in AgentOS: an admin who forks
        # someone's conversation does not take a copy of it into their own account.
        owner_id = self.principal.user_id if self.principal.isolated else user_id
        try:
            fork = session_fork(
                user=self.principal.read_scope(user_id), owner_id=owner_id, source_session_id=session_id, component_id=agent_id,
            )
        except NothingToFork as exc:
            raise BadRequest(str(exc)) from None
        except SessionLimitReached as exc:
            raise Conflict(str(exc)) from None
        except SessionNotFound:
            raise NotFound("Session not found") from None
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
    def post(self, request, agent_id: str, session_id: str):
        _require_agent(agent_id)
        session = session_get(user=self.principal.read_scope(request.query_params.get("user_id") or None), session_id=session_id)
        if session is None or session.component_id != agent_id:
            raise NotFound("Session not found")
        return Response({"status": "not_enabled", "message": "Compaction is not enabled on this agent.", "compacted": False, "record": None, "metrics": None})


class AgentRunContinueView(RunsAnAgent, AgentAsyncView):
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
    async def post(self, request, agent_id: str, run_id: str):
        kind, result, stream_events = self.prepared
        if kind == "requeued":
            return Response({"run_id": result.pk, "session_id": result.session_id, "status": "PENDING"}, status=202)
        if kind == "requeued-stream":
            return sse_response(_tail_frames(result.pk, result.user_id, result.payload.get("resume_after", -1)))
        if kind == "branched":
            return Response({"run_id": result.pk, "session_id": result.session_id, "status": "PENDING"}, status=202)
        if kind == "branched-stream":
            return sse_response(_tail_frames(result.pk, result.user_id, -1))
        if kind == "output":
            return json_response(result)
        prepared, slot = result
        execute = partial(continue_execute, prepared, streamed=True, stream_events=stream_events)
        return sse_response(stream_in_thread(prepared.run_id, execute, index_from=prepared.first_event_index, slot=slot))

    def prepare_post(self, request, agent_id: str, run_id: str) -> tuple[str, Any, bool]:
        """In a run thread, once the caller is authenticated: the run back on the queue
        (background), continued whole (stream=false), or prepared for its stream."""
        data = form_data(request)
        tools = parse_tools_field(data)
        session_id = data.get("session_id") or None
        if not session_id:
            raise BadRequest("session_id is required for this action")
        stream = params.boolean(data, "stream", True, where="body")
        stream_events = params.boolean(data, "stream_events", True, where="body")
        requested_user_id = data.get("user_id") or None
        continuation = _continuation(data)
        if params.boolean(data, "background", False, where="body"):
            if not continuation.plain:
                if tools:
                    raise BadRequest(DECISIONS_WITH_BRANCH)
                job = _translated(
                    branch_submit, principal=self.principal, agent_id=agent_id, run_id=run_id, session_id=session_id,
                    requested_user_id=requested_user_id, continuation=continuation, stream=stream, stream_events=stream_events,
                )
                return ("branched-stream" if stream else "branched"), job, stream_events
            job = _translated(self._requeue, run_id, session_id, agent_id, requested_user_id, tools, stream_events)
            return ("requeued-stream" if stream else "requeued"), job, stream_events
        prepared = _translated(
            continue_prepare, principal=self.principal, agent_id=agent_id, run_id=run_id, session_id=session_id,
            requested_user_id=requested_user_id, tools=tools, stream_events=stream_events, continuation=continuation,
        )
        slot = self.run_slot(prepared)
        if not stream:
            with slot:
                return "output", _translated(continue_execute, prepared, streamed=False, stream_events=stream_events), stream_events
        return "stream", (prepared, slot), stream_events

    def _requeue(self, run_id: str, session_id: str, agent_id: str, requested_user_id: str | None, tools, stream_events: bool):
        """A paused background run goes back on the queue with the decisions (same run id)."""
        run = run_for_caller(principal=self.principal, run_id=run_id, session_id=session_id, requested_user_id=requested_user_id, component_id=agent_id)
        continue_prepare(principal=self.principal, agent_id=agent_id, run_id=run_id, session_id=session_id, requested_user_id=requested_user_id, tools=tools, stream_events=stream_events)
        job = job_continue(job_id=run.pk, tools=tools or [], stream_events=stream_events)
        if job is None:
            raise RunNotContinuable(f"Run {run_id} was not submitted as a background run; continue it without background=true")
        return job


def _continuation(data: Any) -> Continuation:
    """The unified-continue fields of a continue form, with AgentOS's 400s for what conflicts."""
    try:
        continue_from = parse_continue_from(data.get("continue_from"))
    except InvalidContinuation as exc:
        raise BadRequest(str(exc)) from None
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
    return Continuation(continue_from=continue_from, fork=fork, regenerate=regenerate, replace_original=replace_original, input=text or instructions)


class AgentRunResumeView(RunsAnAgent, AgentAsyncView):
    """Replays a run's stored events after ``last_event_index``, then follows it until it ends.

    Always 200: not-found and failures are in-band ``event: error`` frames, as in AgentOS.
    """


    @extend_schema(
        operation_id="resume_agent_run_stream",
        tags=["Agents"],
        request={"application/x-www-form-urlencoded": docs.ResumeForm},
        responses={200: OpenApiResponse(description="text/event-stream: replay/catch_up/subscribed frames and run events"), 400: docs.ERROR, 404: docs.ERROR},
    )
    async def post(self, request, agent_id: str, run_id: str):
        run, last = self.prepared
        return sse_response(self._frames(run, run_id, last))

    def prepare_post(self, request, agent_id: str, run_id: str) -> tuple[Run | None, int]:
        """The run, if the caller may see it (None: reported in band), and the index to replay after."""
        _require_agent(agent_id)
        data = form_data(request)
        session_id = data.get("session_id") or None
        if self.principal.isolated and not session_id:
            raise BadRequest("session_id is required for this action")
        last = params.integer(data, "last_event_index", None, where="body")
        try:
            run = run_for_caller(principal=self.principal, run_id=run_id, session_id=session_id, component_id=agent_id)
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
