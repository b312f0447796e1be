"""The /schedules family of the AgentOS API (agentos-api.md §8, "Schedules").

Every route works on the caller's own schedules (their read scope: under user isolation, only
theirs; another user's schedule is a 404, as a missing one). A new schedule belongs to the
caller, never to a body's claim. Writes go through scheduler.services, which keeps each
schedule's PeriodicTask in the same transaction.
"""
from __future__ import annotations

from datetime import datetime, timezone as dt_timezone
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.params import boolean, envelope, page
from core.api.schema import DetailOut, ErrorOut, query_param
from core.api.views import AgentOSView
from sessions.api.inputs import json_body

from ..selectors import owned_service_account, schedule_list, schedule_run_get, schedule_run_list
from ..services.firing import schedule_runs_settle, schedule_trigger
from ..services.schedules import (
    MUTABLE_COLUMNS,
    check_target,
    schedule_create,
    schedule_delete,
    schedule_disable,
    schedule_enable,
    schedule_get,
    endpoint_target,
    schedule_update,
)
from .serializers import (
    PaginatedScheduleRunsOut,
    PaginatedSchedulesOut,
    ScheduleCreateIn,
    ScheduleOut,
    ScheduleRunOut,
    ScheduleStateOut,
    ScheduleUpdateIn,
    render_schedule,
    render_schedule_run,
    render_state,
)

TAGS = ["Schedules"]
SCHEDULE_ID = OpenApiParameter("schedule_id", OpenApiTypes.STR, OpenApiParameter.PATH)
RUN_ID = OpenApiParameter("run_id", OpenApiTypes.STR, OpenApiParameter.PATH)
PAGING = [
    query_param("limit", "Items per page (1 to 1000)", OpenApiTypes.INT, default=100),
    query_param("page", "Page number, from 1 (needs limit)", OpenApiTypes.INT, default=1),
]
ERRORS = {401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 422: DetailOut}


class SchedulesAPIView(AgentOSView):
    scope_family = "schedules"

    # Routes on which the owner of a service account may name it (``?user_id=sa:<id>``): to see its
    # schedules and stop them, never to act as it.
    owner_of_account_methods: frozenset[str] = frozenset()

    @property
    def scope(self) -> Any:
        """Whose schedules: the caller's; an admin's ``?user_id=X``, X's only; a service account's
        owner's ``?user_id=sa:<id>`` (reads, disable, delete), that account's."""
        requested = self.request.query_params.get("user_id") or None
        if requested and self.request.method in self.owner_of_account_methods and requested != self.principal.user_id:
            account = owned_service_account(self.principal, requested)
            if account is not None:
                return account
        return self.principal.read_scope(requested)


def _changes(request: Request) -> dict[str, Any]:
    """The PATCH body: its allow-listed keys validated, any other key kept for the service to
    refuse by name (a 422 naming every rejected column)."""
    body = json_body(request, ScheduleUpdateIn)
    raw = request.data if isinstance(request.data, dict) else {}
    changes = {key: value for key, value in body.items() if value is not None or key not in ScheduleUpdateIn.KEPT_WHEN_NULL}
    if "next_run_at" in changes and changes["next_run_at"] is not None:
        changes["next_run_at"] = datetime.fromtimestamp(changes["next_run_at"], tz=dt_timezone.utc)
    changes.update({key: raw[key] for key in raw if key not in MUTABLE_COLUMNS})
    return changes


