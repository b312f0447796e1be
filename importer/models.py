"""Provenance of rows imported from an Agno database: which source ids were written here.

A row of ours with a source id recorded here came from an import; the collision rule
(``importer.services``) tells a user who was imported from a user who is native here by it.
"""
from __future__ import annotations

from django.db import models
from django.utils import timezone

from core.tenancy import OwnedModel


class ImportedRecord(OwnedModel):
    """Owned by the user whose row it records (None: an ownerless row, such as a 2.x eval run), so
    a user's data export carries it and their erasure removes it (``core.services.userdata``).
    The importer, an operator's every-user path, reads and writes it through ``all_users``."""

    kind = models.CharField(max_length=16)  # "session", "memory", "eval", "metrics", "knowledge", "schedule", ...
    source_id = models.CharField(max_length=255)
    source = models.CharField(max_length=500, blank=True, default="")
    imported_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "importer_imported_records"
        constraints = [models.UniqueConstraint(fields=["kind", "source_id"], name="imported_record_unique")]

    def __str__(self) -> str:
        return f"{self.kind} {self.source_id}"


class ImportStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"


class AgnoImport(models.Model):
    """One import an operator started from the admin (importer.jobs): its source, how far its
    background job has got, and at the end its report (``ImportReport.as_dict``).

    The operator's ledger, not an owned row: an import writes rows for every user of its source.
    ``source_url`` (a PostgreSQL URL, which may hold a password) is kept only until the job ends;
    an uploaded SQLite file lives in ``upload_path`` until then too.
    """

    id = models.CharField(max_length=64, primary_key=True)
    source_label = models.CharField(max_length=500)
    source_url = models.TextField(blank=True, default="")
    upload_path = models.CharField(max_length=1000, blank=True, default="")
    merge_users = models.JSONField(default=list, blank=True)
    merge_all_users = models.BooleanField(default=False)
    status = models.CharField(max_length=16, choices=ImportStatus.choices, default=ImportStatus.QUEUED)
    job_id = models.CharField(max_length=64, blank=True, default="")
    report = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    started_by = models.CharField(max_length=255, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "importer_imports"
        ordering = ["-created_at"]
        verbose_name = "Agno import"

    def __str__(self) -> str:
        return f"{self.source_label} ({self.status})"
