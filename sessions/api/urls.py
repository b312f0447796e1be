"""Routes of the /sessions and /memories families, at the site root (trailing slash optional)."""
from __future__ import annotations

from django.urls import re_path

from core.api.routing import route

from .export import SessionExportView
from .memories import (
    MemoriesView,
    MemoryDetailView,
    MemoryTopicsView,
    OptimizeMemoriesView,
    UserMemoryStatsView,
)
from .sessions import (
    SessionDetailView,
    SessionMediaView,
    SessionRenameView,
    SessionRunPreviewsView,
    SessionRunsView,
    SessionRunView,
    SessionsView,
)

urlpatterns = [
    route("sessions", SessionsView.as_view(), name="sessions"),
    route("sessions/{session_id}", SessionDetailView.as_view(), name="session-detail"),
    route("sessions/{session_id}/rename", SessionRenameView.as_view(), name="session-rename"),
    route("sessions/{session_id}/runs", SessionRunsView.as_view(), name="session-runs"),
    route("sessions/{session_id}/run-previews", SessionRunPreviewsView.as_view(), name="session-run-previews"),
    route("sessions/{session_id}/runs/{run_id}", SessionRunView.as_view(), name="session-run"),
    route("sessions/{session_id}/export/{export_format}", SessionExportView.as_view(), name="session-export"),
    # The storage key is a path: it may contain slashes.
    re_path(r"^sessions/(?P<session_id>[^/]+)/media/(?P<storage_key>.+)$", SessionMediaView.as_view(), name="session-media"),
    route("memories", MemoriesView.as_view(), name="memories"),
    route("memories/{memory_id}", MemoryDetailView.as_view(), name="memory-detail"),
    route("memory_topics", MemoryTopicsView.as_view(), name="memory-topics"),
    route("user_memory_stats", UserMemoryStatsView.as_view(), name="user-memory-stats"),
    route("optimize-memories", OptimizeMemoriesView.as_view(), name="optimize-memories"),
]
