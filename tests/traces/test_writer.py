"""The trace tables' writer: whole trees in batches, owned by their run's user, and a bound on
what waits when the database does not keep up."""
from __future__ import annotations

import json

import pytest

from traces.exporter import DatabaseWriter
from traces.models import Span, Trace
from traces.tracing import RunTracer

# The writer writes on its own thread and connection: the test must see committed rows.
pytestmark = pytest.mark.django_db(transaction=True)


def sealed_tree(run_id: str, user_id: str | None) -> RunTracer:
    """A run with one tool call, sealed as at the run's end (ids given), not handed over."""
    tracer = RunTracer(run_id=run_id, user_id=user_id, session_id="s1", component_id="assistant", run_type="agent", input_text="add them")
    tracer.observe({"event": "RunStarted", "run_id": run_id, "agent_id": "assistant", "session_id": "s1"})
    tool = {"tool_call_id": "c1", "tool_name": "add", "tool_args": {"a": 1, "b": 2}}
    tracer.observe({"event": "ToolCallStarted", "run_id": run_id, "tool": tool})
    tracer.observe({"event": "ToolCallCompleted", "run_id": run_id, "tool": {**tool, "result": "3"}})
    assert tracer.seal()
    return tracer


def test_trees_are_written_whole_with_their_owner():
    writer = DatabaseWriter(delay_seconds=60)
    trees = [sealed_tree("run-a", "alice"), sealed_tree("run-b", None)]
    for tree in trees:
        writer.submit(tree)
    assert writer.flush()
    writer.shutdown()
    rows = {trace.run_id: trace for trace in Trace.all_users.all()}
    assert {run: (trace.user_id, trace.total_spans, trace.agent_id, trace.input) for run, trace in rows.items()} == {
        "run-a": ("alice", 2, "assistant", "add them"), "run-b": (None, 2, "assistant", "add them"),
    }
    for tree in trees:
        trace = rows[tree.run_id]
        assert trace.trace_id == format(tree.trace_id, "032x")
        spans = {span.name: span for span in Span.all_users.filter(trace_id=trace.pk)}
        assert set(spans) == {"Agent.run", "add"} and {span.user_id for span in spans.values()} == {tree.user_id}
        assert spans["add"].parent_span_id == spans["Agent.run"].span_id == format(tree.spans[0].span_id, "016x")
        assert json.loads(spans["add"].attributes["tool.parameters"]) == {"a": 1, "b": 2}
        assert spans["add"].start_time >= spans["Agent.run"].start_time == trace.start_time


def test_a_tree_that_finds_too_many_spans_waiting_is_dropped():
    writer = DatabaseWriter(delay_seconds=60, max_pending_spans=4)  # two trees of two spans
    for index in range(3):
        writer.submit(sealed_tree(f"run-{index}", "alice"))
    assert writer.dropped == 1
    assert writer.flush()
    writer.shutdown()
    assert sorted(Trace.all_users.values_list("run_id", flat=True)) == ["run-0", "run-1"]
