"""The /traces family of the AgentOS API and /trace_session_stats.

Under user isolation a caller reads only their own runs' traces; another user's trace is a 404,
as a missing one is. ``user_id`` narrows an admin's (or an open server's) reads.
"""
from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.errors import BadRequest, NotFound, invalid
from core.api.params import Page, envelope, page
from core.api.schema import ErrorOut, ValidationErrorOut, query_param
from core.api.views import AgentOSView
from sessions.api.inputs import json_body

from ..models import Trace
from ..provider import written_through
from ..selectors import (
    FILTER_FIELDS,
    STATUSES,
    FilterError,
    TraceFilters,
    filter_expression,
    parse_time,
    session_stats,
    trace_get,
    trace_list,
    trace_spans,
)
from . import render

TAGS = ["Traces"]
ERRORS = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 422: ValidationErrorOut}
DB_ID = query_param("db_id", "Database id (this server has one: its id from /config)")
FILTER_PARAMS = [
    query_param("run_id", "Only the trace of this run"),
    query_param("session_id", "Only traces of this session"),
    query_param("user_id", "Only this user's traces (forced to the caller under user isolation)"),
    query_param("agent_id", "Only traces of this agent's runs"),
    query_param("team_id", "Only traces of this team's runs"),
    query_param("workflow_id", "Only traces of this workflow's runs"),
    query_param("status", "Only traces of this status", enum=STATUSES),
    query_param("start_time", "Only traces that started at or after this time (ISO 8601)"),
    query_param("end_time", "Only traces that ended at or before this time (ISO 8601)"),
    query_param("page", "Page number, from 1", OpenApiTypes.INT, default=1),
    query_param("limit", "Traces per page (1 to 1000)", OpenApiTypes.INT, default=20),
    DB_ID,
]


class TracesAPIView(AgentOSView):
    scope_family = "traces"

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        written_through()  # the runs this process has finished are read back with their traces

    def handle_exception(self, exc: Exception) -> Any:
        if isinstance(exc, Trace.DoesNotExist):
            exc = NotFound("Trace not found")
        return super().handle_exception(exc)

    def reader(self, params: Any) -> Any:
        self.check_db_selector(params)
        return self.principal.read_scope(params.get("user_id") or None)


def _time(params: Any, name: str) -> Any:
    raw = params.get(name)
    if not raw:
        return None
    parsed = parse_time(raw)
    if parsed is None:
        raise invalid(["query", name], f"{name} must be an ISO 8601 date-time, such as 2026-12-03T09:00:00Z", value=raw)
    return parsed


def _filters(params: Any, *, with_ids: bool = True) -> TraceFilters:
    status = params.get("status") or None
    if status is not None and status.upper() not in STATUSES:
        raise invalid(["query", "status"], f"status must be one of {', '.join(STATUSES)}", value=status)
    ids = {name: params.get(name) or None for name in ("run_id", "session_id")} if with_ids else {}
    return TraceFilters(
        **ids, agent_id=params.get("agent_id") or None, team_id=params.get("team_id") or None,
        workflow_id=params.get("workflow_id") or None, status=status.upper() if status else None,
        start_time=_time(params, "start_time"), end_time=_time(params, "end_time"),
    )


class TracesView(TracesAPIView):
    @extend_schema(operation_id="get_traces", tags=TAGS, parameters=FILTER_PARAMS, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request: Request) -> Response:
        params = request.query_params
        user = self.reader(params)
        window = page(params, default_limit=20, max_limit=1000)
        traces, total = trace_list(user=user, filters=_filters(params), offset=window.offset, limit=window.limit)
        return Response(envelope([render.summary(trace) for trace in traces], window, total))


class TraceDetailView(TracesAPIView):
    @extend_schema(
        operation_id="get_trace", tags=TAGS,
        parameters=[
            OpenApiParameter("trace_id", OpenApiTypes.STR, OpenApiParameter.PATH),
            query_param("span_id", "Only this span, with the spans under it"),
            query_param("run_id", "The trace must be this run's"),
            DB_ID,
        ],
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def get(self, request: Request, trace_id: str) -> Response:
        params = request.query_params
        user = self.reader(params)
        trace = trace_get(user=user, trace_id=trace_id, run_id=params.get("run_id") or None)
        spans = trace_spans(user=user, traces=[trace])[trace.pk]
        span_id = params.get("span_id")
        if span_id:
            found = render.subtree(spans, span_id)
            if found is None:
                raise NotFound("Span not found")
            return Response(found)
        return Response(render.detail(trace, spans))


class TraceSessionStatsView(TracesAPIView):
    @extend_schema(
        operation_id="get_trace_stats", tags=TAGS,
        parameters=[p for p in FILTER_PARAMS if p.name not in ("run_id", "session_id", "status")],
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        user = self.reader(params)
        window = page(params, default_limit=20, max_limit=1000)
        rows, total = session_stats(user=user, filters=_filters(params, with_ids=False), offset=window.offset, limit=window.limit)
        return Response(envelope([render.session_row(row) for row in rows], window, total))


class FilterSchemaView(TracesAPIView):
    @extend_schema(operation_id="get_traces_filter_schema", tags=TAGS, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request: Request) -> Response:
        operators = {
            "enum": ["EQ", "NEQ", "IN"], "text": ["EQ", "NEQ", "CONTAINS", "STARTSWITH", "IN"],
            "number": ["EQ", "NEQ", "GT", "GTE", "LT", "LTE"], "datetime": ["GT", "GTE", "LT", "LTE"],
        }
        labels = {"status": "Status", "name": "Trace Name", "duration_ms": "Duration (ms)"}
        fields = []
        for key, (_, kind) in FILTER_FIELDS.items():
            entry: dict[str, Any] = {
                "key": key, "label": labels.get(key) or key.replace("_id", " ID").replace("_", " ").title().replace(" Id", " ID"),
                "type": "string" if kind == "text" else kind, "operators": operators[kind],
            }
            if kind == "enum":
                entry["values"] = list(STATUSES)
            fields.append(entry)
        return Response({"fields": fields, "logical_operators": ["AND", "OR"]})


class TraceSearchIn(serializers.Serializer):
    """``TraceSearchRequest``."""

    filter = serializers.DictField(required=False, allow_null=True)
    group_by = serializers.ChoiceField(choices=("run", "session"), required=False, default="run")
    page = serializers.IntegerField(required=False, min_value=1, default=1)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=100, default=20)


class TraceSearchView(TracesAPIView):
    scope_actions = {"POST": "read"}

    @extend_schema(operation_id="search_traces", tags=TAGS, parameters=[DB_ID], request=TraceSearchIn, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def post(self, request: Request) -> Response:
        user = self.reader(request.query_params)
        body = json_body(request, TraceSearchIn, required=False)
        window = Page(page=body.get("page", 1), limit=body.get("limit", 20))
        expression = None
        if body.get("filter"):
            try:
                expression = filter_expression(body["filter"])
            except FilterError as exc:  # AgentOS answers a filter it cannot apply with 400
                raise BadRequest(f"Invalid filter: {exc}") from None
        if body.get("group_by", "run") == "session":
            rows, total = session_stats(user=user, filters=TraceFilters(), offset=window.offset, limit=window.limit, expression=expression)
            return Response(envelope([render.session_row(row) for row in rows], window, total))
        traces, total = trace_list(user=user, filters=TraceFilters(), offset=window.offset, limit=window.limit, expression=expression)
        spans = trace_spans(user=user, traces=traces)
        return Response(envelope([render.detail(trace, spans[trace.pk]) for trace in traces], window, total))
