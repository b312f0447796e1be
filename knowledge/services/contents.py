"""Adding, refreshing, changing and removing contents. Ingestion itself is a background job
(``knowledge.services.ingestion``): these write the row, ``processing``, and enqueue it."""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from jobs.models import Job, JobStatus
from jobs.services.cancellation import cancel_request
from jobs.services.jobs import job_cancel, job_enqueue
from jobs.selectors import jobs_ended

from ..chunkers import ChunkerError, chunker_key
from ..models import Chunk, Content, ContentStatus, KnowledgeBase, SourceType
from ..readers import ReadError, check_reader_id
from .bases import User, base_get_for_user, readable, writable

INGEST_JOB = "knowledge-ingest"
# Chunk metadata that comes from the reader or the chunker, not from the content's metadata.
PIECE_KEYS = frozenset({"page", "headings", "rows", "item", "title"})
NAME_MAX = Content._meta.get_field("name").max_length  # a URL named after itself may be longer
# AgentOS's reserved metadata key: the server's own bookkeeping about a content (where it came
# from, its reader, whether its vectors are stored), given in answers, never taken from a client.
AGNO_METADATA_KEY = "_agno"


class ContentInputError(ValueError):
    """The request itself is wrong (an unknown chunker, bad sizes, metadata that is not an object)."""


@dataclass(frozen=True)
class Inserted:
    content: Content
    duplicate: bool  # the same bytes were in the base already: that content, not a new one


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _check_reader(reader_id: str) -> None:
    try:
        check_reader_id(reader_id)
    except ReadError as exc:
        raise ContentInputError(str(exc)) from None


def _chunker_key(chunker: str) -> str:
    """The chunker as this server stores it (AgentOS's names are accepted: ``RecursiveChunker``)."""
    try:
        return chunker_key(chunker)
    except ChunkerError as exc:
        raise ContentInputError(str(exc)) from None


def _check_options(*, reader_id: str, chunk_size: int | None, chunk_overlap: int | None, metadata: Any) -> None:
    if reader_id:
        _check_reader(reader_id)
    size = chunk_size if chunk_size is not None else settings.KNOWLEDGE_CHUNK_SIZE
    overlap = chunk_overlap if chunk_overlap is not None else min(settings.KNOWLEDGE_CHUNK_OVERLAP, size // 2)
    if not 50 <= size <= 8000:
        raise ContentInputError("chunk_size must be between 50 and 8000 characters")
    if not 0 <= overlap < size:
        raise ContentInputError("chunk_overlap must be at least 0 and smaller than chunk_size")
    if not isinstance(metadata, dict):
        raise ContentInputError("metadata must be a JSON object")


def _without_reserved(metadata: dict[str, Any]) -> dict[str, Any]:
    """A client's metadata without ``_agno``, which only the server writes (as AgentOS drops it)."""
    return {key: value for key, value in metadata.items() if key != AGNO_METADATA_KEY}


def _check_storable(*, metadata: Any = None, **fields: str | None) -> None:
    """What PostgreSQL would refuse as a database error is the request's fault, said as such:
    a text longer than its column, a NUL character in a text or in the metadata, a non-finite
    number in the metadata. (SQLite would store them; the rule is the same on both.)"""
    for name, value in fields.items():
        if value is None:
            continue
        limit = Content._meta.get_field(name).max_length
        if limit is not None and len(value) > limit:
            raise ContentInputError(f"{name} must be at most {limit} characters")
        if "\x00" in value:
            raise ContentInputError(f"{name} must not contain NUL characters")
    pending = [metadata]
    while pending:  # iterative: deep nesting must not exhaust the stack
        item = pending.pop()
        if isinstance(item, dict):
            if any("\x00" in key for key in item):
                raise ContentInputError("metadata must not contain NUL characters")
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, str) and "\x00" in item:
            raise ContentInputError("metadata must not contain NUL characters")
        elif isinstance(item, float) and not math.isfinite(item):
            raise ContentInputError("metadata numbers must be finite")


