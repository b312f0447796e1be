"""Routes of the /schedules family, at the site root (trailing slash optional)."""
from __future__ import annotations

from core.api.routing import route

from .views import (
    ScheduleDetailView,
    ScheduleDisableView,
    ScheduleEnableView,
    ScheduleRunDetailView,
    ScheduleRunsView,
    SchedulesView,
    ScheduleTriggerView,
)

urlpatterns = [
    route("schedules", SchedulesView.as_view(), name="schedules"),
    route("schedules/{schedule_id}", ScheduleDetailView.as_view(), name="schedule-detail"),
    route("schedules/{schedule_id}/enable", ScheduleEnableView.as_view(), name="schedule-enable"),
    route("schedules/{schedule_id}/disable", ScheduleDisableView.as_view(), name="schedule-disable"),
    route("schedules/{schedule_id}/trigger", ScheduleTriggerView.as_view(), name="schedule-trigger"),
    route("schedules/{schedule_id}/runs", ScheduleRunsView.as_view(), name="schedule-runs"),
    route("schedules/{schedule_id}/runs/{run_id}", ScheduleRunDetailView.as_view(), name="schedule-run-detail"),
]
