from __future__ import annotations

from django.contrib import admin

from core.admin import OwnedModelAdmin, UserIdFilter

from .models import Learning


@admin.register(Learning)
class LearningAdmin(OwnedModelAdmin):
    list_display = ("learning_id", "user_id", "learning_type", "namespace", "entity_type", "entity_id", "agent_id", "updated_at")
    list_filter = (UserIdFilter, "learning_type", "namespace", "updated_at")
    search_fields = ("learning_id", "user_id", "entity_id", "agent_id")
    ordering = ("-updated_at",)
    readonly_fields = ("learning_id", "learning_type", "created_at", "updated_at")
    fields = (
        "learning_id", "learning_type", "user_id", "namespace", "agent_id", "team_id", "session_id",
        "entity_id", "entity_type", "content", "metadata", "created_at", "updated_at",
    )
