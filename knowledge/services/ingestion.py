"""The ingestion job: read, chunk, embed, write; the content ends ``completed`` or ``failed``.

It runs on the engine's job queue (``agents.services.jobs``: lease, heartbeats, reaper, the
owner's share of the queue), as a plain job (no run row). Progress (stage, chunks embedded) is
recorded on the job for the UI and the admin.

Nothing half-written is searchable: the chunks are written at the end, in one transaction that
also replaces the content's previous chunks and marks it completed; that transaction is fenced
on the job's lease and on the content still naming this job (a refresh that started a newer job
makes this one's result void). A failure leaves the previous chunks as they were.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import DatabaseError, DataError, IntegrityError, transaction
from django.utils import timezone

from agents.models import Job
from agents.pipeline.background import JobCancelled, execute_plain_job
from agents.services.jobs import job_fence, job_handler

from ..chunkers import Piece, chunk_sections
from ..embedders import embedder_get
from ..models import Chunk, Content, ContentStatus, SourceType
from ..readers import ReadError, ReadLimits, Section, read_content, reader_for
from .bases import writable
from .contents import INGEST_JOB, base_of, chunk_metadata, content_hash

logger = logging.getLogger("agno_site.knowledge")

EMBED_BATCH = 64
MIME_TYPE_MAX = Content._meta.get_field("mime_type").max_length


class IngestError(ValueError):
    """A reason the user can read, stored as the content's ``status_message``."""


def fetch_remote(url: str) -> tuple[bytes, str]:
    """The URL's body and content type, through the ``http`` toolkit's SSRF guard (every hop's
    address checked, connections pinned to it), with the knowledge size and time limits."""
    from engine.tools.http_fetch import FetchRefused, HttpFetchTools

    limit = settings.KNOWLEDGE_MAX_CONTENT_BYTES
    fetcher = HttpFetchTools(
        timeout=settings.KNOWLEDGE_URL_TIMEOUT_SECONDS, max_bytes=limit, allow_hosts=settings.HTTP_FETCH_ALLOW_HOSTS,
        user_agent="AgnoSite-Knowledge/1.0",
    )
    try:
        fetched = fetcher.fetch(url)
    except FetchRefused as exc:
        raise IngestError(str(exc)) from None
    except TimeoutError as exc:
        raise IngestError(f"{exc} (KNOWLEDGE_URL_TIMEOUT_SECONDS)") from None
    except OSError as exc:
        raise IngestError(f"The URL could not be fetched: {exc}") from None
    if fetched.status >= 400:
        raise IngestError(f"The URL answered HTTP {fetched.status}")
    if fetched.truncated:
        raise IngestError(f"The URL's content is larger than {limit:,} bytes (KNOWLEDGE_MAX_CONTENT_BYTES)")
    return fetched.body, fetched.content_type


def _content_for(job: Job) -> Content | None:
    content_id = (job.payload or {}).get("content_id")
    return writable(Content.objects, job.user_id).filter(pk=content_id, job_id=job.pk).first()


def _ingest(job: Job, report: Callable[..., None]) -> None:
    content = _content_for(job)
    if content is None:
        return  # deleted meanwhile, or a newer refresh owns it
    try:
        _ingest_content(job, content, report)
    except JobCancelled:
        _fail(job, content, "Ingestion was cancelled")
        raise
    except (DataError, IntegrityError) as exc:
        # The database refused this content's data (a value it cannot store), which no retry
        # changes: the content's own failure, not a lost worker for the reaper to find.
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        reason = f"The database refused this content's data ({type(exc).__name__}: {detail})"
        logger.warning("knowledge ingestion of %s refused by the database: %s", content.pk, detail)
        _fail(job, content, reason)
        raise IngestError(reason) from None
    except DatabaseError:
        raise  # the database went away: the reaper retries the job (or fails it visibly)
    except Exception as exc:
        reason = str(exc) if isinstance(exc, (IngestError, ReadError, ValueError)) else f"Ingestion failed ({type(exc).__name__}: {exc})"
        if not isinstance(exc, (IngestError, ReadError, ValueError)):
            logger.exception("knowledge ingestion of %s failed", content.pk)
        _fail(job, content, reason)
        raise IngestError(reason) from None


def _fail(job: Job, content: Content, reason: str) -> None:
    writable(Content.objects, content.user_id).filter(pk=content.pk, job_id=job.pk).update(
        status=ContentStatus.FAILED, status_message=reason[:2000], updated_at=timezone.now(),
    )


