"""Traces of runs: one trace per top-level run, its spans (the run, model calls, tool calls,
member runs, workflow steps) in a tree. Written by the span exporter (``traces.exporter``) from
OpenTelemetry spans, owned by the run's user."""
from __future__ import annotations

from django.db import models

from core.tenancy import OwnedModel


class Trace(OwnedModel):
    # Indexed by the indexes below, which lead with it: a single-column index of its own would be
    # one more to update for every trace written (bench/README.md, what tracing costs a run).
    user_id = models.CharField(max_length=255, null=True, blank=True)
    trace_id = models.CharField(max_length=32, primary_key=True)
    run_id = models.CharField(max_length=64, db_index=True)
    session_id = models.CharField(max_length=255, blank=True, default="")
    name = models.CharField(max_length=255)
    status = models.CharField(max_length=8, default="OK")  # OK | ERROR
    start_time = models.DateTimeField()
    end_time = models.DateTimeField()
    duration_ms = models.FloatField(default=0.0)
    total_spans = models.PositiveIntegerField(default=0)
    error_count = models.PositiveIntegerField(default=0)
    input = models.TextField(blank=True, default="")
    output = models.TextField(blank=True, default="")
    error = models.TextField(blank=True, default="")
    agent_id = models.CharField(max_length=255, blank=True, default="")
    team_id = models.CharField(max_length=255, blank=True, default="")
    workflow_id = models.CharField(max_length=255, blank=True, default="")
    created_at = models.DateTimeField()

    class Meta:
        db_table = "traces"
        indexes = [
            models.Index(fields=["user_id", "-start_time"], name="trace_user_start"),
            models.Index(fields=["user_id", "session_id", "-start_time"], name="trace_user_session"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.trace_id})"


class Span(OwnedModel):
    # A run writes four spans or more, each row updating every index of the table: the one
    # unique index, which leads with the owner, serves the reads (a trace's spans, for its owner).
    user_id = models.CharField(max_length=255, null=True, blank=True)
    id = models.BigAutoField(primary_key=True)
    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="spans", db_constraint=False, db_index=False)
    span_id = models.CharField(max_length=16)
    parent_span_id = models.CharField(max_length=16, blank=True, default="")
    name = models.CharField(max_length=255)
    span_type = models.CharField(max_length=16)  # AGENT | TEAM | WORKFLOW | LLM | TOOL | STEP | CHAIN
    step_type = models.CharField(max_length=32, blank=True, default="")
    status = models.CharField(max_length=8, default="OK")
    status_message = models.TextField(blank=True, default="")
    start_time = models.DateTimeField()
    end_time = models.DateTimeField()
    duration_ms = models.FloatField(default=0.0)
    run_id = models.CharField(max_length=64, blank=True, default="")
    attributes = models.JSONField(default=dict, blank=True)

    class Meta:
        db_table = "trace_spans"
        constraints = [models.UniqueConstraint(fields=["user_id", "trace", "span_id"], name="span_per_user_trace")]

    def __str__(self) -> str:
        return f"{self.name} ({self.span_id})"
