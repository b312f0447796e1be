"""Schedules in the admin: every user's, with their PeriodicTask, history and failures.

Operators read schedules and fires; they change them only through the services (disable with a
reason, enable, fire now), so a schedule and its PeriodicTask never drift apart. Editing a
schedule's definition is its owner's (the API, the chat UI, an agent's toolkit).
"""
from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ActionForm
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from core.admin import OwnedModelAdmin, UserIdFilter, pretty_json

from .models import Schedule, ScheduleRun, ScheduleRunStatus
from .services.beat import periodic_task_for
from .services.firing import schedule_trigger
from .services.schedules import ScheduleConflict, ScheduleNotFound, schedule_disable_for_operator, schedule_enable
from core.tenancy import ALL_USERS


class ReasonForm(ActionForm):
    reason = forms.CharField(required=False, max_length=500, help_text="Why (shown to the schedule's owner as its disabled reason).")


@admin.register(Schedule)
class ScheduleAdmin(OwnedModelAdmin):
    list_display = ("name", "user_id", "cron_expr", "timezone", "endpoint", "enabled", "next_run_at", "managed_by", "disabled_reason", "created_at")
    list_filter = ("enabled", "managed_by", "target_type", UserIdFilter, "created_at")
    search_fields = ("id", "name", "user_id", "endpoint", "target_id", "created_by_run_id", "disabled_reason")
    ordering = ("-created_at",)
    action_form = ReasonForm
    actions = ["disable_with_reason", "enable_schedules", "fire_now"]
    readonly_fields = (
        "id", "user_id", "name", "description", "method", "endpoint", "payload_json", "cron_expr", "timezone", "timeout_seconds",
        "max_retries", "retry_delay_seconds", "enabled", "next_run_at", "disabled_reason", "managed_by", "target_type", "target_id",
        "created_by_run_id", "created_by_session_id", "updated_by_run_id", "updated_by_session_id", "created_at", "updated_at",
        "periodic_task", "history",
    )
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest) -> bool:  # owners create them (API, chat, agents)
        return False

    @admin.display(description="payload")
    def payload_json(self, obj: Schedule) -> str:
        return pretty_json(obj.payload)

    @admin.display(description="PeriodicTask (django-celery-beat)")
    def periodic_task(self, obj: Schedule) -> str:
        task = periodic_task_for(obj)
        if task is None:
            return "none (on demand)" if not obj.cron_expr else "missing"
        url = reverse("admin:django_celery_beat_periodictask_change", args=[task.pk])
        return format_html(
            '<a href="{}">{}</a>: {} {}, {}; last run {}', url, task.name, task.crontab, task.crontab.timezone if task.crontab else "",
            "enabled" if task.enabled else "disabled", task.last_run_at or "never",
        )

    @admin.display(description="history (latest 20 fires)")
    def history(self, obj: Schedule) -> str:
        runs = ScheduleRun.all_users.filter(schedule_id=obj.pk).order_by("-scheduled_for")[:20]
        rows = format_html_join(
            "", '<tr><td><a href="{}">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>',
            (
                (reverse("admin:scheduler_schedulerun_change", args=[run.pk]), f"{run.scheduled_for:%Y-%m-%d %H:%M:%S}", run.status, run.attempt,
                 run.run_id or "", (run.error or "")[:200])
                for run in runs
            ),
        )
        return format_html("<table><tr><th>for</th><th>status</th><th>attempt</th><th>run</th><th>error</th></tr>{}</table>", rows) if runs else "no fires yet"

    @admin.action(description="Disable (with the reason below)")
    def disable_with_reason(self, request: HttpRequest, queryset: QuerySet) -> None:
        reason = (request.POST.get("reason") or "").strip() or f"disabled by operator {request.user.get_username()}"
        for schedule in queryset:
            schedule_disable_for_operator(schedule_id=schedule.pk, reason=reason)
        self.message_user(request, f"{queryset.count()} schedule(s) disabled: {reason}")

    @admin.action(description="Enable")
    def enable_schedules(self, request: HttpRequest, queryset: QuerySet) -> None:
        for schedule in queryset:
            try:
                schedule_enable(user=ALL_USERS, schedule_id=schedule.pk)
            except (ScheduleConflict, ScheduleNotFound) as exc:
                self.message_user(request, f"{schedule.name}: {exc}", messages.ERROR)

    @admin.action(description="Fire now (as its owner, in the background)")
    def fire_now(self, request: HttpRequest, queryset: QuerySet) -> None:
        for schedule in queryset:
            try:
                run = schedule_trigger(user=ALL_USERS, schedule_id=schedule.pk)
            except (ScheduleConflict, ScheduleNotFound) as exc:
                self.message_user(request, f"{schedule.name}: {exc}", messages.ERROR)
            else:
                self.message_user(request, f"{schedule.name}: fired ({run.status}{', ' + run.error if run.error else ''})")


class FailuresFilter(admin.SimpleListFilter):
    title = "outcome"
    parameter_name = "outcome"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("failures", "Failures"), ("retrying", "Waiting to retry")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() == "failures":
            return queryset.filter(status__in=[ScheduleRunStatus.FAILED, ScheduleRunStatus.CANCELLED])
        if self.value() == "retrying":
            return queryset.filter(status=ScheduleRunStatus.PENDING, retry_at__isnull=False)
        return queryset


@admin.register(ScheduleRun)
class ScheduleRunAdmin(OwnedModelAdmin):
    list_display = ("schedule_link", "user_id", "scheduled_for", "trigger", "status", "attempt", "run_link", "error_preview", "duration_ms")
    list_filter = (FailuresFilter, "status", "trigger", UserIdFilter, "scheduled_for")
    search_fields = ("id", "schedule__name", "user_id", "run_id", "session_id", "error")
    ordering = ("-scheduled_for",)
    date_hierarchy = "scheduled_for"
    list_select_related = ("schedule",)
    readonly_fields = (
        "id", "schedule_link", "user_id", "scheduled_for", "trigger", "attempt", "status", "status_code", "run_link", "session_id", "error",
        "retry_at", "triggered_at", "completed_at", "duration_ms", "input_json", "output_json", "created_at",
    )
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest) -> bool:  # written by fires
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="schedule")
    def schedule_link(self, obj: ScheduleRun) -> str:
        return format_html('<a href="{}">{}</a>', reverse("admin:scheduler_schedule_change", args=[obj.schedule_id]), obj.schedule.name)

    @admin.display(description="run")
    def run_link(self, obj: ScheduleRun) -> str:
        if not obj.run_id:
            return ""
        return format_html('<a href="{}">{}</a>', reverse("admin:agno_sessions_run_change", args=[obj.run_id]), obj.run_id)

    @admin.display(description="error")
    def error_preview(self, obj: ScheduleRun) -> str:
        return (obj.error or "")[:120]

    @admin.display(description="input")
    def input_json(self, obj: ScheduleRun) -> str:
        return pretty_json(obj.input)

    @admin.display(description="output")
    def output_json(self, obj: ScheduleRun) -> str:
        return pretty_json(obj.output)
