"""Searching a base on behalf of a user: vector, full-text (keyword) and hybrid.

Whose chunks: the user's own and the shared ones (``bases.readable``), and only those of the
base's active embedder, in the same statement as the ranking:

- PostgreSQL, vector: ``ORDER BY embedding <=> q LIMIT n`` over the HNSW index with the owner,
  base and metadata conditions in the same query, and pgvector's iterative index scans on
  (``SET LOCAL hnsw.iterative_scan = relaxed_order``): the scan goes on past the first candidate
  list until n rows pass the filter, so a user holding 1% of the chunks still gets a full top-n.
  ``relaxed_order`` may return rows slightly out of order, so the scan is asked for 4n rows (at
  least 40), sorted again by distance, and the nearest n kept.
- PostgreSQL, keyword: the GIN index over ``to_tsvector('english', text)``, any of the query's
  words, ranked by ``ts_rank_cd``.
- SQLite, vector: exact cosine in process over the user's candidate chunks (SQLite has no
  vector index; a user's chunks of one base are a bounded set).
- SQLite, keyword: FTS5 (Porter stemming), ranked by BM25. Its statement embeds the scoped chunk
  query as ``rowid IN (...)``, so it carries the same owner clause.
- hybrid: reciprocal rank fusion of both lists, ``w_v / (k + rank_v) + w_k / (k + rank_k)``.
  ``k`` and the weights are parameters: the customary k=60 flattens the ranks so much that a
  lexical list can drown the semantic one; the defaults here are what bench/README.md measured.

Metadata filters (``knowledge_filters``) are equality on keys of the chunk metadata (the
content's metadata, plus the reader's page/heading keys), applied in the same query.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connections, transaction
from django.db.models import BooleanField, FloatField
from django.db.models.expressions import RawSQL
from django.db.models.fields.json import KeyTransform

from agents.runtime.knowledge import KnowledgeHit
from core.tenancy import queryset_sql_reason, marked

from ..embedders import embedder_get
from ..models import Chunk, Content, KnowledgeBase
from .bases import User, readable

SEARCH_TYPES = ("vector", "keyword", "hybrid")
MAX_LIMIT = 100
MAX_QUERY_WORDS = 32
# The HNSW scan is asked for more rows than it returns, the best n of them kept: with
# relaxed_order, a row found late may be nearer than one found early, and a scan stopped at the
# n-th row that passes the tenant filter misses it (bench/knowledge_search.py: recall@10 of a 1%
# user 0.94 at ef_search 100 when stopped at 10).
HNSW_FETCH_FACTOR = 4
HNSW_MIN_FETCH = 40
# Reciprocal rank fusion's defaults (see the module's docstring).
RRF_K = 10
VECTOR_WEIGHT = 1.0
KEYWORD_WEIGHT = 0.5
_WORD = re.compile(r"\w+")
PG_DOCUMENT = "to_tsvector('english', \"knowledge_chunks\".\"text\")"  # the expression of migration 0002's index


class SearchError(ValueError):
    """A search that cannot be run as asked (bad type, limit or filters): a client error."""


@dataclass
class SearchHit:
    chunk_id: str
    content_id: str
    name: str
    text: str
    score: float
    metadata: dict[str, Any] = field(default_factory=dict)
    origin: str = ""  # the content's URL or file name
    user_id: str | None = None  # the chunk's owner (None: shared)

    def to_knowledge_hit(self) -> KnowledgeHit:
        return KnowledgeHit(
            content=self.text, name=self.name, content_id=self.content_id, chunk_id=self.chunk_id, score=self.score, meta_data=dict(self.metadata),
        )


def _check_filters(filters: Any) -> dict[str, Any]:
    if filters is None:
        return {}
    if not isinstance(filters, dict):
        raise SearchError("knowledge_filters must be an object of metadata keys and values")
    for key, value in filters.items():
        if not isinstance(key, str) or not key:
            raise SearchError("knowledge_filters keys must be non-empty strings")
        if not (value is None or isinstance(value, (str, int, float, bool))):
            raise SearchError(f"knowledge_filters[{key!r}] must be a string, number, boolean or null")
    return filters


def _candidates(*, user: User, base: KnowledgeBase, filters: dict[str, Any]) -> Any:
    """The chunks the search may return: readable by ``user``, of this base and its active
    embedder, matching the filters (a scoped queryset, not evaluated)."""
    chunks = readable(Chunk.objects, user).filter(base_id=base.pk, embedder_id=base.embedder_id)
    for number, (key, value) in enumerate(filters.items()):
        # KeyTransform quotes the key as one JSON path element, whatever it holds ("a__b" is a key).
        alias = f"_filter_{number}"
        chunks = chunks.alias(**{alias: KeyTransform(key, "metadata")})
        chunks = chunks.filter(**({f"{alias}__isnull": True} if value is None else {alias: value}))
    return chunks


def _vector_ranked(chunks: Any, query_vector: list[float], n: int) -> list[tuple[int, float]]:
    """(chunk id, cosine similarity), best first."""
    if connections[chunks.db].vendor == "postgresql":
        from pgvector.django import CosineDistance

        with transaction.atomic(using=chunks.db):
            with connections[chunks.db].cursor() as cursor:
                cursor.execute(
                    "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', %s, true)",
                    [str(max(settings.KNOWLEDGE_HNSW_EF_SEARCH, n))],
                )
            fetch = max(n * HNSW_FETCH_FACTOR, HNSW_MIN_FETCH)
            rows = list(chunks.annotate(distance=CosineDistance("embedding", query_vector)).order_by("distance").values_list("id", "distance")[:fetch])
        rows.sort(key=lambda row: (row[1], row[0]))  # relaxed_order: nearly sorted only
        return [(chunk_id, 1.0 - float(distance)) for chunk_id, distance in rows[:n]]
    rows = list(chunks.values_list("id", "embedding"))
    if not rows:
        return []
    ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
    matrix = np.asarray([row[1] for row in rows], dtype=np.float32)
    scores = matrix @ np.asarray(query_vector, dtype=np.float32)  # unit vectors: the dot product is the cosine
    top = np.argsort(-scores, kind="stable")[:n]
    return [(int(ids[i]), float(scores[i])) for i in top]


def query_words(query: str) -> list[str]:
    words: list[str] = []
    for word in _WORD.findall(query.lower()):
        if word not in words:
            words.append(word[:64])
    return words[:MAX_QUERY_WORDS]


def _keyword_ranked(chunks: Any, query: str, n: int) -> list[tuple[int, float]]:
    """(chunk id, relevance), best first: chunks holding any of the query's words."""
    words = query_words(query)
    if not words:
        return []
    connection = connections[chunks.db]
    if connection.vendor == "postgresql":
        # Words are \w+ only, so the tsquery cannot be malformed; any word may match.
        tsquery = " | ".join(words)
        ranked = (
            chunks.filter(RawSQL(f"{PG_DOCUMENT} @@ to_tsquery('english', %s)", [tsquery], output_field=BooleanField()))
            .annotate(rank=RawSQL(f"ts_rank_cd({PG_DOCUMENT}, to_tsquery('english', %s))", [tsquery], output_field=FloatField()))
            .order_by("-rank", "id")
            .values_list("id", "rank")[:n]
        )
        return [(chunk_id, float(rank)) for chunk_id, rank in ranked]
    # SQLite FTS5: the scoped chunk query goes inside, so the statement carries its owner clause.
    reason = queryset_sql_reason(chunks)  # refuses an unscoped queryset
    inner_sql, inner_params = chunks.values("id").query.sql_with_params()
    match = " OR ".join(f'"{word}"' for word in words)
    sql = (
        "SELECT rowid, bm25(knowledge_chunks_fts) AS rank FROM knowledge_chunks_fts "
        f"WHERE knowledge_chunks_fts MATCH %s AND rowid IN ({inner_sql}) ORDER BY rank, rowid LIMIT %s"
    )
    with marked(reason), connection.cursor() as cursor:
        cursor.execute(sql, [match, *inner_params, n])
        rows = cursor.fetchall()
    return [(int(chunk_id), -float(rank)) for chunk_id, rank in rows]  # bm25(): lower is better


