"""Traces in the admin: the list of runs' traces, and a trace's page drawing its spans as a
waterfall (Chart.js, served by the project) with each span's details below."""
from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from core.admin import OwnedModelAdmin, UserIdFilter
from sessions.admin import register_run_link
from sessions.models import Run

from .api.render import duration
from .models import Span, Trace
from .waterfall import ordered, waterfall


@admin.register(Trace)
class TraceAdmin(OwnedModelAdmin):
    change_form_template = "admin/traces/trace/change_form.html"
    list_display = ("name", "user_id", "component", "status", "took", "total_spans", "error_count", "start_time", "run_link")
    list_filter = ("status", UserIdFilter)
    search_fields = ("trace_id", "run_id", "session_id", "agent_id", "team_id", "workflow_id")
    ordering = ("-start_time",)
    readonly_fields = (
        "trace_id", "name", "user_id", "run_link", "session_id", "agent_id", "team_id", "workflow_id", "status", "took",
        "start_time", "end_time", "total_spans", "error_count", "input", "output", "error",
    )
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="component")
    def component(self, trace: Trace) -> str:
        return trace.agent_id or trace.team_id or trace.workflow_id or "–"

    @admin.display(description="duration", ordering="duration_ms")
    def took(self, trace: Trace) -> str:
        return duration(trace.duration_ms)

    @admin.display(description="run")
    def run_link(self, trace: Trace) -> str:
        if not trace.run_id:
            return "–"
        return format_html('<a href="{}">{}</a>', reverse("admin:agno_sessions_run_change", args=[trace.run_id]), trace.run_id)

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict | None = None):
        trace = self.get_object(request, object_id)
        extra = dict(extra_context or {})
        if trace is not None:
            # With the owner: the spans' one index leads with it.
            spans = list(Span.all_users.filter(user_id=trace.user_id, trace_id=trace.pk).order_by("start_time", "id"))
            extra["waterfall"] = waterfall(trace, spans)
            extra["spans"] = [{"span": span, "depth": depth, "took": duration(span.duration_ms)} for span, depth in ordered(spans)]
        return super().change_view(request, object_id, form_url, extra_context=extra)


@admin.register(Span)
class SpanAdmin(OwnedModelAdmin):
    """Every span, for an operator's search across traces (a trace's page shows its own)."""

    list_display = ("name", "span_type", "status", "took", "user_id", "run_id", "start_time", "trace_link")
    list_filter = ("span_type", "status", UserIdFilter)
    search_fields = ("span_id", "run_id", "name", "trace__trace_id")
    ordering = ("-start_time",)
    readonly_fields = (
        "trace_link", "span_id", "parent_span_id", "name", "span_type", "step_type", "status", "status_message", "user_id", "run_id",
        "start_time", "end_time", "took", "attributes",
    )
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="duration", ordering="duration_ms")
    def took(self, span: Span) -> str:
        return duration(span.duration_ms)

    @admin.display(description="trace")
    def trace_link(self, span: Span) -> str:
        return format_html('<a href="{}">{}</a>', reverse("admin:traces_trace_change", args=[span.trace_id]), span.trace_id)


@register_run_link
@admin.display(description="trace")
def trace_link(run: Run) -> str:
    """A run's page links its trace (the first, by start time), or says it was not traced."""
    trace = Trace.all_users.filter(run_id=run.pk).order_by("start_time").first()
    if trace is None:
        return "– (not traced)"
    return format_html('<a href="{}">{} · {} spans</a>', reverse("admin:traces_trace_change", args=[trace.pk]), trace.name, trace.total_spans)
