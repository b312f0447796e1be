"""The approvals queue: what waits on an operator first, decided from its change page.

The list opens on the pending approvals (the status filter's "All" shows the rest). A pending
approval's page has a decision and a note; saving it resolves the approval as the signed-in
operator (``approval_resolve``), which continues its run in the background. Resolved ones say
who decided what, and when; nothing of them can be changed.
"""
from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from core.admin import OwnedModelAdmin, UserIdFilter, pretty_json

from .models import Approval, ApprovalStatus
from .services import RESOLVABLE, ApprovalAlreadyResolved, approval_resolve

ALL = "all"


class StatusFilter(admin.SimpleListFilter):
    """Status, pending unless another is chosen: the queue is what waits."""

    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(ALL, "All"), *ApprovalStatus.choices]

    def value(self) -> str:
        return super().value() or ApprovalStatus.PENDING

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        return queryset if value == ALL else queryset.filter(status=value)

    def choices(self, changelist: Any):
        # Django's own "All" entry would mean "no parameter", which is pending here.
        for lookup, title in self.lookup_choices:
            yield {
                "selected": self.value() == lookup,
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }


class ResolveForm(forms.ModelForm):
    decision = forms.ChoiceField(
        choices=[("", "(undecided)"), *[(status.value, status.label) for status in RESOLVABLE]], required=False,
        help_text="Approved: the tool call runs. Rejected: the agent is told it was rejected, with the note.",
    )
    note = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False, max_length=2000)

    class Meta:
        model = Approval
        fields: list[str] = []


@admin.register(Approval)
class ApprovalAdmin(OwnedModelAdmin):
    list_display = ("tool_name", "status", "approval_type", "user_id", "source", "created_at", "resolved_by", "resolved_at", "note_preview")
    list_filter = (StatusFilter, "approval_type", UserIdFilter, "created_at")
    search_fields = ("id", "run_id", "session_id", "tool_name", "user_id", "agent_id", "team_id", "resolved_by")
    ordering = ("-created_at",)
    date_hierarchy = "created_at"
    form = ResolveForm
    readonly_fields = (
        "id", "status", "approval_type", "pause_type", "tool_name", "tool_args_json", "user_id", "source", "run_link",
        "session_id", "created_at", "resolved_by", "resolved_at", "resolution_json", "context_json", "requirements_json",
    )

    def has_add_permission(self, request: HttpRequest) -> bool:  # written by paused runs
        return False

    def get_fields(self, request: HttpRequest, obj: Approval | None = None) -> list[str]:
        fields = list(self.readonly_fields)
        return ["decision", "note", *fields] if obj is not None and obj.pending else fields

    def get_form(self, request: HttpRequest, obj: Approval | None = None, change: bool = False, **kwargs: Any):
        if obj is None or not obj.pending:
            kwargs["fields"] = []
        return super().get_form(request, obj, change=change, **kwargs)

    def save_model(self, request: HttpRequest, obj: Approval, form: forms.ModelForm, change: bool) -> None:
        """Only a decision is saved, through the service (the row itself is never edited here)."""
        decision = form.cleaned_data.get("decision")
        if not decision:
            return
        note = form.cleaned_data.get("note") or ""
        try:
            approval_resolve(
                approval_id=obj.pk, status=decision, resolved_by=request.user.get_username(),
                resolution_data={"note": note} if note else None,
            )
        except ApprovalAlreadyResolved as exc:
            self.message_user(request, str(exc), messages.ERROR)

    @admin.display(description="source")
    def source(self, obj: Approval) -> str:
        return f"{obj.source_type} {obj.agent_id or obj.team_id or obj.workflow_id or ''}".strip()

    @admin.display(description="note")
    def note_preview(self, obj: Approval) -> str:
        return obj.note

    @admin.display(description="run")
    def run_link(self, obj: Approval) -> str:
        return format_html('<a href="{}">{}</a>', reverse("admin:agno_sessions_run_change", args=[obj.run_id]), obj.run_id)

    @admin.display(description="tool args")
    def tool_args_json(self, obj: Approval) -> str:
        return pretty_json(obj.tool_args)

    @admin.display(description="resolution data")
    def resolution_json(self, obj: Approval) -> str:
        return pretty_json(obj.resolution_data)

    @admin.display(description="context")
    def context_json(self, obj: Approval) -> str:
        return pretty_json(obj.context)

    @admin.display(description="requirements")
    def requirements_json(self, obj: Approval) -> str:
        return pretty_json(obj.requirements)
