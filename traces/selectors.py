"""Reading traces: lists with filters, one trace's span tree, per-session stats, and AgentOS's
filter expressions (``{"op": "EQ", "key": "status", "value": "OK"}``, ``AND`` / ``OR`` / ``NOT``
of such) turned into one query. Every read is scoped to the caller (``core.tenancy``)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, Max, Min, Q, QuerySet

from core.querysets import window
from core.tenancy import scope_queryset

from .models import Span, Trace

# key -> (model field, kind); kinds: text, number, datetime, enum
FILTER_FIELDS: dict[str, tuple[str, str]] = {
    "status": ("status", "enum"),
    "user_id": ("user_id", "text"),
    "agent_id": ("agent_id", "text"),
    "team_id": ("team_id", "text"),
    "workflow_id": ("workflow_id", "text"),
    "session_id": ("session_id", "text"),
    "run_id": ("run_id", "text"),
    "name": ("name", "text"),
    "trace_id": ("trace_id", "text"),
    "duration_ms": ("duration_ms", "number"),
    "start_time": ("start_time", "datetime"),
    "end_time": ("end_time", "datetime"),
    "created_at": ("created_at", "datetime"),
}
OPERATORS = {"EQ", "NEQ", "GT", "GTE", "LT", "LTE", "IN", "CONTAINS", "STARTSWITH"}
STATUSES = ("OK", "ERROR")


class FilterError(ValueError):
    """A filter expression that cannot be applied: says which part and why."""


@dataclass(frozen=True)
class TraceFilters:
    run_id: str | None = None
    session_id: str | None = None
    agent_id: str | None = None
    team_id: str | None = None
    workflow_id: str | None = None
    status: str | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None


def _filtered(user: Any, filters: TraceFilters) -> QuerySet:
    traces = scope_queryset(Trace.objects, user)
    for name in ("run_id", "session_id", "agent_id", "team_id", "workflow_id", "status"):
        value = getattr(filters, name)
        if value:
            traces = traces.filter(**{name: value})
    if filters.start_time is not None:
        traces = traces.filter(start_time__gte=filters.start_time)
    if filters.end_time is not None:
        traces = traces.filter(end_time__lte=filters.end_time)
    return traces


def trace_list(*, user: Any, filters: TraceFilters, offset: int, limit: int, expression: Q | None = None) -> tuple[list[Trace], int]:
    traces = _filtered(user, filters)
    if expression is not None:
        traces = traces.filter(expression)
    return window(traces.order_by("-start_time", "trace_id"), offset=offset, limit=limit), traces.count()


def trace_get(*, user: Any, trace_id: str, run_id: str | None = None) -> Trace:
    traces = scope_queryset(Trace.objects, user).filter(pk=trace_id)
    if run_id:
        traces = traces.filter(run_id=run_id)
    return traces.get()


def trace_spans(*, user: Any, traces: list[Trace]) -> dict[str, list[Span]]:
    """Every span of these traces, by trace id, in start order (one query)."""
    found: dict[str, list[Span]] = {trace.pk: [] for trace in traces}
    if not traces:
        return found
    for span in scope_queryset(Span.objects, user).filter(trace_id__in=list(found)).order_by("start_time", "id"):
        found[span.trace_id].append(span)
    return found


def session_stats(*, user: Any, filters: TraceFilters, offset: int, limit: int, expression: Q | None = None) -> tuple[list[dict[str, Any]], int]:
    traces = _filtered(user, filters)
    if expression is not None:
        traces = traces.filter(expression)
    grouped = (
        traces.exclude(session_id="").values("session_id")
        .annotate(
            total_traces=Count("trace_id"), first_trace_at=Min("start_time"), last_trace_at=Max("start_time"),
            user=Max("user_id"), agent=Max("agent_id"), team=Max("team_id"), workflow=Max("workflow_id"),
        )
        .order_by("-last_trace_at", "session_id")
    )
    total = grouped.count()
    return window(grouped, offset=offset, limit=limit), total


def filter_expression(expression: Any, *, where: str = "filter") -> Q:
    """AgentOS's FilterExpr dict as a query condition."""
    if not isinstance(expression, dict):
        raise FilterError(f"{where} must be an object with an 'op'")
    op = str(expression.get("op") or "").upper()
    if op in ("AND", "OR"):
        conditions = expression.get("conditions")
        if not isinstance(conditions, list) or not conditions:
            raise FilterError(f"{where}: {op} needs a non-empty 'conditions' list")
        parts = [filter_expression(item, where=f"{where}.conditions[{n}]") for n, item in enumerate(conditions)]
        combined = parts[0]
        for part in parts[1:]:
            combined = combined & part if op == "AND" else combined | part
        return combined
    if op == "NOT":
        inner = expression.get("condition") or expression.get("expression")
        return ~filter_expression(inner, where=f"{where}.condition")
    if op not in OPERATORS:
        raise FilterError(f"{where}: unknown operator {op or None!r}; operators: {', '.join(sorted(OPERATORS | {'AND', 'OR', 'NOT'}))}")
    key = expression.get("key")
    if key not in FILTER_FIELDS:
        raise FilterError(f"{where}: unknown key {key!r}; keys: {', '.join(FILTER_FIELDS)}")
    field, kind = FILTER_FIELDS[key]
    if op == "IN":
        values = expression.get("values")
        if not isinstance(values, list):
            raise FilterError(f"{where}: IN needs a 'values' list")
        return Q(**{f"{field}__in": [_value(kind, value, where) for value in values]})
    value = _value(kind, expression.get("value"), where)
    lookups = {"EQ": "", "NEQ": "", "GT": "__gt", "GTE": "__gte", "LT": "__lt", "LTE": "__lte", "CONTAINS": "__icontains", "STARTSWITH": "__istartswith"}
    if op in ("CONTAINS", "STARTSWITH") and kind != "text":
        raise FilterError(f"{where}: {op} applies to text keys, not {key}")
    condition = Q(**{f"{field}{lookups[op]}": value})
    return ~condition if op == "NEQ" else condition


def _value(kind: str, value: Any, where: str) -> Any:
    if kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FilterError(f"{where}: the value must be a number")
        return value
    if kind == "datetime":
        parsed = parse_time(value) if isinstance(value, str) else None
        if parsed is None:
            raise FilterError(f"{where}: the value must be an ISO 8601 date-time")
        return parsed
    if not isinstance(value, str):
        raise FilterError(f"{where}: the value must be a string")
    if kind == "enum" and value.upper() not in STATUSES:
        raise FilterError(f"{where}: status is one of {', '.join(STATUSES)}")
    return value.upper() if kind == "enum" else value


def parse_time(text: str) -> datetime | None:
    """An ISO 8601 date-time (``Z`` allowed); naive ones are UTC."""
    from datetime import timezone

    try:
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=timezone.utc)
