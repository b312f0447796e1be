"""Provenance of rows imported from an Agno database: which source ids were written here.

A row of ours with a source id recorded here came from an import; the collision rule
(``importer.services``) tells a user who was imported from a user who is native here by it.
Not an owned model: it is the operator's ledger, read and written only by the importer.
"""
from __future__ import annotations

from django.db import models
from django.utils import timezone


class ImportedRecord(models.Model):
    kind = models.CharField(max_length=16)  # "session" or "memory"
    source_id = models.CharField(max_length=255)
    user_id = models.CharField(max_length=255, null=True, blank=True, db_index=True)
    source = models.CharField(max_length=500, blank=True, default="")
    imported_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "importer_imported_records"
        constraints = [models.UniqueConstraint(fields=["kind", "source_id"], name="imported_record_unique")]

    def __str__(self) -> str:
        return f"{self.kind} {self.source_id}"