def content_insert(
    *,
    user_id: str | None,
    base_id: str,
    source_type: str,
    data: bytes | None = None,
    text: str | None = None,
    url: str = "",
    name: str = "",
    description: str = "",
    file_name: str = "",
    mime_type: str = "",
    metadata: dict[str, Any] | None = None,
    reader_id: str = "",
    chunker: str = "",
    chunk_size: int | None = None,
    chunk_overlap: int | None = None,
) -> Inserted:
    """Add a content to a base ``user_id`` may use: the row (``processing``) and its ingestion job,
    in one transaction. ``data`` for an upload, ``text`` for a text, ``url`` for a remote content.

    The same bytes already in the base for the same owner are not added (nor embedded) again:
    that content is returned with ``duplicate=True``. A content over the size limit is stored
    ``failed`` with the reason, and not enqueued. Raises ``KnowledgeBase.DoesNotExist`` for a
    base the user may not use, ``ContentInputError`` for a bad request, and the queue's
    ``QueueFull`` when the user's share of the job queue is full.
    """
    metadata = {} if metadata is None else metadata
    chunker = _chunker_key(chunker) if chunker else ""
    _check_options(reader_id=reader_id, chunk_size=chunk_size, chunk_overlap=chunk_overlap, metadata=metadata)
    metadata = _without_reserved(metadata)
    _check_storable(metadata=metadata, name=name, description=description, url=url, file_name=file_name, mime_type=mime_type)
    if text is not None and "\x00" in text:
        raise ContentInputError("text must not contain NUL characters")
    base = base_get_for_user(user=user_id, base_id=base_id)
    if source_type == SourceType.TEXT:
        if text is None:
            raise ContentInputError("a text content needs its text")
        data, mime_type = text.encode("utf-8"), mime_type or "text/plain"
    elif source_type == SourceType.UPLOAD:
        if data is None:
            raise ContentInputError("an upload needs its file")
    elif source_type == SourceType.URL:
        if not url:
            raise ContentInputError("a remote content needs its URL")
        data = None
    else:
        raise ContentInputError(f"Unknown source type {source_type!r}")
    now = timezone.now()
    content = Content(
        user_id=user_id, base=base, name=(name or file_name or url or "text")[:NAME_MAX], description=description, source_type=source_type,
        url=url, file_name=file_name, mime_type=mime_type, metadata=metadata, reader_id=reader_id, chunker=chunker,
        chunk_size=chunk_size, chunk_overlap=chunk_overlap, created_at=now, updated_at=now,
    )
    if data is not None:
        content.size = len(data)
        if len(data) > settings.KNOWLEDGE_MAX_CONTENT_BYTES:
            content.status = ContentStatus.FAILED
            content.status_message = (
                f"The content is {len(data):,} bytes; the limit is {settings.KNOWLEDGE_MAX_CONTENT_BYTES:,} (KNOWLEDGE_MAX_CONTENT_BYTES)"
            )
            content.save(force_insert=True)
            return Inserted(content, duplicate=False)
        content.content_hash = content_hash(data)
        content.data = data
        existing = (
            writable(Content.objects, user_id).defer("data")
            .filter(base=base, content_hash=content.content_hash).exclude(status=ContentStatus.FAILED)
            .order_by("created_at").first()
        )
        if existing is not None:
            return Inserted(existing, duplicate=True)
    with transaction.atomic():
        content.save(force_insert=True)
        _enqueue(content)
    return Inserted(content, duplicate=False)


def _enqueue(content: Content) -> None:
    """Queue the content's ingestion (inside the caller's transaction: the job is handed to a
    worker when it commits). The content remembers the job: only that job may finish it."""
    job = job_enqueue(job_type=INGEST_JOB, owner_id=content.user_id, payload={"content_id": content.pk})
    content.job_id = job.pk
    writable(Content.objects, content.user_id).filter(pk=content.pk).update(job_id=job.pk)


def content_refresh(*, user: User, content_id: str) -> Content:
    """Read, chunk and embed a content again (a failed one, a changed URL, a new chunk size);
    a content whose ingestion is still queued or running is left to it. The content's chunks
    stay searchable until the new ones replace them."""
    with transaction.atomic():
        content = writable(Content.objects, user).defer("data").select_for_update().get(pk=content_id)
        if content.job_id and Job.objects.unscoped("a content's own ingestion job").filter(
            pk=content.job_id, status__in=(JobStatus.QUEUED, JobStatus.RUNNING)
        ).exists():
            return content
        if content.source_type != SourceType.URL and not writable(Content.objects, user).filter(pk=content_id, data__isnull=False).exists():
            raise ContentInputError("This content's original is not stored (it was refused as too large); upload it again")
        content.status, content.status_message, content.updated_at = ContentStatus.PROCESSING, "", timezone.now()
        content.save(update_fields=["status", "status_message", "updated_at"])
        _enqueue(content)
    return content


def content_update(
    *, user: User, content_id: str, name: str | None = None, description: str | None = None, metadata: dict[str, Any] | None = None,
    reader_id: str | None = None,
) -> Content:
    """Change a content's name, description, metadata or reader. New metadata reaches its chunks
    in the same transaction (searches filter on them); a new reader takes effect on refresh."""
    if metadata is not None and not isinstance(metadata, dict):
        raise ContentInputError("metadata must be a JSON object")
    if metadata is not None:
        metadata = _without_reserved(metadata)
    if reader_id:
        _check_reader(reader_id)
    _check_storable(metadata=metadata, name=name, description=description)
    with transaction.atomic():
        content = writable(Content.objects, user).defer("data").select_for_update().get(pk=content_id)
        fields = ["updated_at"]
        for field, value in (("name", name), ("description", description), ("metadata", metadata), ("reader_id", reader_id)):
            if value is not None:
                setattr(content, field, value)
                fields.append(field)
        content.updated_at = timezone.now()
        content.save(update_fields=fields)
        if metadata is not None:
            chunks = list(writable(Chunk.objects, content.user_id).filter(content_id=content.pk).only("id", "user_id", "metadata"))
            for chunk in chunks:
                chunk.metadata = chunk_metadata(metadata, {k: v for k, v in chunk.metadata.items() if k in PIECE_KEYS})
            writable(Chunk.objects, content.user_id).bulk_update(chunks, ["metadata"], batch_size=500)
    return content


