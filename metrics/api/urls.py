"""Routes of the /metrics family, at the site root (trailing slash optional)."""
from __future__ import annotations

from core.api.routing import route

from .views import MetricsRefreshStatusView, MetricsRefreshView, MetricsView

urlpatterns = [
    route("metrics", MetricsView.as_view(), name="metrics"),
    route("metrics/refresh", MetricsRefreshView.as_view(), name="metrics-refresh"),
    route("metrics/refresh/status", MetricsRefreshStatusView.as_view(), name="metrics-refresh-status"),
]
