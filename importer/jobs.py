"""Imports started from the admin: an uploaded Agno SQLite file or a PostgreSQL URL, imported by a
background job of the queue (``jobs.services.jobs``) that records how far it has got; the
admin page (importer.admin) follows it and shows its report at the end.

* ``import_start`` checks the source at once (an upload that is not SQLite, a database that is
  not Agno's, a URL that does not connect: refused with the reason, nothing queued), then writes
  the ``AgnoImport`` row and its job in one transaction.
* The job (``IMPORT_JOB``) runs ``agno_import`` as ``manage.py import_agno`` does, reporting
  ``{kind, done, total}`` through ``job_progress``; a retry after a lost worker imports again,
  which adds only what the lost attempt had not written (the import is idempotent).
* At the end the report is kept on the row, and what held the source is dropped: the uploaded
  copy is deleted and the URL (it may hold a password) cleared. A job that ended without its
  handler finishing (cancelled, its worker lost for good) settles its import as failed when the
  page is next read (``import_settle``).
"""
from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone

from jobs.models import Job
from jobs.services.execution import JobCancelled, execute_plain_job
from jobs.registry import job_handler
from jobs.services.jobs import job_enqueue
from jobs.selectors import jobs_ended

from .models import AgnoImport, ImportStatus
from .services import KINDS, agno_import
from .sources import SourceError, open_source

IMPORT_JOB = "agno_import"
SQLITE_HEADER = b"SQLite format 3\x00"
ACTIVE = (ImportStatus.QUEUED, ImportStatus.RUNNING)


class ImportRefused(Exception):
    """The source cannot be imported (nothing was queued): the message says why."""


def upload_dir() -> Path:
    """Where uploaded files wait for their job: under VAR_DIR, which the workers must share."""
    return Path(settings.VAR_DIR) / "imports"


def _store_upload(import_id: str, upload: UploadedFile) -> Path:
    head = upload.read(len(SQLITE_HEADER))
    upload.seek(0)
    if head != SQLITE_HEADER:
        raise ImportRefused(f"{upload.name} is not a SQLite database file")
    directory = upload_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{import_id}.sqlite3"
    with path.open("wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    return path


def _check_source(url: str) -> str:
    """Open the source read-only once, so a wrong URL or a database that is not Agno's is refused
    now, on the form, rather than by a job. Returns the source's label (no credentials)."""
    try:
        source = open_source(url)
    except SourceError as exc:
        raise ImportRefused(str(exc)) from None
    source.close()
    return source.label


def import_start(
    *, started_by: str, upload: UploadedFile | None = None, url: str = "", merge_users: list[str] | None = None,
    merge_all_users: bool = False,
) -> AgnoImport:
    """Queue the import of ``upload`` (an Agno SQLite file) or ``url`` (postgresql://..., or a
    SQLite path on the server). Raises ImportRefused, or the queue's QueueFull."""
    if (upload is None) == (not url):
        raise ImportRefused("Give either an uploaded SQLite file or a database URL")
    import_id = str(uuid.uuid4())
    path = _store_upload(import_id, upload) if upload is not None else None
    try:
        label = _check_source(str(path) if path else url)
        if path:
            label = f"upload {upload.name}"
        with transaction.atomic():
            row = AgnoImport.objects.create(
                id=import_id, source_label=label[:500], source_url="" if path else url, upload_path=str(path or ""),
                merge_users=sorted(set(merge_users or [])), merge_all_users=merge_all_users, started_by=started_by[:255],
            )
            job = job_enqueue(job_type=IMPORT_JOB, owner_id=None, payload={"import_id": import_id})
            AgnoImport.objects.filter(pk=import_id).update(job_id=job.pk)
            row.job_id = job.pk
    except BaseException:
        if path:
            path.unlink(missing_ok=True)
        raise
    return row


def _finish(import_id: str, *, status: str, report: dict[str, Any] | None = None, error: str = "") -> None:
    """The import's end: its report or error, and the source's copy and URL dropped."""
    row = AgnoImport.objects.filter(pk=import_id).first()
    if row is None:
        return
    if row.upload_path:
        Path(row.upload_path).unlink(missing_ok=True)
    AgnoImport.objects.filter(pk=import_id).update(
        status=status, report=report, error=error[:5000], finished_at=timezone.now(), source_url="", upload_path="",
    )


@job_handler(IMPORT_JOB)
def import_job(job: Job, worker: str) -> str:
    return execute_plain_job(job, worker, _import)


def _import(job: Job, report: Callable[..., None]) -> None:
    import_id = job.payload["import_id"]
    row = AgnoImport.objects.filter(pk=import_id).first()
    if row is None:
        raise ImportRefused(f"import {import_id} no longer exists")
    AgnoImport.objects.filter(pk=import_id).update(status=ImportStatus.RUNNING, started_at=timezone.now(), error="")
    seen: dict[str, int] = {}

    def progress(kind: str, done: int, total: int) -> None:
        # About fifty writes per kind at most, and always its first and last row.
        if kind not in seen or done == total or done - seen[kind] >= max(1, total // 50):
            seen[kind] = done
            report(kind=kind, done=done, total=total)

    try:
        result = agno_import(row.upload_path or row.source_url, merge_users=True if row.merge_all_users else row.merge_users, progress=progress)
    except JobCancelled:
        _finish(import_id, status=ImportStatus.FAILED, error="The import was cancelled; what it had written stays (importing again completes it)")
        raise
    except Exception as exc:
        _finish(import_id, status=ImportStatus.FAILED, error=str(exc) or type(exc).__name__)
        raise
    _finish(import_id, status=ImportStatus.COMPLETED, report=result.as_dict())


def import_settle(row: AgnoImport) -> AgnoImport:
    """An import whose job ended without finishing it (cancelled, or its worker lost for good)
    reads as failed, with the job's reason."""
    if row.status not in ACTIVE or not row.job_id:
        return row
    ended = jobs_ended([row.job_id], cancelled="The import's job was cancelled", unfinished="The import's job ended before the import did")
    if row.job_id in ended:
        _finish(row.pk, status=ImportStatus.FAILED, error=ended[row.job_id])
        row.refresh_from_db()
    return row


def import_progress(row: AgnoImport) -> dict[str, Any] | None:
    """How far a running import has got: the kind being imported, its rows done and total, and
    which of the report's kinds it is (``step`` of ``steps``)."""
    if row.status not in ACTIVE or not row.job_id:
        return None
    progress = Job.objects.unscoped("an operator's import job").filter(pk=row.job_id).values_list("progress", flat=True).first()
    if not progress or progress.get("kind") not in KINDS:
        return None
    # sessions bring runs, members and steps along: they are not steps of their own.
    steps = [kind for kind in KINDS if kind not in ("runs", "members", "steps")]
    return {**progress, "step": steps.index(progress["kind"]) + 1, "steps": len(steps)}
