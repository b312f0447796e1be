"""What a client may choose from (AgentOS's ``GET /knowledge/config``), and a content's status."""
from __future__ import annotations

from typing import Any

from jobs.models import Job

from ..chunkers import AGENTOS_NAMES, CHUNKERS
from ..chunkers import NOT_OFFERED as CHUNKERS_NOT_OFFERED
from ..models import Content
from ..readers import NOT_OFFERED as READERS_NOT_OFFERED
from ..readers import READERS
from .bases import User, readable
from .contents import content_get_for_user
from .search import SEARCH_TYPES

METADATA_KEYS_SCANNED = 1000


def vector_db_id(base_id: str) -> str:
    """The id ``/knowledge/config`` gives a base's vector store (``vector_db_ids`` in a search)."""
    return f"{base_id}-vectors"


def knowledge_config(*, user: User, base_id: str | None = None) -> dict[str, Any]:
    """Readers (with the chunkers and types each takes), chunkers (under AgentOS's names), the
    readers and chunkers of AgentOS's that this server does not offer (with why), the base's
    vector store with its search types, the metadata keys of the contents ``user`` may read (the
    newest 1,000: one bounded query) and the configured remote content sources, as AgentOS's
    config response names them."""
    from django.conf import settings

    from ..sources import sources
    readers = {
        reader.id: {
            "id": reader.id, "name": reader.name, "description": reader.description,
            "chunkers": [AGENTOS_NAMES[reader.chunker]] + [AGENTOS_NAMES[key] for key in CHUNKERS if key != reader.chunker],
            "content_types": list(reader.mime_types),
        }
        for reader in READERS.values()
    }
    by_type: dict[str, list[str]] = {}
    for reader in READERS.values():
        for kind in (*reader.mime_types, *reader.extensions):
            by_type.setdefault(kind, []).append(reader.id)
    contents = readable(Content.objects, user)
    if base_id is not None:
        contents = contents.filter(base_id=base_id)
    keys: set[str] = set()
    for metadata in contents.order_by("-created_at").values_list("metadata", flat=True)[:METADATA_KEYS_SCANNED]:
        if isinstance(metadata, dict):
            keys.update(metadata)
    engine = "pgvector (HNSW, cosine)" if settings.DATABASES["default"]["ENGINE"].endswith("postgresql") else "SQLite (exact cosine, FTS5)"
    return {
        "readers": readers,
        "readersForType": by_type,
        "chunkers": {
            AGENTOS_NAMES[key]: {
                "key": AGENTOS_NAMES[key], "name": AGENTOS_NAMES[key], "description": description,
                "metadata": {"chunk_size": settings.KNOWLEDGE_CHUNK_SIZE, "chunk_overlap": settings.KNOWLEDGE_CHUNK_OVERLAP},
            }
            for key, description in CHUNKERS.items()
        },
        "filters": sorted(keys),
        "vector_dbs": [{
            "id": vector_db_id(base_id) if base_id else "vectors", "name": "Chunks with their embeddings in the site's database",
            "description": engine, "search_types": list(SEARCH_TYPES),
        }],
        "remote_content_sources": [source.to_dict() for source in sources()],
        # AgentOS's readers and chunkers this server does not offer, each with why.
        "unavailable_readers": {
            reader_id: {"id": reader_id, "name": name, "description": None, "missing_packages": [], "reason": f"Reader {reader_id!r} is {reason}"}
            for reader_id, (name, reason) in READERS_NOT_OFFERED.items()
        },
        "unavailable_chunkers": {
            name: {"id": name, "name": name, "description": None, "missing_packages": [], "reason": f"Chunker {name!r} is {reason}"}
            for name, reason in CHUNKERS_NOT_OFFERED.items()
        },
    }


def content_status_for_user(*, user: User, content_id: str) -> dict[str, Any]:
    """``{id, status, status_message, progress}`` of a content ``user`` may read; ``progress`` is
    its ingestion job's (stage, chunks, embedded) while it runs. ``Content.DoesNotExist`` if not."""
    content = content_get_for_user(user=user, content_id=content_id)
    progress: dict[str, Any] = {}
    if content.job_id:
        progress = Job.objects.unscoped("the ingestion job of a content the caller may read").filter(pk=content.job_id).values_list("progress", flat=True).first() or {}
    return {"id": content.pk, "status": content.status, "status_message": content.status_message, "progress": progress}
