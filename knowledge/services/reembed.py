"""Moving a base to another embedder without downtime.

Searches keep using the base's current embedder while the new vectors are written beside the old
ones (chunks carry their embedder id; a search reads only the base's). Each content's chunk texts
are embedded again and written in one transaction per content. Contents that arrive meanwhile
are ingested with the old embedder and caught up by the next pass; when a pass finds nothing
left, the base switches in one transaction (under its row lock) and the old vectors are deleted.
An ingestion that finishes after the switch with the old embedder embeds again with the new one
(``knowledge.services.ingestion``).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from ..embedders import EmbedderError, embedder_get
from ..models import VECTOR_DIMENSIONS, Chunk, Content, ContentStatus, KnowledgeBase

_WHY = "knowledge_reembed: an operator's move of a whole base, every user's chunks"


@dataclass
class Reembedded:
    base_id: str
    old_embedder: str
    new_embedder: str
    contents: int
    chunks: int
    deleted: int


def _chunks():
    return Chunk.objects.unscoped(_WHY)


def _missing(base: KnowledgeBase, old: str, new: str) -> list[str]:
    """Contents whose chunks of the old embedder are not all matched by chunks of the new one."""
    counts = (
        Content.objects.unscoped(_WHY).filter(base_id=base.pk, status=ContentStatus.COMPLETED)
        .annotate(old=Count("chunks", filter=Q(chunks__embedder_id=old)), new=Count("chunks", filter=Q(chunks__embedder_id=new)))
        .values_list("id", "old", "new")
    )
    return [content_id for content_id, old_count, new_count in counts if old_count != new_count]


def _reembed_content(content_id: str, old: str, embed: Callable[[list[str]], list[list[float]]], new: str) -> int:
    rows = list(_chunks().filter(content_id=content_id, embedder_id=old).order_by("index").values("user_id", "base_id", "index", "text", "metadata"))
    vectors: list[list[float]] = []
    for start in range(0, len(rows), 64):
        vectors += embed([row["text"] for row in rows[start : start + 64]])
    now = timezone.now()
    with transaction.atomic():
        _chunks().filter(content_id=content_id, embedder_id=new).delete()
        Chunk.objects.bulk_create(
            [Chunk(content_id=content_id, embedding=vector, embedder_id=new, dimensions=len(vector), created_at=now, **row) for row, vector in zip(rows, vectors)],
            batch_size=500,
        )
    return len(rows)


def base_reembed(*, base_id: str, embedder_id: str, report: Callable[[str], None] = lambda line: None, max_passes: int = 10) -> Reembedded:
    """Re-embed every chunk of a base with ``embedder_id``, then switch the base to it."""
    base = KnowledgeBase.objects.unscoped(_WHY).get(pk=base_id)
    old = base.embedder_id
    if embedder_id == old:
        raise EmbedderError(f"The base already uses {embedder_id}")
    embedder = embedder_get(embedder_id)
    if embedder.dimensions != VECTOR_DIMENSIONS:
        raise EmbedderError(f"{embedder_id} gives {embedder.dimensions}-dimensional vectors; the knowledge store holds {VECTOR_DIMENSIONS}")
    done_contents = done_chunks = 0
    for number in range(1, max_passes + 1):
        missing = _missing(base, old, embedder_id)
        report(f"pass {number}: {len(missing)} content(s) to embed with {embedder_id}")
        if not missing:
            break
        for content_id in missing:
            done_chunks += _reembed_content(content_id, old, embedder.embed, embedder_id)
            done_contents += 1
    with transaction.atomic():
        base = KnowledgeBase.objects.unscoped(_WHY).select_for_update().get(pk=base_id)
        left = _missing(base, old, embedder_id)
        if left:
            raise EmbedderError(f"{len(left)} content(s) still changing after {max_passes} passes; run the command again")
        KnowledgeBase.objects.unscoped(_WHY).filter(pk=base.pk).update(embedder_id=embedder_id, dimensions=embedder.dimensions, updated_at=timezone.now())
        Content.objects.unscoped(_WHY).filter(base_id=base.pk, embedder_id=old).update(embedder_id=embedder_id)
    report(f"switched {base.name} from {old} to {embedder_id}")
    deleted, _ = _chunks().filter(base_id=base.pk, embedder_id=old).delete()
    return Reembedded(base_id=base.pk, old_embedder=old, new_embedder=embedder_id, contents=done_contents, chunks=done_chunks, deleted=deleted)
