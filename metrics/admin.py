"""Metrics rows and refresh states in the admin: read-only (they are derived; a refresh rewrites them)."""
from __future__ import annotations

from django.contrib import admin

from .models import MetricsAggregate, MetricsRefreshState


class ReadOnlyAdmin(admin.ModelAdmin):
    def get_queryset(self, request):
        return self.model.all_users.all()

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(MetricsAggregate)
class MetricsAggregateAdmin(ReadOnlyAdmin):
    list_display = ("date", "aggregation_period", "user_id", "agent_runs_count", "team_runs_count", "workflow_runs_count", "errors_count", "duration_p50", "duration_p95", "updated_at")
    list_filter = ("aggregation_period", "completed")
    search_fields = ("user_id",)
    date_hierarchy = "date"


@admin.register(MetricsRefreshState)
class MetricsRefreshStateAdmin(ReadOnlyAdmin):
    list_display = ("scope", "status", "watermark", "time_zone", "started_at", "finished_at", "days_recomputed", "error")
