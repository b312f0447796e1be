"""Traces in AgentOS's shapes (``agno.os.routers.traces.schemas``): TraceSummary, TraceDetail with
its tree of TraceNode, TraceSessionStats. Times are ISO 8601, durations "150ms" / "1.50s"."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from ..models import Span, Trace


def iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def duration(ms: float | None) -> str:
    """Agno's ``format_duration_ms``."""
    if ms is None or ms < 1000:
        return f"{int(ms or 0)}ms"
    return f"{ms / 1000:.2f}s"


def summary(trace: Trace) -> dict[str, Any]:
    return {
        "trace_id": trace.trace_id, "name": trace.name, "status": trace.status, "duration": duration(trace.duration_ms),
        "start_time": iso(trace.start_time), "end_time": iso(trace.end_time), "total_spans": trace.total_spans,
        "error_count": trace.error_count, "input": trace.input or None, "run_id": trace.run_id or None,
        "session_id": trace.session_id or None, "user_id": trace.user_id, "agent_id": trace.agent_id or None,
        "team_id": trace.team_id or None, "workflow_id": trace.workflow_id or None, "created_at": iso(trace.created_at),
    }


def detail(trace: Trace, spans: list[Span]) -> dict[str, Any]:
    return {**summary(trace), "output": trace.output or None, "error": trace.error or None, "tree": tree(spans)}


_METADATA_KEYS = {
    "agno.run.id": "run_id", "llm.model_name": "model", "llm.provider": "provider", "llm.token_count.prompt": "input_tokens",
    "llm.token_count.completion": "output_tokens", "llm.token_count.total": "total_tokens", "llm.time_to_first_token": "time_to_first_token",
    "tool.name": "tool_name", "tool.parameters": "parameters", "session.id": "session_id", "user.id": "user_id",
    "agno.agent.id": "agent_id", "agno.team.id": "team_id", "agno.workflow.id": "workflow_id", "agno.step.id": "step_id",
    "agno.step.index": "step_index", "agno.loop.iteration": "iteration", "agno.run.status": "run_status",
}


def node(span: Span, children: list[dict[str, Any]] | None) -> dict[str, Any]:
    attributes = span.attributes or {}
    metadata = {label: attributes[key] for key, label in _METADATA_KEYS.items() if attributes.get(key) not in (None, "")}
    if span.user_id:
        metadata["user_id"] = span.user_id
    error = span.status_message or None if span.status == "ERROR" else None
    return {
        "id": span.span_id, "name": span.name, "type": span.span_type, "duration": duration(span.duration_ms),
        "start_time": iso(span.start_time), "end_time": iso(span.end_time), "status": span.status,
        "input": attributes.get("input.value") or None, "output": None if error else attributes.get("output.value") or None,
        "error": error, "spans": children or None, "step_type": span.step_type or None, "metadata": metadata or None,
        "extra_data": {"duration_ms": round(span.duration_ms, 3), "parent_id": span.parent_span_id or None},
    }


def tree(spans: list[Span]) -> list[dict[str, Any]]:
    """Root spans with their children nested, each level in start order."""
    by_parent: dict[str, list[Span]] = {}
    known = {span.span_id for span in spans}
    for span in spans:
        parent = span.parent_span_id if span.parent_span_id in known else ""
        by_parent.setdefault(parent, []).append(span)

    def build(parent: str) -> list[dict[str, Any]]:
        return [node(span, build(span.span_id)) for span in by_parent.get(parent, [])]

    return build("")


def subtree(spans: list[Span], span_id: str) -> dict[str, Any] | None:
    """One span and everything under it."""
    target = next((span for span in spans if span.span_id == span_id), None)
    if target is None:
        return None
    under = {span_id}
    chosen = [target]
    for span in spans:  # start order: a parent comes before its children
        if span.parent_span_id in under and span.span_id not in under:
            under.add(span.span_id)
            chosen.append(span)
    roots = tree(chosen)  # the target's parent is not among them: it is the root
    return next((item for item in roots if item["id"] == span_id), None)


def session_row(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "session_id": row["session_id"], "user_id": row["user"], "agent_id": row["agent"] or None, "team_id": row["team"] or None,
        "workflow_id": row["workflow"] or None, "total_traces": row["total_traces"], "first_trace_at": iso(row["first_trace_at"]),
        "last_trace_at": iso(row["last_trace_at"]),
    }