def chunk_metadata(content_metadata: dict[str, Any], piece_metadata: dict[str, Any]) -> dict[str, Any]:
    return {**content_metadata, **piece_metadata}


def content_delete(*, user: User, content_id: str) -> Content:
    """Remove a content and its chunks, and stop its ingestion (one transaction; the deleted row
    is returned)."""
    with transaction.atomic():
        content = writable(Content.objects, user).defer("data").get(pk=content_id)
        writable(Content.objects, user).filter(pk=content.pk).delete()
        _stop_ingestion([content.job_id])
    return content


def content_delete_all(*, user: User, base_id: str) -> int:
    """Remove every content ``user`` may change in a base (theirs; ALL_USERS: everyone's), and
    stop their ingestions, in one transaction."""
    base = base_get_for_user(user=user, base_id=base_id)
    with transaction.atomic():
        contents = writable(Content.objects, user).filter(base=base)
        job_ids = list(contents.exclude(job_id="").values_list("job_id", flat=True))
        deleted, per_model = contents.delete()
        _stop_ingestion(job_ids)
    return per_model.get(Content._meta.label, 0)


def _stop_ingestion(job_ids: list[str]) -> None:
    """A deleted content's ingestion stops: a queued job ends cancelled now, a running one at its
    next progress report (a cancel intent bound to the job's owner), so no worker goes on reading
    and embedding what nobody can search any more."""
    active = Job.objects.unscoped("the ingestion jobs of contents the caller deleted").filter(
        pk__in=[job_id for job_id in job_ids if job_id], job_type=INGEST_JOB, status__in=(JobStatus.QUEUED, JobStatus.RUNNING),
    ).values_list("id", "status", "user_id")
    for job_id, status, owner in list(active):
        if status == JobStatus.QUEUED and job_cancel(job_id=job_id, reason="The content was deleted"):
            continue
        cancel_request(run_id=job_id, user_id=owner)  # running (or claimed meanwhile)


def _settle_abandoned(contents: list[Content]) -> None:
    """A content still ``processing`` whose ingestion job has ended without finishing it (its
    worker was lost for good, an operator cancelled it) is failed with the job's reason, so no
    content says ``processing`` for ever. One query when any is processing."""
    processing = {content.job_id: content for content in contents if content.status == ContentStatus.PROCESSING and content.job_id}
    if not processing:
        return
    ended = jobs_ended(list(processing), cancelled="Ingestion was cancelled", unfinished="Ingestion ended without finishing; refresh it")
    now = timezone.now()
    for job_id, reason in ended.items():
        content = processing[job_id]
        if writable(Content.objects, content.user_id).filter(pk=content.pk, job_id=job_id, status=ContentStatus.PROCESSING).update(
            status=ContentStatus.FAILED, status_message=reason[:2000], updated_at=now,
        ):
            content.status, content.status_message, content.updated_at = ContentStatus.FAILED, reason[:2000], now


def content_get_for_user(*, user: User, content_id: str) -> Content:
    """A content ``user`` may read (their own or a shared one), without its bytes; one query
    (two while it is processing)."""
    content = readable(Content.objects, user).defer("data").get(pk=content_id)
    _settle_abandoned([content])
    return content


def content_passages_for_user(*, user: User, content_id: str) -> tuple[Content, list[dict[str, Any]]]:
    """A content ``user`` may read and its passages in document order (``id``, ``index``, ``text``,
    ``metadata``): the chunks its base searches (the base's active embedder), so every passage a
    search cites is among them. Raises ``Content.DoesNotExist`` for a content the user may not
    read. Three queries (four while it is processing)."""
    content = content_get_for_user(user=user, content_id=content_id)
    embedder_id = readable(KnowledgeBase.objects, user).filter(pk=content.base_id).values_list("embedder_id", flat=True).first()
    passages = list(
        readable(Chunk.objects, user).filter(content_id=content.pk, embedder_id=embedder_id).order_by("index").values("id", "index", "text", "metadata")
    )
    return content, passages


def content_list_for_user(*, user: User, base_id: str, offset: int = 0, limit: int = 20, order: str = "-created_at") -> tuple[list[Content], int]:
    """One page of the contents ``user`` may read in a base, newest first, and how many there are
    (two queries; three when some are processing)."""
    from core.querysets import window

    if order.lstrip("-") not in {"created_at", "updated_at", "name", "size", "status"}:
        raise ContentInputError("order must be one of created_at, updated_at, name, size, status (with - for descending)")
    queryset = readable(Content.objects, user).defer("data").filter(base_id=base_id)
    page = window(queryset.order_by(order, "id"), offset=offset, limit=limit)
    _settle_abandoned(page)
    return page, queryset.count()


def base_of(content: Content) -> KnowledgeBase:
    return readable(KnowledgeBase.objects, content.user_id).get(pk=content.base_id)