class SchedulesView(SchedulesAPIView):
    owner_of_account_methods = frozenset({"GET"})

    @extend_schema(
        operation_id="list_schedules_schedules_get",
        tags=TAGS,
        parameters=[query_param("enabled", "Only enabled (true) or disabled (false) schedules", OpenApiTypes.BOOL), *PAGING],
        responses={200: PaginatedSchedulesOut, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        window = page(params, default_limit=100, max_limit=1000)
        enabled = None if params.get("enabled") in (None, "") else boolean(params, "enabled", False)
        schedules, total = schedule_list(user=self.scope, enabled=enabled, offset=window.offset, limit=window.limit)
        return Response(envelope([render_schedule(schedule) for schedule in schedules], window, total))

    @extend_schema(
        operation_id="create_schedule_schedules_post",
        tags=TAGS,
        request=ScheduleCreateIn,
        responses={201: ScheduleOut, 409: ErrorOut, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        body = json_body(request, ScheduleCreateIn)
        schedule = schedule_create(
            owner_id=self.principal.owner(), principal=self.principal, name=body["name"], endpoint=body["endpoint"],
            cron_expr=body["cron_expr"], method=body["method"], description=body.get("description"), payload=body.get("payload"),
            timezone_name=body["timezone"], timeout_seconds=body["timeout_seconds"], max_retries=body["max_retries"],
            retry_delay_seconds=body["retry_delay_seconds"],
        )
        return Response(render_schedule(schedule), status=201)


class ScheduleDetailView(SchedulesAPIView):
    owner_of_account_methods = frozenset({"GET", "DELETE"})

    @extend_schema(operation_id="get_schedule_schedules__schedule_id__get", tags=TAGS, parameters=[SCHEDULE_ID], responses={200: ScheduleOut, **ERRORS})
    def get(self, request: Request, schedule_id: str) -> Response:
        return Response(render_schedule(schedule_get(user=self.scope, schedule_id=schedule_id)))

    @extend_schema(
        operation_id="update_schedule_schedules__schedule_id__patch",
        tags=TAGS,
        parameters=[SCHEDULE_ID],
        request=ScheduleUpdateIn,
        responses={200: ScheduleOut, 409: ErrorOut, **ERRORS},
    )
    def patch(self, request: Request, schedule_id: str) -> Response:
        schedule = schedule_update(user=self.scope, schedule_id=schedule_id, changes=_changes(request), principal=self.principal)
        return Response(render_schedule(schedule))

    @extend_schema(operation_id="delete_schedule_schedules__schedule_id__delete", tags=TAGS, parameters=[SCHEDULE_ID], request=None, responses={204: None, **ERRORS})
    def delete(self, request: Request, schedule_id: str) -> Response:
        schedule_delete(user=self.scope, schedule_id=schedule_id)
        return Response(status=204)


class ScheduleEnableView(SchedulesAPIView):
    @extend_schema(operation_id="enable_schedule_schedules__schedule_id__enable_post", tags=TAGS, parameters=[SCHEDULE_ID], request=None, responses={200: ScheduleStateOut, 409: ErrorOut, **ERRORS})
    def post(self, request: Request, schedule_id: str) -> Response:
        return Response(render_state(schedule_enable(user=self.scope, schedule_id=schedule_id, principal=self.principal)))


class ScheduleDisableView(SchedulesAPIView):
    owner_of_account_methods = frozenset({"POST"})

    @extend_schema(operation_id="disable_schedule_schedules__schedule_id__disable_post", tags=TAGS, parameters=[SCHEDULE_ID], request=None, responses={200: ScheduleStateOut, **ERRORS})
    def post(self, request: Request, schedule_id: str) -> Response:
        return Response(render_state(schedule_disable(user=self.scope, schedule_id=schedule_id)))


class ScheduleTriggerView(SchedulesAPIView):
    @extend_schema(
        operation_id="trigger_schedule_schedules__schedule_id__trigger_post",
        tags=TAGS,
        parameters=[SCHEDULE_ID],
        request=None,
        responses={200: ScheduleRunOut, 409: ErrorOut, **ERRORS},
    )
    def post(self, request: Request, schedule_id: str) -> Response:
        schedule = schedule_get(user=self.scope, schedule_id=schedule_id)
        # It runs as the owner: the caller must be allowed to run its target themselves (AgentOS).
        target = endpoint_target(schedule.endpoint)
        if target is not None:
            check_target(target, principal=self.principal)  # the one authority (agents.pipeline.authority)
        return Response(render_schedule_run(schedule_trigger(user=self.scope, schedule_id=schedule_id)))


class ScheduleRunsView(SchedulesAPIView):
    owner_of_account_methods = frozenset({"GET"})

    @extend_schema(operation_id="list_schedule_runs_schedules__schedule_id__runs_get", tags=TAGS, parameters=[SCHEDULE_ID, *PAGING], responses={200: PaginatedScheduleRunsOut, **ERRORS})
    def get(self, request: Request, schedule_id: str) -> Response:
        window = page(request.query_params, default_limit=100, max_limit=1000)
        schedule = schedule_get(user=self.scope, schedule_id=schedule_id)
        schedule_runs_settle(schedule_id=schedule.pk)  # statuses as of now, not as of the last sweep
        runs, total = schedule_run_list(user=self.scope, schedule_id=schedule.pk, offset=window.offset, limit=window.limit)
        return Response(envelope([render_schedule_run(run) for run in runs], window, total))


class ScheduleRunDetailView(SchedulesAPIView):
    owner_of_account_methods = frozenset({"GET"})

    @extend_schema(operation_id="get_schedule_run_schedules__schedule_id__runs__run_id__get", tags=TAGS, parameters=[SCHEDULE_ID, RUN_ID], responses={200: ScheduleRunOut, **ERRORS})
    def get(self, request: Request, schedule_id: str, run_id: str) -> Response:
        run = schedule_run_get(user=self.scope, schedule_id=schedule_id, run_id=run_id)
        if run.open:
            schedule_runs_settle(schedule_id=schedule_id)
            run = schedule_run_get(user=self.scope, schedule_id=schedule_id, run_id=run_id)
        return Response(render_schedule_run(run))

