"""Bases, contents (status, reason, size, chunks, ingestion progress) and chunks (read-only)."""
from __future__ import annotations

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from jobs.models import Job
from core.admin import OwnedModelAdmin, UserIdFilter, preview, pretty_json
from core.tenancy import ALL_USERS

from .models import Chunk, Content, KnowledgeBase


@admin.register(KnowledgeBase)
class KnowledgeBaseAdmin(OwnedModelAdmin):
    list_display = ("name", "id", "user_id", "embedder_id", "dimensions", "created_at")
    list_filter = (UserIdFilter, "embedder_id", "created_at")
    search_fields = ("name", "id", "user_id", "description")
    ordering = ("name",)
    readonly_fields = ("embedder_id", "dimensions", "created_at", "updated_at")
    fields = ("id", "name", "description", "user_id", "embedder_id", "dimensions", "created_at", "updated_at")

    def get_readonly_fields(self, request, obj=None):
        # The embedder changes only through knowledge_reembed (vectors must follow it).
        return self.readonly_fields + (("id",) if obj is not None else ())


@admin.register(Content)
class ContentAdmin(OwnedModelAdmin):
    list_display = ("name", "status", "reason", "size", "chunk_count", "source_type", "mime_type", "user_id", "base", "created_at")
    list_filter = ("status", "source_type", UserIdFilter, "created_at")
    search_fields = ("id", "name", "file_name", "url", "user_id", "content_hash", "status_message")
    ordering = ("-created_at",)
    date_hierarchy = "created_at"
    exclude = ("data",)
    readonly_fields = (
        "id", "base", "user_id", "source_type", "url", "file_name", "mime_type", "size", "content_hash", "status", "status_message",
        "embedder_id", "chunk_count", "ingestion", "reader_id", "chunker", "chunk_size", "chunk_overlap", "metadata_json",
        "created_at", "updated_at",
    )
    fields = ("name", "description") + readonly_fields
    actions = ["refresh_contents"]

    def get_queryset(self, request):
        return super().get_queryset(request).defer("data").select_related("base")

    def has_add_permission(self, request) -> bool:
        return False  # contents come in through uploads, the API and the chat

    @admin.display(description="reason")
    def reason(self, obj: Content) -> str:
        return preview(obj.status_message, 60) if obj.status_message else ""

    @admin.display(description="metadata")
    def metadata_json(self, obj: Content) -> str:
        return pretty_json(obj.metadata)

    @admin.display(description="ingestion job")
    def ingestion(self, obj: Content) -> str:
        if not obj.job_id:
            return "–"
        job = Job.all_users.filter(pk=obj.job_id).values("status", "error", "progress").first()
        if job is None:
            return obj.job_id
        link = reverse("admin:jobs_job_change", args=[obj.job_id])
        return format_html('<a href="{}">{}</a> {} {}', link, job["status"], preview(job["progress"], 120), job["error"])

    @admin.action(description="Refresh (read, chunk and embed again)")
    def refresh_contents(self, request, queryset) -> None:
        from .services.contents import content_refresh

        refreshed, refused = 0, []
        for content in queryset:
            try:
                content_refresh(user=ALL_USERS, content_id=content.pk)
                refreshed += 1
            except ValueError as exc:
                refused.append(f"{content}: {exc}")
        self.message_user(request, f"Refreshing {refreshed} content(s)." + (" Not refreshed: " + "; ".join(refused) if refused else ""))


@admin.register(Chunk)
class ChunkAdmin(OwnedModelAdmin):
    list_display = ("id", "content", "index", "text_preview", "embedder_id", "dimensions", "user_id", "created_at")
    list_filter = ("embedder_id", UserIdFilter, "created_at")
    search_fields = ("content__id", "content__name", "user_id", "text")
    ordering = ("-id",)
    fields = ("id", "base", "content", "index", "user_id", "embedder_id", "dimensions", "text", "metadata_json", "created_at")
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).defer("embedding").select_related("content", "base")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return request.method in ("GET", "HEAD") and super().has_change_permission(request, obj)

    @admin.display(description="text")
    def text_preview(self, obj: Chunk) -> str:
        return preview(obj.text, 80)

    @admin.display(description="metadata")
    def metadata_json(self, obj: Chunk) -> str:
        return pretty_json(obj.metadata)
