"""Operator actions on runs and users, added to the admin pages their apps register.

``sessions.admin.RunAdmin`` and Django's ``UserAdmin`` are re-registered here with the actions
the operator console needs (cancel / retry runs, a workflow run's step timeline and its review;
export / erase a user's data, erased with the account when it is deleted), so the apps
that own those tables do not have to know about the console.
"""
from __future__ import annotations

from django.apps import apps
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.db import transaction
from django.db.models import QuerySet
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.text import capfirst
from django.utils.http import urlencode

from agents.pipeline.runs import cancel_for_caller
from agents.pipeline.submit import RETRYABLE_STATUSES, RunNotRetryable, submit_retry
from core.admin import OwnedModelAdmin, UserIdFilter
from core.auth import OPERATOR
from core.services.userdata import userdata_counts, userdata_erase
from sessions.admin import RunAdmin
from sessions.models import Run, RunStatus, SessionType

from .console.workflow_actions import DECISIONS, NotResumable, workflow_run_cancel, workflow_run_resume
from .console.workflows import paused_requirement, step_timeline
from .models import SharedConversation

CANCELLABLE = (RunStatus.PENDING, RunStatus.RUNNING)
# Each retry is a durable background run of its owner's; a bounded batch per click keeps the
# admin request short and one operator's click from filling the queue.
MAX_RETRIES_PER_ACTION = 20


class OperatorRunAdmin(RunAdmin):
    actions = ["cancel_runs", "retry_runs"]
    WORKFLOW_FIELDS = ("step_timeline", "paused_review")

    def get_readonly_fields(self, request, obj=None):
        """A workflow run shows its step timeline (and, paused, what it waits on) after its events."""
        fields = super().get_readonly_fields(request, obj)
        if obj is None or obj.run_type != SessionType.WORKFLOW:
            return fields
        at = fields.index("events_link") + 1
        return (*fields[:at], *self.WORKFLOW_FIELDS, *fields[at:])

    def get_urls(self):
        review = path("<path:object_id>/review/", self.admin_site.admin_view(self.review_view), name="agno_sessions_run_review")
        return [review, *super().get_urls()]

    @admin.display(description="step timeline")
    def step_timeline(self, obj: Run) -> str:
        """The workflow's executed steps as they ran (nested, a Parallel's branches side by
        side, a Loop's iterations numbered), each with status, duration, output and child run."""
        return render_to_string("admin/console/step_timeline.html", {"steps": step_timeline(obj)})

    @admin.display(description="waiting on")
    def paused_review(self, obj: Run) -> str:
        requirement = paused_requirement(obj)
        if requirement is None:
            return "–"
        url = reverse("admin:agno_sessions_run_review", args=[obj.pk])
        return format_html('{} <a class="button" href="{}">Resume or cancel…</a>', _waits_on(requirement), url)

    def review_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """A paused workflow run's pending requirement: confirm or reject it (with the user input
        it asks for), or cancel the run. Resuming needs change permission on runs."""
        run = self.get_object(request, object_id)
        if run is None or run.run_type != SessionType.WORKFLOW:
            raise Http404
        if not self.has_change_permission(request, run):
            raise PermissionDenied
        change_page = reverse("admin:agno_sessions_run_change", args=[run.pk])
        requirement = paused_requirement(run)
        if request.method == "POST":
            try:
                if request.POST.get("action") == "cancel":
                    workflow_run_cancel(run_id=run.pk)
                    self.message_user(request, "The workflow run was cancelled.", messages.SUCCESS)
                else:
                    workflow_run_resume(
                        run_id=run.pk, decision=request.POST.get("decision", ""), feedback=request.POST.get("feedback", "").strip(),
                        values={key.removeprefix("input-"): value for key, value in request.POST.items() if key.startswith("input-")},
                        choices=request.POST.getlist("choice"),
                    )
                    self.message_user(request, "The workflow run continues in the background.", messages.SUCCESS)
                return HttpResponseRedirect(change_page)
            except NotResumable as exc:
                self.message_user(request, str(exc), messages.ERROR)
                requirement = paused_requirement(run)
        return TemplateResponse(request, "admin/console/workflow_review.html", {
            **self.admin_site.each_context(request), "title": f"Paused workflow run {run.pk}", "opts": self.opts,
            "original": run, "run": run, "requirement": requirement, "change_page": change_page,
            "decisions": DECISIONS.get(requirement["kind"], ()) if requirement else (),
        })

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


def _waits_on(requirement: dict) -> str:
    if requirement["kind"] == "error":
        return f"Step {requirement['step_name']!r} failed: retry or skip it."
    if requirement["kind"] == "executor":
        return f"Step {requirement['step_name']!r} waits on its agent's or team's own review."
    asks = [label for key, label in (
        ("requires_confirmation", "confirmation"), ("requires_user_input", "user input"), ("requires_route_selection", "a route choice"),
        ("requires_output_review", "an output review"), ("requires_iteration_review", "an iteration review"),
    ) if requirement.get(key)]
    return f"Step {requirement['step_name']!r} waits on {' and '.join(asks) or 'a review'}."


admin.site.unregister(Run)
admin.site.register(Run, OperatorRunAdmin)


User = get_user_model()


class OperatorUserAdmin(UserAdmin):
    """Django's user admin, with a user's data: exported, erased, and erased with the account
    when the account is deleted (one or "delete selected"), through ``userdata_erase``, so no
    session, run, memory or document outlives its owner's account."""

    actions = ["export_data", "erase_data"]
    list_display = (*UserAdmin.list_display, "data_link")

    def get_deleted_objects(self, objs, request):
        """Django's confirmation lists, with each user's data that the deletion erases: counted
        per table in its summary, and listed under the user's name (an owned table the operator
        may not delete from refuses the deletion, as a related row would)."""
        deleted, model_count, perms_needed, protected = super().get_deleted_objects(objs, request)
        model_count = dict(model_count)
        for user in objs:
            counts = [(apps.get_model(label), count) for label, count in userdata_counts(user_id=user.get_username()).items() if count]
            if not counts:
                continue
            deleted.append(f"The data of {user.get_username()}, erased with the account:")
            deleted.append([f"{capfirst(model._meta.verbose_name_plural)}: {count}" for model, count in counts])
            for model, count in counts:
                name = model._meta.verbose_name_plural
                model_count[name] = model_count.get(name, 0) + count
                if not request.user.has_perm(f"{model._meta.app_label}.delete_{model._meta.model_name}"):
                    perms_needed.add(model._meta.verbose_name)
        return deleted, model_count, perms_needed, protected

    def delete_model(self, request: HttpRequest, obj) -> None:
        userdata_erase(user_id=obj.get_username(), delete_account=True)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        with transaction.atomic():  # all the selected users' data and accounts, or none
            for user in queryset:
                userdata_erase(user_id=user.get_username(), delete_account=True)

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


@admin.register(SharedConversation)
class SharedConversationAdmin(OwnedModelAdmin):
    """Share links, to read and to take down (deleting one revokes its link at once). The link's
    token is not shown: an operator reads the conversation itself under Sessions."""

    list_display = ("title", "user_id", "session_id", "message_count", "created_at", "shared_at")
    list_filter = (UserIdFilter, "shared_at")
    search_fields = ("title", "user_id", "session__session_id")
    ordering = ("-shared_at",)
    fields = ("title", "user_id", "session_id", "message_count", "created_at", "shared_at")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    @admin.display(description="messages")
    def message_count(self, obj: SharedConversation) -> int:
        return len(obj.messages or [])
