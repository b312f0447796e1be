"""The /schedules bodies, in AgentOS 3.1.10's shapes (``agno.os.routers.schedules.schema``):
timestamps as epoch seconds, explicit nulls."""
from __future__ import annotations

from typing import Any

from rest_framework import serializers

from core.api.schema import PaginationInfoOut
from sessions.api.serializers.common import JSONObjectIn, ObjectField, ObjectListField, Text, render
from sessions.api.serializers.common import output as nullable

from ..models import Schedule, ScheduleRun


def _int(low: int, high: int, **kwargs: Any) -> serializers.IntegerField:
    return serializers.IntegerField(min_value=low, max_value=high, **kwargs)


class ScheduleCreateIn(serializers.Serializer):
    """``ScheduleCreate``."""

    name = Text(max_length=255, error_messages={"required": "Field required"})
    cron_expr = Text(max_length=128, required=False, default="", help_text="An empty or omitted cron makes the schedule on demand; it runs only through trigger.")
    endpoint = Text(max_length=512, error_messages={"required": "Field required"}, help_text="The run route it calls: /agents/<id>/runs, /teams/<id>/runs or /workflows/<id>/runs.")
    method = Text(max_length=10, required=False, default="POST")
    description = Text(max_length=1024, required=False, allow_null=True)
    payload = JSONObjectIn(required=False, allow_null=True, help_text='The run route\'s form fields, e.g. {"message": "Summarise my inbox"}.')
    timezone = Text(max_length=64, required=False, default="UTC")
    timeout_seconds = _int(1, 86400, required=False, default=3600)
    max_retries = _int(0, 10, required=False, default=0)
    retry_delay_seconds = _int(1, 3600, required=False, default=60)


class ScheduleUpdateIn(serializers.Serializer):
    """``ScheduleUpdate``, and the rest of v3's allow-list (``enabled``, ``next_run_at`` as epoch
    seconds, ``disabled_reason``). Any other key is a 422 naming it."""

    name = Text(max_length=255, required=False, allow_null=True)
    cron_expr = Text(max_length=128, required=False, allow_null=True, help_text="An empty cron makes the schedule on demand; it runs only through trigger. Omit to keep the current cron.")
    endpoint = Text(max_length=512, required=False, allow_null=True)
    method = Text(max_length=10, required=False, allow_null=True)
    description = Text(max_length=1024, required=False, allow_null=True)
    payload = JSONObjectIn(required=False, allow_null=True)
    timezone = Text(max_length=64, required=False, allow_null=True)
    timeout_seconds = _int(1, 86400, required=False, allow_null=True)
    max_retries = _int(0, 10, required=False, allow_null=True)
    retry_delay_seconds = _int(1, 3600, required=False, allow_null=True)
    enabled = serializers.BooleanField(required=False, allow_null=True)
    next_run_at = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=253402300799)
    disabled_reason = Text(max_length=1024, required=False, allow_null=True)

    # A null leaves these as they are (they cannot be null); the others may be cleared.
    KEPT_WHEN_NULL = ("name", "cron_expr", "endpoint", "method", "timezone", "timeout_seconds", "max_retries", "retry_delay_seconds", "enabled")


class ScheduleOut(serializers.Serializer):
    """``ScheduleResponse``."""

    id = serializers.CharField()
    user_id = nullable(serializers.CharField())
    name = serializers.CharField()
    description = nullable(serializers.CharField())
    method = serializers.CharField()
    endpoint = serializers.CharField()
    payload = nullable(ObjectField())
    cron_expr = nullable(serializers.CharField())
    timezone = serializers.CharField()
    timeout_seconds = serializers.IntegerField()
    max_retries = serializers.IntegerField()
    retry_delay_seconds = serializers.IntegerField()
    enabled = serializers.BooleanField()
    next_run_at = nullable(serializers.IntegerField())
    managed_by = nullable(serializers.CharField())
    target_type = nullable(serializers.CharField())
    target_id = nullable(serializers.CharField())
    disabled_reason = nullable(serializers.CharField())
    created_at = nullable(serializers.IntegerField())
    updated_at = nullable(serializers.IntegerField())


class ScheduleStateOut(serializers.Serializer):
    """``ScheduleStateResponse``: enable/disable's trimmed answer."""

    id = serializers.CharField()
    name = serializers.CharField()
    enabled = serializers.BooleanField()
    next_run_at = nullable(serializers.IntegerField())
    updated_at = nullable(serializers.IntegerField())


class ScheduleRunOut(serializers.Serializer):
    """``ScheduleRunResponse``."""

    id = serializers.CharField()
    schedule_id = serializers.CharField()
    user_id = nullable(serializers.CharField())
    attempt = serializers.IntegerField()
    # Beside AgentOS's fields: the tick the fire is for (a trigger's: when it was asked for).
    scheduled_for = nullable(serializers.IntegerField())
    triggered_at = nullable(serializers.IntegerField())
    completed_at = nullable(serializers.IntegerField())
    status = serializers.CharField()
    status_code = nullable(serializers.IntegerField())
    run_id = nullable(serializers.CharField())
    session_id = nullable(serializers.CharField())
    error = nullable(serializers.CharField())
    input = nullable(ObjectField())
    output = nullable(ObjectField())
    requirements = nullable(ObjectListField())
    created_at = nullable(serializers.IntegerField())


class PaginatedSchedulesOut(serializers.Serializer):
    data = ScheduleOut(many=True)
    meta = PaginationInfoOut()


class PaginatedScheduleRunsOut(serializers.Serializer):
    data = ScheduleRunOut(many=True)
    meta = PaginationInfoOut()


def epoch(value: Any) -> int | None:
    return int(value.timestamp()) if value is not None else None


def render_schedule(schedule: Schedule) -> dict[str, Any]:
    return render(ScheduleOut, {
        "id": schedule.pk, "user_id": schedule.user_id, "name": schedule.name, "description": schedule.description,
        "method": schedule.method, "endpoint": schedule.endpoint, "payload": schedule.payload, "cron_expr": schedule.cron_expr,
        "timezone": schedule.timezone, "timeout_seconds": schedule.timeout_seconds, "max_retries": schedule.max_retries,
        "retry_delay_seconds": schedule.retry_delay_seconds, "enabled": schedule.enabled, "next_run_at": epoch(schedule.next_run_at),
        "managed_by": schedule.managed_by, "target_type": schedule.target_type, "target_id": schedule.target_id,
        "disabled_reason": schedule.disabled_reason, "created_at": epoch(schedule.created_at), "updated_at": epoch(schedule.updated_at),
    })


def render_state(schedule: Schedule) -> dict[str, Any]:
    return render(ScheduleStateOut, {
        "id": schedule.pk, "name": schedule.name, "enabled": schedule.enabled, "next_run_at": epoch(schedule.next_run_at),
        "updated_at": epoch(schedule.updated_at),
    })


def render_schedule_run(run: ScheduleRun) -> dict[str, Any]:
    return render(ScheduleRunOut, {
        "id": run.pk, "schedule_id": run.schedule_id, "user_id": run.user_id, "attempt": run.attempt,
        "scheduled_for": epoch(run.scheduled_for), "triggered_at": epoch(run.triggered_at), "completed_at": epoch(run.completed_at), "status": run.status,
        "status_code": run.status_code, "run_id": run.run_id, "session_id": run.session_id, "error": run.error,
        "input": run.input, "output": run.output, "requirements": run.requirements, "created_at": epoch(run.created_at),
    })
