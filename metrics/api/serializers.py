"""The /metrics bodies in AgentOS's shapes (``DayAggregatedMetrics``, ``MetricsResponse``,
``MetricsRefreshResponse``, ``MetricsRefreshStatusResponse``), plus this server's extensions on
each row (its owner, period, errors, cost, latency and per-agent counts)."""
from __future__ import annotations

from typing import Any

from rest_framework import serializers

from sessions.api.serializers.common import IsoZDateTimeField, ObjectField, ObjectListField, iso_z, output, render

from ..models import MetricsAggregate
from ..selectors import RefreshStatusView


class DayAggregatedMetricsOut(serializers.Serializer):
    id = serializers.CharField()
    agent_runs_count = serializers.IntegerField(min_value=0)
    agent_sessions_count = serializers.IntegerField(min_value=0)
    team_runs_count = serializers.IntegerField(min_value=0)
    team_sessions_count = serializers.IntegerField(min_value=0)
    workflow_runs_count = serializers.IntegerField(min_value=0)
    workflow_sessions_count = serializers.IntegerField(min_value=0)
    users_count = serializers.IntegerField(min_value=0)
    token_metrics = ObjectField()
    model_metrics = ObjectListField()
    date = IsoZDateTimeField()
    created_at = IsoZDateTimeField()
    updated_at = IsoZDateTimeField()
    # Extensions: None is the shared bucket (sessions without a user).
    user_id = output(serializers.CharField())
    aggregation_period = serializers.CharField()
    errors_count = serializers.IntegerField(min_value=0)
    cost = output(serializers.FloatField())
    duration_p50 = output(serializers.FloatField(help_text="Median run duration, seconds (top-level runs)"))
    duration_p95 = output(serializers.FloatField(help_text="95th percentile run duration, seconds"))
    component_metrics = ObjectListField(help_text="Runs, errors and tokens per agent, team or workflow")
    time_zone = serializers.CharField(help_text="The time zone the day was cut in (METRICS_TIMEZONE)")
    completed = serializers.BooleanField(help_text="The period is over")


class MetricsResponseOut(serializers.Serializer):
    metrics = DayAggregatedMetricsOut(many=True)
    updated_at = output(IsoZDateTimeField())


class MetricsRefreshResponseOut(serializers.Serializer):
    status = serializers.CharField()
    message = output(serializers.CharField())


class MetricsRefreshStatusOut(serializers.Serializer):
    status = serializers.ChoiceField(choices=["idle", "running", "completed", "failed"])
    started_at = output(IsoZDateTimeField())
    finished_at = output(IsoZDateTimeField())
    error = output(serializers.CharField())


def render_row(row: MetricsAggregate) -> dict[str, Any]:
    data = {name: getattr(row, name) for name in DayAggregatedMetricsOut._declared_fields if name != "date"}
    out = render(DayAggregatedMetricsOut, {**data, "date": None})
    out["date"] = f"{row.date.isoformat()}T00:00:00Z"
    return out


def render_status(status: RefreshStatusView) -> dict[str, Any]:
    return {"status": status.status, "started_at": iso_z(status.started_at), "finished_at": iso_z(status.finished_at), "error": status.error}
