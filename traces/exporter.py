"""OpenTelemetry spans to the trace and span tables, owned by the run's user.

A batch holds spans of several traces; each trace's row is written (or updated: a paused run
continued later adds spans to its trace) with its spans in one transaction.
"""
from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from django.db import connections, transaction

logger = logging.getLogger("agno_site.traces")

_TYPES = {"LLM": "LLM", "TOOL": "TOOL", "CHAIN": "CHAIN", "AGENT": "AGENT"}


def _when(nanos: int) -> datetime:
    return datetime.fromtimestamp(nanos / 1e9, tz=timezone.utc)


def span_type(attributes: dict[str, Any]) -> str:
    """AgentOS's span types: AGENT, TEAM, WORKFLOW, LLM, TOOL, and STEP for a workflow's steps."""
    kind = attributes.get("openinference.span.kind", "")
    if kind == "AGENT":
        return "TEAM" if attributes.get("agno.team.id") else "AGENT"
    if kind == "CHAIN":
        if attributes.get("agno.workflow.id"):
            return "WORKFLOW"
        return "STEP" if attributes.get("agno.step.type") else "CHAIN"
    return _TYPES.get(kind, kind or "UNKNOWN")


class DatabaseSpanExporter:
    """An OpenTelemetry ``SpanExporter`` (duck-typed) writing to ``traces.models``."""

    def export(self, spans: Sequence[Any]) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        try:
            by_trace: dict[str, list[Any]] = defaultdict(list)
            for span in spans:
                by_trace[format(span.context.trace_id, "032x")].append(span)
            for trace_id, members in by_trace.items():
                self._write(trace_id, members)
            return SpanExportResult.SUCCESS
        except Exception:
            logger.exception("writing %d spans failed", len(spans))
            return SpanExportResult.FAILURE
        finally:
            connections.close_all()  # the batch thread holds no connection between batches

    def shutdown(self) -> None:
        """Nothing held between batches."""

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    def _write(self, trace_id: str, spans: list[Any]) -> None:
        from core.tenancy import scope_queryset

        from .models import Span, Trace

        owner = spans[0].attributes.get("user.id") or None
        rows = [
            Span(
                user_id=owner, trace_id=trace_id, span_id=format(span.context.span_id, "016x"),
                parent_span_id=format(span.parent.span_id, "016x") if span.parent is not None else "",
                name=span.name[:255], span_type=span_type(dict(span.attributes)), step_type=str(span.attributes.get("agno.step.type") or "")[:32],
                status="ERROR" if span.status.status_code.name == "ERROR" else "OK", status_message=span.status.description or "",
                start_time=_when(span.start_time), end_time=_when(span.end_time), duration_ms=(span.end_time - span.start_time) / 1e6,
                run_id=str(span.attributes.get("agno.run.id") or "")[:64], attributes=dict(span.attributes),
            )
            for span in spans
        ]
        root = next((row for row in rows if not row.parent_span_id), None)
        with transaction.atomic():
            traces = scope_queryset(Trace.objects, owner)
            trace = traces.filter(pk=trace_id).first()
            if trace is None:
                if root is None:
                    raise ValueError(f"spans of trace {trace_id} arrived before its root")
                trace = _trace_from_root(trace_id, owner, root)
            Span.objects.bulk_create(rows)
            _totals(trace, rows)
            trace.save()


def _trace_from_root(trace_id: str, owner: str | None, root: Any) -> Any:
    from .models import Trace

    attributes = root.attributes
    kind = root.span_type
    return Trace(
        trace_id=trace_id, user_id=owner, run_id=root.run_id, session_id=str(attributes.get("session.id") or ""),
        name=root.name, status=root.status, start_time=root.start_time, end_time=root.end_time, duration_ms=root.duration_ms,
        input=str(attributes.get("input.value") or ""), output=str(attributes.get("output.value") or ""),
        error=root.status_message if root.status == "ERROR" else "",
        agent_id=str(attributes.get("agno.agent.id") or "") if kind == "AGENT" else "",
        team_id=str(attributes.get("agno.team.id") or "") if kind == "TEAM" else "",
        workflow_id=str(attributes.get("agno.workflow.id") or "") if kind == "WORKFLOW" else "",
        created_at=root.start_time,
    )


def _totals(trace: Any, rows: list[Any]) -> None:
    trace.total_spans += len(rows)
    trace.error_count += sum(1 for row in rows if row.status == "ERROR")
    trace.start_time = min([trace.start_time, *(row.start_time for row in rows)])
    trace.end_time = max([trace.end_time, *(row.end_time for row in rows)])
    trace.duration_ms = (trace.end_time - trace.start_time).total_seconds() * 1000
    root = next((row for row in rows if not row.parent_span_id), None)
    if root is not None and trace.total_spans > len(rows):  # a continued run's later part: its end is the trace's
        trace.status, trace.output = root.status, str(root.attributes.get("output.value") or trace.output)
        trace.error = root.status_message if root.status == "ERROR" else ""
    if any(row.status == "ERROR" for row in rows if not row.parent_span_id):
        trace.status = "ERROR"
