"""A trace's spans in waterfall order: depth first, children in start order, each with its depth,
and the chart data the admin's and the chat's trace pages draw."""
from __future__ import annotations

from typing import Any

from .api.render import duration
from .models import Span, Trace


def ordered(spans: list[Span]) -> list[tuple[Span, int]]:
    """Depth-first, children in start order: the rows of the waterfall, each with its depth."""
    children: dict[str, list[Span]] = {}
    known = {span.span_id for span in spans}
    for span in spans:
        children.setdefault(span.parent_span_id if span.parent_span_id in known else "", []).append(span)
    out: list[tuple[Span, int]] = []

    def walk(parent: str, depth: int) -> None:
        for span in children.get(parent, []):
            out.append((span, depth))
            walk(span.span_id, depth + 1)

    walk("", 0)
    return out


def waterfall(trace: Trace, spans: list[Span]) -> dict[str, Any]:
    """What the trace page's chart draws: one bar per span, from its start to its end, in
    milliseconds since the trace began, labelled with its name indented by depth."""
    start = trace.start_time
    rows = ordered(spans)
    return {
        "labels": [("› " * depth) + span.name for span, depth in rows],
        "bars": [
            [round((span.start_time - start).total_seconds() * 1000, 3), round((span.end_time - start).total_seconds() * 1000, 3)]
            for span, _ in rows
        ],
        "types": [span.span_type for span, _ in rows],
        "statuses": [span.status for span, _ in rows],
        "durations": [duration(span.duration_ms) for span, _ in rows],
    }
