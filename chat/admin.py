"""Operator actions on runs and users, added to the admin pages their apps register.

``sessions.admin.RunAdmin`` and Django's ``UserAdmin`` are re-registered here with the actions
the operator console needs (cancel / retry runs; export / erase a user's data), so the apps
that own those tables do not have to know about the console.
"""
from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode

from agents.services.runs import cancel_for_caller
from agents.services.submit import RETRYABLE_STATUSES, RunNotRetryable, submit_retry
from core.auth import OPERATOR
from sessions.admin import RunAdmin
from sessions.models import Run, RunStatus

CANCELLABLE = (RunStatus.PENDING, RunStatus.RUNNING)
# Each retry is a durable background run of its owner's; a bounded batch per click keeps the
# admin request short and one operator's click from filling the queue.
MAX_RETRIES_PER_ACTION = 20


class OperatorRunAdmin(RunAdmin):
    actions = ["cancel_runs", "retry_runs"]

    @admin.action(description="Cancel the selected runs (pending or running)")
    def cancel_runs(self, request: HttpRequest, queryset: QuerySet) -> None:
        targets = list(queryset.filter(status__in=CANCELLABLE).values_list("run_id", "session_id"))
        for run_id, session_id in targets:
            # The API's cancel, as an operator: a running run stops on any replica, a queued one now.
            cancel_for_caller(principal=OPERATOR, run_id=run_id, session_id=session_id)
        skipped = queryset.count() - len(targets)
        if targets:
            self.message_user(request, f"Asked {len(targets)} run(s) to stop; they end as CANCELLED within a second.", messages.SUCCESS)
        if skipped:
            self.message_user(request, f"{skipped} run(s) were not pending or running and were left alone.", messages.WARNING)

    @admin.action(description="Retry the selected runs (failed or cancelled) as new runs")
    def retry_runs(self, request: HttpRequest, queryset: QuerySet) -> None:
        run_ids = list(queryset.filter(status__in=RETRYABLE_STATUSES).order_by("created_at").values_list("run_id", flat=True)[: MAX_RETRIES_PER_ACTION + 1])
        if len(run_ids) > MAX_RETRIES_PER_ACTION:
            self.message_user(request, f"Select at most {MAX_RETRIES_PER_ACTION} runs to retry at once.", messages.ERROR)
            return
        started, refused = [], []
        for run_id in run_ids:
            try:
                started.append(submit_retry(run_id=run_id))
            except RunNotRetryable as exc:
                refused.append(f"{run_id}: {exc}")
        skipped = queryset.count() - len(run_ids)
        if started:
            changelist = reverse("admin:agno_sessions_run_changelist")
            links = format_html_join(", ", '<a href="{}">{}</a>', ((f"{changelist}?{urlencode({'q': one.job.pk})}", one.job.pk) for one in started))
            self.message_user(request, format_html("Queued {} new run(s): {}", len(started), links), messages.SUCCESS)
        for reason in refused:
            self.message_user(request, f"Not retried: {reason}", messages.ERROR)
        if skipped:
            self.message_user(request, f"{skipped} run(s) had not failed or been cancelled and were left alone.", messages.WARNING)


admin.site.unregister(Run)
admin.site.register(Run, OperatorRunAdmin)


User = get_user_model()


class OperatorUserAdmin(UserAdmin):
    actions = ["export_data", "erase_data"]
    list_display = (*UserAdmin.list_display, "data_link")

    @admin.display(description="data")
    def data_link(self, obj) -> str:
        url = reverse("console-userdata") + "?" + urlencode({"user_id": obj.get_username()})
        return format_html('<a href="{}">export / erase</a>', url)

    def _one(self, request: HttpRequest, queryset: QuerySet):
        users = list(queryset[:2])
        if len(users) != 1:
            self.message_user(request, "Select exactly one user.", messages.WARNING)
            return None
        return users[0]

    @admin.action(description="Export the selected user's data as JSON")
    def export_data(self, request: HttpRequest, queryset: QuerySet):
        user = self._one(request, queryset)
        if user is None:
            return None
        return HttpResponseRedirect(reverse("console-userdata-export") + "?" + urlencode({"user_id": user.get_username()}))

    @admin.action(description="Erase the selected user's data…")
    def erase_data(self, request: HttpRequest, queryset: QuerySet):
        user = self._one(request, queryset)
        if user is None:
            return None
        return HttpResponseRedirect(reverse("console-userdata-erase") + "?" + urlencode({"user_id": user.get_username()}))


if admin.site.is_registered(User):
    admin.site.unregister(User)
admin.site.register(User, OperatorUserAdmin)
