"""Reply feedback in the operator console: every user's ratings, read-only (they are the users' words)."""
from __future__ import annotations

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html
from django.utils.text import Truncator

from core.admin import OwnedModelAdmin, UserIdFilter

from .models import Run, RunFeedback, Session


def _link(model: type, pk: str) -> str:
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_change", args=[pk])
    return format_html('<a href="{}">{}</a>', url, pk)


@admin.register(RunFeedback)
class RunFeedbackAdmin(OwnedModelAdmin):
    list_display = ("updated_at", "rating_label", "comment_preview", "run_link", "component_id", "user_id", "session_link")
    list_display_links = ("updated_at",)
    list_filter = ("rating", "component_id", UserIdFilter, "updated_at")
    search_fields = ("comment", "run__run_id", "session_id", "component_id", "user_id")
    ordering = ("-updated_at",)
    date_hierarchy = "updated_at"
    readonly_fields = ("rating", "comment", "run_link", "session_link", "component_id", "user_id", "created_at", "updated_at")
    fields = readonly_fields

    def has_add_permission(self, request) -> bool:  # users rate their replies in the chat
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="rating", ordering="rating")
    def rating_label(self, obj: RunFeedback) -> str:
        return "▲ up" if obj.rating == "up" else "▼ down"

    @admin.display(description="comment")
    def comment_preview(self, obj: RunFeedback) -> str:
        return Truncator(obj.comment).chars(120) or "–"

    @admin.display(description="run", ordering="run")
    def run_link(self, obj: RunFeedback) -> str:
        return _link(Run, obj.run_id)

    @admin.display(description="session", ordering="session_id")
    def session_link(self, obj: RunFeedback) -> str:
        return _link(Session, obj.session_id)
