"""Routes of the /traces family and /trace_session_stats (trailing slash optional);
``filter-schema`` and ``search`` come before ``{trace_id}``, as in AgentOS."""
from __future__ import annotations

from core.api.routing import route

from .views import FilterSchemaView, TraceDetailView, TraceSearchView, TraceSessionStatsView, TracesView

urlpatterns = [
    route("traces", TracesView.as_view(), name="traces"),
    route("traces/filter-schema", FilterSchemaView.as_view(), name="traces-filter-schema"),
    route("traces/search", TraceSearchView.as_view(), name="traces-search"),
    route("traces/{trace_id}", TraceDetailView.as_view(), name="trace-detail"),
    route("trace_session_stats", TraceSessionStatsView.as_view(), name="trace-session-stats"),
]
