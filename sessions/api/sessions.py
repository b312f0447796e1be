"""The /sessions family of the AgentOS API (agentos-api.md §6).

Every read goes through the caller's scope (``Principal.read_scope``): another user's session
or run is reported exactly like a missing one. Null handling follows AgentOS route by route:
list, detail, create, run listings and previews drop null keys; rename, PATCH and the single
run keep them.
"""
from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, PolymorphicProxySerializer, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.errors import BadRequest, Conflict, NotFound, invalid
from core.api.params import boolean, choice, created_window, envelope, page, sort_order_param
from sessions.models import RunOrigin, SessionType
from sessions.selectors import run_events_kept, session_chat_history, session_detail, session_list, session_run_get, session_runs
from sessions.services import (
    SessionExists,
    SessionLimitReached,
    SessionNotFound,
    session_create_for_caller,
    session_delete,
    session_rename,
    session_update,
)

from . import inputs as q
from .base import SessionsAPIView
from .inputs import json_body, session_type_param, status_param
from .serializers import (
    RUN_STATUSES,
    AgentSessionDetailOut,
    CreateSessionIn,
    DeleteSessionsIn,
    ErrorOut,
    PaginatedSessionsOut,
    RenameSessionIn,
    RunOut,
    RunPreviewOut,
    SessionOut,
    TeamRunOut,
    TeamSessionDetailOut,
    UpdateSessionIn,
    WorkflowRunOut,
    WorkflowSessionDetailOut,
    classify_run,
    drop_nulls,
    errors,
    render,
    render_run,
    render_session_detail,
    run_by_own_kind,
    run_preview_data,
    session_item_data,
    stored_run,
)

TAGS = ["Sessions"]
SESSION_DETAIL = PolymorphicProxySerializer(
    component_name="SessionDetail",
    serializers=[AgentSessionDetailOut, TeamSessionDetailOut, WorkflowSessionDetailOut],
    resource_type_field_name=None,
)
SESSION_RUN = PolymorphicProxySerializer(
    component_name="SessionRun",
    serializers=[RunOut, TeamRunOut, WorkflowRunOut],
    resource_type_field_name=None,
)
SESSION_RUNS = PolymorphicProxySerializer(
    component_name="SessionRun",
    serializers=[RunOut, TeamRunOut, WorkflowRunOut],
    resource_type_field_name=None,
    many=True,
)

SEARCH_MAX_CHARS = 200
SEARCH = q.query_param(
    "q",
    "Search the conversations: sessions whose name contains this text, or with a message (the user's "
    "input or the agent's answer) holding every word of it. On PostgreSQL a full-text search where each "
    "word matches the start of a word (`pyth` finds \"Python\"); on SQLite a case-insensitive substring "
    f"search. At most {SEARCH_MAX_CHARS} characters. An extension of this server: AgentOS has no such parameter.",
)


def _search_param(params: Any) -> str | None:
    value = params.get("q")
    if value is None or not value.strip():
        return None
    if len(value) > SEARCH_MAX_CHARS:
        raise invalid(
            ["query", "q"], f"String should have at most {SEARCH_MAX_CHARS} characters",
            kind="string_too_long", value=value, ctx={"max_length": SEARCH_MAX_CHARS},
        )
    return value


def _not_found(session_id: str, session_type: str | None = None) -> NotFound:
    prefix = f"{session_type.title()} Session" if session_type else "Session"
    return NotFound(f"{prefix} with id '{session_id}' not found")


ORIGIN = q.query_param(
    "origin",
    "Only sessions that came from these origins, comma-separated (chat, api, eval, schedule): the chat lists "
    "`chat,api`, people's conversations, without the sessions evals and schedules make (not in AgentOS)",
)
SESSION_ORIGINS = (RunOrigin.CHAT, RunOrigin.API, RunOrigin.EVAL, RunOrigin.SCHEDULE)


def _origins_param(params: Any) -> list[str] | None:
    """``origin=chat,api``: the origins asked for (None: all); an unknown one is a 422."""
    wanted = [value.strip() for value in (params.get("origin") or "").split(",") if value.strip()]
    unknown = [value for value in wanted if value not in SESSION_ORIGINS]
    if unknown:
        expected = ", ".join(SESSION_ORIGINS)
        raise invalid(["query", "origin"], f"Input should be among {expected}", kind="enum", value=params.get("origin"), ctx={"expected": expected})
    return wanted or None