def fuse(rankings: list[tuple[list[int], float]], *, k: float, limit: int) -> list[tuple[int, float]]:
    """Reciprocal rank fusion of ranked id lists, each with its weight: (id, fused score)."""
    scores: dict[int, float] = {}
    for ranked, weight in rankings:
        for rank, chunk_id in enumerate(ranked, start=1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:limit]


def knowledge_search(
    *,
    user: User,
    base_id: str,
    query: str,
    search_type: str = "vector",
    limit: int = 5,
    filters: dict[str, Any] | None = None,
    rrf_k: float = RRF_K,
    vector_weight: float = VECTOR_WEIGHT,
    keyword_weight: float = KEYWORD_WEIGHT,
) -> list[SearchHit]:
    """The passages of base ``base_id`` best matching ``query`` that ``user`` may read (their own
    and the shared ones), best first. Raises ``KnowledgeBase.DoesNotExist`` for a base the user
    may not use and ``SearchError`` for a bad type, limit or filter. Three or four queries."""
    if search_type not in SEARCH_TYPES:
        raise SearchError(f"search_type must be one of {', '.join(SEARCH_TYPES)}")
    if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise SearchError(f"limit must be between 1 and {MAX_LIMIT}")
    if rrf_k < 0 or vector_weight < 0 or keyword_weight < 0:
        raise SearchError("rrf_k and the weights must not be negative")
    filters = _check_filters(filters)
    base = readable(KnowledgeBase.objects, user).get(pk=base_id)
    query = (query or "").strip()
    if not query:
        return []
    chunks = _candidates(user=user, base=base, filters=filters)
    depth = limit if search_type != "hybrid" else max(limit * 4, 20)
    if search_type == "keyword":
        ranked = _keyword_ranked(chunks, query, limit)
    else:
        vector = embedder_get(base.embedder_id).embed([query])[0]
        ranked = _vector_ranked(chunks, vector, depth)
        if search_type == "hybrid":
            keyword = _keyword_ranked(chunks, query, depth)
            ranked = fuse([([i for i, _ in ranked], vector_weight), ([i for i, _ in keyword], keyword_weight)], k=rrf_k, limit=limit)
    return _hits(user, ranked[:limit])


def _hits(user: User, ranked: list[tuple[int, float]]) -> list[SearchHit]:
    if not ranked:
        return []
    ids = [chunk_id for chunk_id, _ in ranked]
    chunks = {row["id"]: row for row in readable(Chunk.objects, user).filter(pk__in=ids).values("id", "content_id", "text", "metadata", "user_id")}
    content_ids = {row["content_id"] for row in chunks.values()}
    contents = {
        row["id"]: row for row in readable(Content.objects, user).filter(pk__in=content_ids).values("id", "name", "file_name", "url")
    }
    hits = []
    for chunk_id, score in ranked:
        chunk = chunks.get(chunk_id)
        content = contents.get(chunk["content_id"]) if chunk else None
        if chunk is None or content is None:
            continue  # deleted between the ranking and this read
        hits.append(SearchHit(
            chunk_id=str(chunk_id), content_id=content["id"], name=content["name"], text=chunk["text"], score=round(score, 6),
            metadata=chunk["metadata"] or {}, origin=content["url"] or content["file_name"], user_id=chunk["user_id"],
        ))
    return hits
