"""Agno imports in the admin: the add page takes an Agno SQLite file (uploaded) or a database URL
and queues the import (importer.jobs); an import's page shows its progress while its job runs
(refreshing itself) and its report at the end. Only a superuser starts one: an import writes
rows for every user of its source."""
from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from jobs.services.jobs import QueueFull
from core.admin import OwnedModelAdmin, UserIdFilter

from .jobs import ACTIVE, ImportRefused, import_progress, import_settle, import_start
from .models import AgnoImport, ImportedRecord


class ImportForm(forms.ModelForm):
    upload = forms.FileField(required=False, label="Agno SQLite file", help_text="The .db file agno's SqliteDb wrote (2.x or 3.x).")
    database_url = forms.CharField(
        required=False, label="or database URL", widget=forms.TextInput(attrs={"size": 80, "placeholder": "postgresql://user:password@host:5432/db"}),
        help_text="A PostgreSQL database (tables in schema ai, then public), or sqlite:///path of a file on this server. Opened read-only.",
    )
    merge_users_text = forms.CharField(
        required=False, label="Merge users", help_text="User ids (comma-separated) to import although they already have rows here that no import wrote.",
    )

    class Meta:
        model = AgnoImport
        fields = ["merge_all_users"]
        help_texts = {"merge_all_users": "Import every colliding user's rows beside theirs (check first that they are the same people)."}

    def __init__(self, *args: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.request = request
        self.started: AgnoImport | None = None

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        merge = [user.strip() for user in (data.get("merge_users_text") or "").split(",") if user.strip()]
        try:
            self.started = import_start(
                started_by=self.request.user.get_username() if self.request else "", upload=data.get("upload"),
                url=(data.get("database_url") or "").strip(), merge_users=merge, merge_all_users=bool(data.get("merge_all_users")),
            )
        except (ImportRefused, QueueFull) as exc:
            raise forms.ValidationError(str(exc)) from None
        return data


@admin.register(AgnoImport)
class AgnoImportAdmin(admin.ModelAdmin):
    list_display = ("created_at", "source_label", "status", "summary", "started_by", "finished_at")
    list_filter = ("status", "created_at")
    search_fields = ("id", "source_label", "started_by")
    ordering = ("-created_at",)
    form = ImportForm
    change_form_template = "admin/importer/agnoimport/change_form.html"
    shown = ("source_label", "status", "progress_shown", "report_shown", "error", "merge_users", "merge_all_users", "started_by",
             "created_at", "started_at", "finished_at", "job_id")

    def get_form(self, request: HttpRequest, obj: AgnoImport | None = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)

        class WithRequest(form):  # the service needs who started it
            def __init__(self, *args: Any, **inner: Any) -> None:
                super().__init__(*args, request=request, **inner)

        return WithRequest

    def get_fields(self, request: HttpRequest, obj: AgnoImport | None = None) -> Any:
        return ["upload", "database_url", "merge_users_text", "merge_all_users"] if obj is None else list(self.shown)

    def get_readonly_fields(self, request: HttpRequest, obj: AgnoImport | None = None) -> tuple[str, ...]:
        return () if obj is None else self.shown

    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser

    def has_change_permission(self, request: HttpRequest, obj: AgnoImport | None = None) -> bool:
        return False  # an import is what happened: read only

    def has_delete_permission(self, request: HttpRequest, obj: AgnoImport | None = None) -> bool:
        # Deleting forgets the record only (the imported rows stay); a running one is left to its job.
        return super().has_delete_permission(request, obj) and (obj is None or obj.status not in ACTIVE)

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> AgnoImport | None:
        row = super().get_object(request, object_id, from_field)
        return import_settle(row) if row is not None else None

    def save_model(self, request: HttpRequest, obj: AgnoImport, form: ImportForm, change: bool) -> None:
        if change or form.started is None:
            return
        obj.pk = form.started.pk  # written, with its job, by the service when the form validated
        obj._state.adding = False

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        return None

    def response_add(self, request: HttpRequest, obj: AgnoImport, post_url_continue: str | None = None) -> HttpResponse:
        self.message_user(request, "Import queued: its progress shows below, and its report when it ends.")
        return HttpResponseRedirect(reverse("admin:importer_agnoimport_change", args=[obj.pk]))

    def render_change_form(self, request: HttpRequest, context: dict[str, Any], *args: Any, obj: AgnoImport | None = None, **kwargs: Any) -> Any:
        context["import_active"] = obj is not None and obj.status in ACTIVE
        return super().render_change_form(request, context, *args, obj=obj, **kwargs)

    @admin.display(description="summary")
    def summary(self, row: AgnoImport) -> str:
        if not row.report:
            return row.error[:80] if row.error else "–"
        counts = row.report.get("counts", [])
        imported = ", ".join(f"{c['imported']} {c['kind']}" for c in counts if c["imported"])
        failed = sum(c["failed"] for c in counts)
        return f"{imported or 'nothing new'}" + (f"; {failed} failed" if failed else "")

    @admin.display(description="progress")
    def progress_shown(self, row: AgnoImport) -> str:
        progress = import_progress(row)
        if progress is None:
            if row.status in ACTIVE:
                return format_html('<span id="import-progress-text">{}</span>', "waiting for a worker" if row.status == "queued" else "starting")
            return "–"
        return format_html(
            '<progress id="import-progress" max="{}" value="{}"></progress> '
            '<span id="import-progress-text">{}: {} of {} (step {} of {})</span>',
            progress["total"], progress["done"], progress["kind"], progress["done"], progress["total"], progress["step"], progress["steps"],
        )

    @admin.display(description="report")
    def report_shown(self, row: AgnoImport) -> str:
        report = row.report
        if not report:
            return "–"
        counts = format_html_join("", "<tr><th scope=\"row\">{}</th><td>{}</td><td>{}</td><td>{}</td></tr>", (
            (c["kind"], c["imported"], c["skipped"], c["failed"]) for c in report["counts"]
        ))
        collisions = format_html_join("", "<li><code>{}</code> already has rows here that no import wrote: skipped</li>", (
            (user,) for user in report["colliding_users"]
        ))
        failures = format_html_join("", "<tr><td>{}</td><td><code>{}</code></td><td>{}</td></tr>", (
            (f["kind"], f["id"], f["reason"]) for f in report["failures"]
        ))
        return format_html(
            '<p>{} (Agno {} layout)</p>'
            '<table id="import-report-counts"><thead><tr><th>kind</th><th>imported</th><th>skipped</th><th>failed</th></tr></thead><tbody>{}</tbody></table>'
            '{}{}',
            report["source"], report["layout"], counts,
            format_html('<h3>Colliding users</h3><ul id="import-report-collisions">{}</ul>', collisions) if report["colliding_users"] else "",
            format_html(
                '<h3>Skipped rows</h3><table id="import-report-failures"><thead><tr><th>kind</th><th>id</th><th>reason</th></tr></thead><tbody>{}</tbody></table>',
                failures,
            ) if report["failures"] else "",
        )


@admin.register(ImportedRecord)
class ImportedRecordAdmin(OwnedModelAdmin):
    """Which of our rows came from an Agno import, whose, and from which source: read-only (the
    importer writes them; a user's erasure deletes theirs)."""

    list_display = ("kind", "source_id", "user_id", "source", "imported_at")
    list_filter = (UserIdFilter, "kind")
    search_fields = ("source_id", "user_id", "source")
    ordering = ("-imported_at",)
    fields = ("kind", "source_id", "user_id", "source", "imported_at")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False
