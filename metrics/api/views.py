"""The /metrics family of the AgentOS API (agentos-api.md: metrics).

Reads and refreshes go through the caller's scope: an admin (or an open server) sees and
refreshes every user's rows and the shared bucket; anyone bound to their own data sees and
refreshes only their own rows (``user_id`` in the query is then ignored, as in AgentOS).
"""
from __future__ import annotations

from datetime import date
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from jobs.services.jobs import QueueFull
from core.api.errors import BadRequest, Conflict, TooManyRequests, invalid
from core.api.params import boolean, choice
from core.api.schema import ErrorOut, ValidationErrorOut, query_param
from core.api.views import AgentOSView
from sessions.api.serializers.common import iso_z

from ..models import AggregationPeriod
from ..selectors import metrics_list, refresh_status
from ..services import RefreshAlreadyRunning, RefreshScope, metrics_refresh_enqueue, metrics_refresh_run
from .serializers import DayAggregatedMetricsOut, MetricsRefreshResponseOut, MetricsRefreshStatusOut, MetricsResponseOut, render_row, render_status

TAGS = ["Metrics"]
ERRORS = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 422: ValidationErrorOut}
DB_ID = query_param("db_id", "Database ID (this server has one; its id is accepted back)")
TABLE = query_param("table", "The database table to use (needs db_id)")
USER_ID = query_param("user_id", "Return only this user's metrics. Ignored for non-admin callers")
ALREADY_RUNNING = "A metrics refresh is already running"


class MetricsAPIView(AgentOSView):
    scope_family = "metrics"

    def handle_exception(self, exc: Exception) -> Any:
        if isinstance(exc, QueueFull):
            exc = TooManyRequests(str(exc), headers={"Retry-After": "5"})
        return super().handle_exception(exc)


def _date(params: Any, name: str) -> date | None:
    value = params.get(name)
    if value in (None, ""):
        return None
    try:
        return date.fromisoformat(value) if len(value) == 10 else _bad_date(name, value)
    except ValueError:
        return _bad_date(name, value)


def _bad_date(name: str, value: str) -> date:
    raise invalid(["query", name], "Input should be a valid date in the format YYYY-MM-DD", kind="date_from_datetime_parsing", value=value)


class MetricsView(MetricsAPIView):
    @extend_schema(
        operation_id="get_metrics",
        tags=TAGS,
        parameters=[
            query_param("starting_date", "Starting date for metrics range (YYYY-MM-DD format)", OpenApiTypes.DATE),
            query_param("ending_date", "Ending date for metrics range (YYYY-MM-DD format)", OpenApiTypes.DATE),
            USER_ID, DB_ID, TABLE,
            query_param("aggregation_period", "daily rows (default) or monthly ones (this server's extension)", enum=AggregationPeriod.values),
        ],
        responses={200: MetricsResponseOut, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        self.check_db_selector(params)
        starting, ending = _date(params, "starting_date"), _date(params, "ending_date")
        if starting and ending and starting > ending:
            raise BadRequest("starting_date must not be after ending_date")
        period = choice(params, "aggregation_period", AggregationPeriod.values, default=AggregationPeriod.DAILY)
        rows, updated = metrics_list(
            user=self.principal.read_scope(params.get("user_id") or None), starting_date=starting, ending_date=ending, aggregation_period=period,
        )
        return Response({"metrics": [render_row(row) for row in rows], "updated_at": iso_z(updated)})


class MetricsRefreshView(MetricsAPIView):
    @extend_schema(
        operation_id="refresh_metrics",
        tags=TAGS,
        parameters=[
            DB_ID, TABLE, USER_ID,
            query_param("background", "Run the refresh in the background and return 202 immediately", OpenApiTypes.BOOL, default=False),
        ],
        request=None,
        responses={
            200: OpenApiResponse(DayAggregatedMetricsOut(many=True), description="The rows the refresh wrote"),
            202: MetricsRefreshResponseOut,
            409: ErrorOut, 429: ErrorOut, **ERRORS,
        },
    )
    def post(self, request: Request) -> Response:
        params = request.query_params
        self.check_db_selector(params)
        background = boolean(params, "background", False)
        # What the caller may recompute: an admin everything, anyone else their own rows.
        scope = RefreshScope.of(self.principal.read_scope())
        if background:
            try:
                metrics_refresh_enqueue(scope=scope)
            except RefreshAlreadyRunning:
                return Response({"status": "already_running", "message": ALREADY_RUNNING}, status=202)
            return Response({"status": "started", "message": "Metrics refresh started in background"}, status=202)
        try:
            written = metrics_refresh_run(scope=scope)
        except RefreshAlreadyRunning:
            raise Conflict(ALREADY_RUNNING) from None
        wanted = self.principal.read_scope(params.get("user_id") or None)
        rows = [
            row for row in written
            if row.aggregation_period == AggregationPeriod.DAILY and (not isinstance(wanted, str) or row.user_id == wanted)
        ]
        rows.sort(key=lambda row: (row.date, row.user_id or ""))
        return Response([render_row(row) for row in rows])


class MetricsRefreshStatusView(MetricsAPIView):
    @extend_schema(
        operation_id="get_metrics_refresh_status",
        tags=TAGS,
        parameters=[DB_ID, TABLE],
        responses={200: MetricsRefreshStatusOut, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        self.check_db_selector(request.query_params)
        return Response(render_status(refresh_status(scope=RefreshScope.of(self.principal.read_scope()))))
