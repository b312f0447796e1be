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
# Attributes every span of a trace carries, kept in the trace's and span's own columns instead.
_IN_COLUMNS = frozenset({"user.id", "session.id", "agno.root_run.id", "openinference.span.kind"})


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
            self._write(spans)
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

    def _write(self, spans: Sequence[Any]) -> None:
        """A whole batch in one transaction and a handful of statements, however many traces it
        holds: the new traces inserted, the continued ones updated, every span inserted."""
        from core.tenancy import unscoped

        from .models import Span, Trace

        rows_by_trace: dict[str, list[Any]] = defaultdict(list)
        sessions: dict[str, str] = {}
        for span in spans:
            attributes = dict(span.attributes)
            trace_id = format(span.context.trace_id, "032x")
            sessions.setdefault(trace_id, str(attributes.get("session.id") or ""))
            rows_by_trace[trace_id].append(Span(
                user_id=attributes.get("user.id") or None, trace_id=trace_id, span_id=format(span.context.span_id, "016x"),
                parent_span_id=format(span.parent.span_id, "016x") if span.parent is not None else "",
                name=span.name[:255], span_type=span_type(attributes), step_type=str(attributes.get("agno.step.type") or "")[:32],
                status="ERROR" if span.status.status_code.name == "ERROR" else "OK", status_message=span.status.description or "",
                start_time=_when(span.start_time), end_time=_when(span.end_time), duration_ms=(span.end_time - span.start_time) / 1e6,
                run_id=str(attributes.get("agno.run.id") or "")[:64],
                attributes={key: value for key, value in attributes.items() if key not in _IN_COLUMNS},
            ))
        # The exporter writes every user's spans as they come (each row carries its owner).
        with transaction.atomic(), unscoped("the span exporter writes each trace under the owner its spans carry"):
            existing = {
                trace.pk: trace
                for trace in Trace.objects.unscoped("the span exporter continues traces of any user").filter(pk__in=list(rows_by_trace))
            }
            new, changed = [], []
            for trace_id, rows in rows_by_trace.items():
                trace = existing.get(trace_id)
                if trace is None:
                    root = next((row for row in rows if not row.parent_span_id), None)
                    if root is None:
                        logger.warning("spans of trace %s arrived without its root; dropped", trace_id)
                        rows.clear()
                        continue
                    trace = _trace_from_root(trace_id, root.user_id, root, sessions[trace_id])
                    _totals(trace, rows, continued=False)
                    new.append(trace)
                else:
                    _totals(trace, rows, continued=True)
                    changed.append(trace)
            Trace.objects.bulk_create(new)
            if changed:
                Trace.objects.unscoped("the span exporter continues traces of any user").bulk_update(
                    changed, ["status", "end_time", "start_time", "duration_ms", "total_spans", "error_count", "output", "error"],
                )
            Span.objects.bulk_create([row for rows in rows_by_trace.values() for row in rows], batch_size=500)


def _trace_from_root(trace_id: str, owner: str | None, root: Any, session_id: str) -> Any:
    from .models import Trace

    attributes = root.attributes
    kind = root.span_type
    return Trace(
        trace_id=trace_id, user_id=owner, run_id=root.run_id, session_id=session_id,
        name=root.name, status=root.status, start_time=root.start_time, end_time=root.end_time, duration_ms=root.duration_ms,
        input=str(attributes.get("input.value") or ""), output=str(attributes.get("output.value") or ""),
        error=root.status_message if root.status == "ERROR" else "",
        agent_id=str(attributes.get("agno.agent.id") or "") if kind == "AGENT" else "",
        team_id=str(attributes.get("agno.team.id") or "") if kind == "TEAM" else "",
        workflow_id=str(attributes.get("agno.workflow.id") or "") if kind == "WORKFLOW" else "",
        created_at=root.start_time,
    )


def _totals(trace: Any, rows: list[Any], *, continued: bool) -> None:
    trace.total_spans += len(rows)
    trace.error_count += sum(1 for row in rows if row.status == "ERROR")
    trace.start_time = min([trace.start_time, *(row.start_time for row in rows)])  # spans may come in several batches
    trace.end_time = max([trace.end_time, *(row.end_time for row in rows)])
    trace.duration_ms = (trace.end_time - trace.start_time).total_seconds() * 1000
    root = next((row for row in rows if not row.parent_span_id), None)
    if root is not None and continued:  # a continued run's later part: its end is the trace's
        trace.status, trace.output = root.status, str(root.attributes.get("output.value") or trace.output)
        trace.error = root.status_message if root.status == "ERROR" else ""
    if any(row.status == "ERROR" for row in rows if not row.parent_span_id):
        trace.status = "ERROR"