def _ingest_content(job: Job, content: Content, report: Callable[..., None]) -> None:
    base = base_of(content)
    embedder_id = (job.payload or {}).get("embedder_id") or base.embedder_id
    report(stage="reading")
    data, mime_type = content.data, content.mime_type
    if content.source_type == SourceType.URL:
        data, fetched_type = fetch_remote(content.url)
        fetched_type = fetched_type.split(";")[0].strip()
        if len(fetched_type) <= MIME_TYPE_MAX:  # longer is no media type (RFC 6838: 127 + 1 + 127)
            mime_type = fetched_type or mime_type
    if data is None:
        raise IngestError("The content's original is not stored; upload it again")
    data = bytes(data)
    if len(data) > settings.KNOWLEDGE_MAX_CONTENT_BYTES:
        raise IngestError(f"The content is {len(data):,} bytes; the limit is {settings.KNOWLEDGE_MAX_CONTENT_BYTES:,} (KNOWLEDGE_MAX_CONTENT_BYTES)")
    digest = content_hash(data)
    reader = reader_for(reader_id=content.reader_id, mime_type=mime_type, file_name=content.file_name or content.url)
    limits = ReadLimits(unpacked_bytes=settings.KNOWLEDGE_MAX_UNPACKED_BYTES, text_chars=settings.KNOWLEDGE_MAX_TEXT_CHARS)
    sections = _storable(read_content(reader, data, limits))
    size = content.chunk_size or settings.KNOWLEDGE_CHUNK_SIZE
    overlap = content.chunk_overlap if content.chunk_overlap is not None else min(settings.KNOWLEDGE_CHUNK_OVERLAP, size // 2)
    pieces = chunk_sections(sections, chunker=content.chunker or reader.chunker, size=size, overlap=overlap)
    if not pieces:
        raise IngestError("The content has no text to index")
    if len(pieces) > settings.KNOWLEDGE_MAX_CHUNKS:
        raise IngestError(
            f"The content makes {len(pieces):,} chunks; at most {settings.KNOWLEDGE_MAX_CHUNKS:,} are indexed per content "
            "(KNOWLEDGE_MAX_CHUNKS): split it, or use a larger chunk_size"
        )
    report(stage="embedding", chunks=len(pieces), embedded=0)
    vectors = _copied_vectors(content, base.pk, digest, embedder_id, pieces)
    if vectors is None:
        embedder = embedder_get(embedder_id)
        vectors = []
        for start in range(0, len(pieces), EMBED_BATCH):
            vectors += embedder.embed([piece.text for piece in pieces[start : start + EMBED_BATCH]])
            report(stage="embedding", chunks=len(pieces), embedded=len(vectors))
    else:
        report(stage="embedding", chunks=len(pieces), embedded=len(pieces), reused_from_duplicate=True)
    report(stage="writing")
    _write(job, content, pieces, vectors, embedder_id=embedder_id, digest=digest, size=len(data), mime_type=mime_type, data=data)
    current = base_of(content).embedder_id
    if current != embedder_id:
        # knowledge_reembed switched the base while this ran: its vectors are of the old embedder
        # and no search reads them; embed once more with the base's new one.
        embedder = embedder_get(current)
        vectors = []
        for start in range(0, len(pieces), EMBED_BATCH):
            vectors += embedder.embed([piece.text for piece in pieces[start : start + EMBED_BATCH]])
        _write(job, content, pieces, vectors, embedder_id=current, digest=digest, size=len(data), mime_type=mime_type, data=data)


def _storable(sections: list[Section]) -> list[Section]:
    """The sections without NUL characters: they carry no meaning in text, and PostgreSQL's text
    and jsonb refuse them (a text file with NUL bytes decodes as UTF-8 with them kept)."""
    def clean(value: Any) -> Any:
        return value.replace("\x00", "") if isinstance(value, str) else value

    return [
        Section(clean(section.text), {clean(key): clean(value) for key, value in section.metadata.items()})
        for section in sections
    ]


def _copied_vectors(content: Content, base_id: str, digest: str, embedder_id: str, pieces: list[Piece]) -> list[list[float]] | None:
    """The vectors of the same bytes, chunked the same way, from another content of the same
    owner in the same base: the same text is not embedded twice."""
    twin = (
        writable(Content.objects, content.user_id).defer("data")
        .filter(base_id=base_id, content_hash=digest, status=ContentStatus.COMPLETED).exclude(pk=content.pk).first()
    )
    if twin is None:
        return None
    rows = list(writable(Chunk.objects, content.user_id).filter(content_id=twin.pk, embedder_id=embedder_id).order_by("index").values_list("text", "embedding"))
    if [text for text, _ in rows] != [piece.text for piece in pieces]:
        return None  # chunked differently (other sizes): embed anew
    return [list(vector) for _, vector in rows]


def _write(
    job: Job, content: Content, pieces: list[Piece], vectors: list[list[float]], *, embedder_id: str, digest: str, size: int,
    mime_type: str, data: bytes,
) -> None:
    now = timezone.now()
    owner = content.user_id
    with transaction.atomic():
        if job_fence(job.pk, job.locked_by, job.attempt) is None:
            raise JobCancelled(job.pk)  # the lease was lost: the next attempt writes
        fields: dict[str, Any] = dict(
            status=ContentStatus.COMPLETED, status_message="", embedder_id=embedder_id, chunk_count=len(pieces), content_hash=digest,
            size=size, mime_type=mime_type or content.mime_type, updated_at=now,
        )
        if content.source_type == SourceType.URL:
            fields["data"] = data
        if not writable(Content.objects, owner).filter(pk=content.pk, job_id=job.pk).update(**fields):
            return  # deleted, or refreshed by a newer job, meanwhile: this result is void
        # This embedder's previous chunks go; so do those of an embedder the base no longer uses
        # (a re-embedding's leftovers). The base's current embedder's chunks stay until replaced.
        current = base_of(content).embedder_id
        stale = writable(Chunk.objects, owner).filter(content_id=content.pk)
        if current != embedder_id:
            stale = stale.exclude(embedder_id=current)
        stale.delete()
        Chunk.objects.bulk_create(
            [
                Chunk(
                    user_id=owner, base_id=content.base_id, content_id=content.pk, index=index, text=piece.text,
                    metadata=chunk_metadata(content.metadata or {}, piece.metadata), embedding=vector, embedder_id=embedder_id,
                    dimensions=len(vector), created_at=now,
                )
                for index, (piece, vector) in enumerate(zip(pieces, vectors))
            ],
            batch_size=500,
        )


@job_handler(INGEST_JOB)
def ingest_handler(job: Job, worker: str) -> str:
    return execute_plain_job(job, worker, _ingest)