class SessionsView(SessionsAPIView):
    """GET (list), POST (create) and DELETE (bulk) on /sessions."""

    @extend_schema(
        operation_id="get_sessions",
        summary="List Sessions",
        description=(
            "The caller's sessions, one page at a time, newest first by default, with filters by type, "
            "component and name. `q` also searches inside the conversations' messages (the chat UI's search)."
        ),
        tags=TAGS,
        parameters=[
            q.TYPE,
            q.query_param("component_id", "Only sessions of this agent/team/workflow id"),
            q.query_param("user_id", "Only this user's sessions (ignored, and forced to the caller, under user isolation)"),
            q.query_param("session_name", "Only sessions whose name contains this (case-insensitive)"),
            SEARCH,
            ORIGIN,
            q.LIMIT,
            q.PAGE,
            q.query_param("sort_by", "Column to sort by (unknown columns fall back to created_at)", default="created_at"),
            q.SORT_ORDER,
            q.DB_ID,
            q.TABLE,
        ],
        responses={200: PaginatedSessionsOut, **errors(400, 404, 422)},
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        self.check_db_selector(params)
        session_type = session_type_param(params)
        window = page(params, max_limit=None)
        descending = sort_order_param(params)
        text = _search_param(params)
        sessions, total = session_list(
            user=self.principal.read_scope(params.get("user_id")),
            session_type=session_type,
            component_id=params.get("component_id") or None,
            session_name=params.get("session_name") or None,
            text=text,
            origins=_origins_param(params),
            sort_by=params.get("sort_by"),
            descending=descending,
            offset=window.offset,
            limit=window.limit,
        )
        items = [drop_nulls(render(SessionOut, session_item_data(session))) for session in sessions]
        return Response(envelope(items, window, total))

    @extend_schema(
        operation_id="create_session",
        summary="Create New Session",
        tags=TAGS,
        parameters=[
            q.query_param("type", "Type of session to create", enum=tuple(SessionType.values), default="agent"),
            q.DB_ID,
        ],
        request=CreateSessionIn,
        responses={201: SESSION_DETAIL, **errors(400, 404, 409, 422)},
    )
    def post(self, request: Request) -> Response:
        params = request.query_params
        self.check_db_selector({"db_id": params.get("db_id")})
        session_type = session_type_param(params, SessionType.AGENT)
        body = json_body(request, CreateSessionIn, required=False)
        try:
            session = session_create_for_caller(
                owner_id=self.principal.owner(body.get("user_id")),
                session_id=body.get("session_id") or None,
                session_type=session_type,
                component_id=body.get(f"{session_type}_id") or "",
                session_name=body.get("session_name"),
                session_state=body.get("session_state"),
                metadata=body.get("metadata"),
            )
        except (SessionExists, SessionLimitReached) as exc:
            raise Conflict(str(exc)) from None
        body = render_session_detail(session, shape=session_type, chat_history=[], keep_nulls=False)
        return Response(body, status=201)

    @extend_schema(
        operation_id="delete_sessions",
        summary="Delete Multiple Sessions",
        tags=TAGS,
        parameters=[q.query_param("user_id", "Only delete this user's sessions (forced to the caller under user isolation)"), q.DB_ID, q.TABLE, q.DELETE_MEDIA],
        request=DeleteSessionsIn,
        responses={204: None, **errors(400, 404, 422)},
    )
    def delete(self, request: Request) -> Response:
        params = request.query_params
        body = json_body(request, DeleteSessionsIn)
        if len(body["session_ids"]) != len(body["session_types"]):
            raise BadRequest("Session IDs and session types must have the same length")
        self.check_db_selector(params)
        # This server stores no session media, so delete_media=true has nothing more to delete.
        boolean(params, "delete_media", False)
        # Sessions are keyed by id alone; like AgentOS's own databases, the types are not checked.
        session_delete(user=self.principal.read_scope(params.get("user_id")), session_ids=body["session_ids"])
        return Response(status=204)


class SessionDetailView(SessionsAPIView):
    """GET, PATCH and DELETE on /sessions/{session_id}."""

    @extend_schema(
        operation_id="get_session_by_id",
        summary="Get Session by ID",
        tags=TAGS,
        parameters=[q.SESSION_ID_PATH, q.TYPE, q.USER_ID, q.DB_ID, q.TABLE],
        responses={200: SESSION_DETAIL, **errors(400, 404, 422)},
    )
    def get(self, request: Request, session_id: str) -> Response:
        params = request.query_params
        self.check_db_selector(params)
        requested_type = session_type_param(params)
        found = session_detail(
            user=self.principal.read_scope(params.get("user_id")),
            session_id=session_id,
            shape=requested_type,
        )
        if found is None:
            raise _not_found(session_id, requested_type)
        session, history = found
        shape = requested_type or session.session_type
        return Response(render_session_detail(session, shape=shape, chat_history=history, keep_nulls=False))

    @extend_schema(
        operation_id="update_session",
        summary="Update Session",
        tags=TAGS,
        parameters=[q.SESSION_ID_PATH, q.TYPE, q.USER_ID, q.DB_ID, q.TABLE],
        request=UpdateSessionIn,
        responses={200: SESSION_DETAIL, **errors(400, 404, 422)},
    )
    def patch(self, request: Request, session_id: str) -> Response:
        params = request.query_params
        self.check_db_selector(params)
        requested_type = session_type_param(params)
        body = json_body(request, UpdateSessionIn)
        scope = self.principal.read_scope(params.get("user_id"))
        try:
            session = session_update(
                user=scope,
                session_id=session_id,
                session_name=body.get("session_name"),
                session_state=body.get("session_state"),
                metadata=body.get("metadata"),
                summary=body.get("summary"),
            )
        except SessionNotFound:
            raise _not_found(session_id) from None
        return Response(self._render(session, requested_type, scope))

    @extend_schema(
        operation_id="delete_session",
        summary="Delete Session",
        tags=TAGS,
        parameters=[q.SESSION_ID_PATH, q.USER_ID, q.DB_ID, q.TABLE, q.DELETE_MEDIA],
        request=None,
        responses={204: None, **errors(400, 404, 422)},
    )
    def delete(self, request: Request, session_id: str) -> Response:
        params = request.query_params
        self.check_db_selector(params)
        boolean(params, "delete_media", False)  # validated; no session media is stored
        session_delete(user=self.principal.read_scope(params.get("user_id")), session_ids=[session_id])
        return Response(status=204)

    @staticmethod
    def _render(session: Any, requested_type: str | None, scope: Any) -> dict[str, Any]:
        """Rename and PATCH answer the detail with explicit nulls."""
        shape = requested_type or session.session_type
        history = [] if shape == SessionType.WORKFLOW else session_chat_history(user=scope, session_id=session.session_id)
        return render_session_detail(session, shape=shape, chat_history=history, keep_nulls=True)


class SessionRenameView(SessionsAPIView):
    @extend_schema(
        operation_id="rename_session",
        summary="Rename Session",
        tags=TAGS,
        parameters=[q.SESSION_ID_PATH, q.TYPE, q.USER_ID, q.DB_ID, q.TABLE],
        request=RenameSessionIn,
        responses={200: SESSION_DETAIL, **errors(400, 404, 422)},
    )
    def post(self, request: Request, session_id: str) -> Response:
        params = request.query_params
        self.check_db_selector(params)
        requested_type = session_type_param(params)
        body = json_body(request, RenameSessionIn)
        scope = self.principal.read_scope(params.get("user_id"))
        try:
            session = session_rename(user=scope, session_id=session_id, session_name=body["session_name"])
        except SessionNotFound:
            raise _not_found(session_id) from None
        return Response(SessionDetailView._render(session, requested_type, scope))


_RUN_FILTERS = [q.SESSION_ID_PATH, q.TYPE, q.USER_ID, q.CREATED_AFTER, q.CREATED_BEFORE, q.STATUS, q.DB_ID, q.TABLE]


BRANCHES = q.query_param(
    "branches",
    "`active` (default): the conversation's active branch only, as the model sees it; `all`: every version an edit "
    "or a regeneration made, each run saying `previous_run_id` and `branch_active` (not in AgentOS)",
    enum=("active", "all"),
    default="active",
)


def _branches_param(params: Any) -> bool:
    """True for ``branches=all``; a value other than ``active`` or ``all`` is a 422."""
    return choice(params, "branches", ("active", "all"), "active") == "all"


class SessionRunsView(SessionsAPIView):
    """GET /sessions/{session_id}/runs: a bare array, team members' runs included; the active
    branch of the conversation unless ``branches=all``."""

    @extend_schema(
        operation_id="get_session_runs",
        summary="Get Session Runs",
        tags=TAGS,
        parameters=[*_RUN_FILTERS, BRANCHES],
        responses={200: SESSION_RUNS, **errors(400, 404, 422)},
    )
    def get(self, request: Request, session_id: str) -> Response:
        params = request.query_params
        statuses = status_param(params, RUN_STATUSES)
        self.check_db_selector(params)
        requested_type = session_type_param(params)
        scope = self.principal.read_scope(params.get("user_id"))
        all_branches = _branches_param(params)
        found = session_runs(user=scope, session_id=session_id, statuses=statuses, all_branches=all_branches, **created_window(params))
        if found is None:
            raise NotFound(f"Session with ID {session_id} not found")
        session, runs = found
        shape = requested_type or session.session_type
        events = run_events_kept(user=scope, run_ids=[run.pk for run in runs])
        listed = (classify_run(stored_run(run, events=events.get(run.pk)), shape=shape, session=session) for run in runs)
        return Response([render_run(kind, data, keep_nulls=False) for kind, data in filter(None, listed)])


class SessionRunPreviewsView(SessionsAPIView):
    """GET /sessions/{session_id}/run-previews: ids, status and 280-character previews only."""

    @extend_schema(
        operation_id="get_session_run_previews",
        summary="Get Session Run Previews",
        tags=TAGS,
        parameters=[*_RUN_FILTERS, BRANCHES],
        responses={200: RunPreviewOut(many=True), **errors(400, 404, 422)},
    )
    def get(self, request: Request, session_id: str) -> Response:
        params = request.query_params
        statuses = status_param(params, RUN_STATUSES)
        self.check_db_selector(params)
        requested_type = session_type_param(params)
        found = session_runs(
            user=self.principal.read_scope(params.get("user_id")),
            session_id=session_id,
            statuses=statuses,
            all_branches=_branches_param(params),
            **created_window(params),
        )
        if found is None:
            raise NotFound(f"Session with ID {session_id} not found")
        session, runs = found
        shape = requested_type or session.session_type
        listed = (classify_run(stored_run(run), shape=shape, session=session) for run in runs)
        previews = [render(RunPreviewOut, run_preview_data(kind, data)) for kind, data in filter(None, listed)]
        return Response([drop_nulls(preview) for preview in previews])


class SessionRunView(SessionsAPIView):
    """GET /sessions/{session_id}/runs/{run_id}: one run, schema chosen by the run's own kind."""

    @extend_schema(
        operation_id="get_session_run",
        summary="Get Run by ID",
        tags=TAGS,
        parameters=[q.SESSION_ID_PATH, q.RUN_ID_PATH, q.TYPE, q.USER_ID, q.DB_ID, q.TABLE],
        responses={200: SESSION_RUN, **errors(400, 404, 422)},
    )
    def get(self, request: Request, session_id: str, run_id: str) -> Response:
        params = request.query_params
        self.check_db_selector(params)
        session_type_param(params)
        scope = self.principal.read_scope(params.get("user_id"))
        found = session_run_get(user=scope, session_id=session_id, run_id=run_id)
        if found.session is None:
            raise NotFound(f"Session with ID {session_id} not found")
        if found.run is None:
            if not found.session_has_runs:
                raise NotFound(f"Session with ID {session_id} has no runs")
            raise NotFound(f"Run with ID {run_id} not found in session {session_id}")
        events = run_events_kept(user=scope, run_ids=[found.run.pk]).get(found.run.pk)
        kind, data = run_by_own_kind(stored_run(found.run, events=events), session=found.session)
        return Response(render_run(kind, data, keep_nulls=True))


class SessionMediaView(SessionsAPIView):
    """Offloaded media: this server keeps none, so there is never any to serve."""

    @extend_schema(
        operation_id="get_session_media",
        summary="Get Session Media",
        tags=TAGS,
        parameters=[
            q.SESSION_ID_PATH,
            OpenApiParameter("storage_key", OpenApiTypes.STR, OpenApiParameter.PATH),
            q.TYPE,
            q.USER_ID,
            q.DB_ID,
            q.TABLE,
            q.query_param("redirect", "Redirect to a signed storage URL instead of streaming", OpenApiTypes.BOOL, default=False),
        ],
        responses={404: ErrorOut},
    )
    def get(self, request: Request, session_id: str, storage_key: str) -> Response:
        raise NotFound("Media not found")
