"""Searching a base on behalf of a user: vector, full-text (keyword) and hybrid.

Whose chunks: the user's own and the shared ones (``bases.readable``), and only those of the
base's active embedder, in the same statement as the ranking:

- PostgreSQL, vector, a user with at most ``KNOWLEDGE_EXACT_SEARCH_MAX_CHUNKS`` candidate chunks:
  exact, their chunks read by the owner's index and all of them scored (one bounded count first).
- PostgreSQL, vector, a larger share: ``ORDER BY embedding <=> q LIMIT n`` over the HNSW index with the owner,
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
  ``k`` and the weights are parameters: with the customary k=60 and equal weights the fused
  list did no better than the vectors alone (bench/knowledge_quality.py, 24 questions on the
  README); k=10 with the lexical list at half weight was the best there, by one question, so it
  is the default, and the default search type stays ``vector`` until a larger set says more.

Reranking (``knowledge.rerankers``), when the search or the deployment asks for it, comes last:
the ranking above (fused, for hybrid) gives ``KNOWLEDGE_RERANK_CANDIDATES`` candidates (at least
``limit``; hybrid: at most what the fusion of its two plain-depth rankings holds), the reranker keeps the best ``limit`` with their ``reranking_score``. A reranker that
fails leaves the ranking's own top ``limit``, with a warning logged.

Metadata filters (``knowledge_filters``, ``knowledge.filters``: equality on keys, or Agno's
filter expressions) apply to the chunk metadata (the content's metadata, plus the reader's
page/heading keys), in the same query.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connections, transaction
from django.db.models import BinaryField, BooleanField, FloatField
from django.db.models.expressions import RawSQL

from engine.knowledge import KnowledgeHit
from core.tenancy import queryset_sql_reason, marked

from ..embedders import embedder_get
from ..filters import FilterError, apply_filters
from ..models import Chunk, Content, KnowledgeBase
from ..rerankers import NO_RERANKER, RerankerError, default_reranker_id, reranker_get
from .bases import User, readable

logger = logging.getLogger(__name__)

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
    reranking_score: float | None = None  # set when a reranker ordered the hits

    def to_knowledge_hit(self) -> KnowledgeHit:
        return KnowledgeHit(
            content=self.text, name=self.name, content_id=self.content_id, chunk_id=self.chunk_id,
            score=self.score if self.reranking_score is None else self.reranking_score, meta_data=dict(self.metadata),
        )


def _candidates(*, user: User, base: KnowledgeBase, filters: Any) -> Any:
    """The chunks the search may return: readable by ``user``, of this base and its active
    embedder, matching the filters (a scoped queryset, not evaluated)."""
    chunks = readable(Chunk.objects, user).filter(base_id=base.pk, embedder_id=base.embedder_id)
    try:
        return apply_filters(chunks, filters)
    except FilterError as exc:
        raise SearchError(f"knowledge_filters: {exc}") from None


def _vector_ranked(chunks: Any, query_vector: list[float], n: int) -> list[tuple[int, float]]:
    """(chunk id, cosine similarity), best first."""
    if connections[chunks.db].vendor == "postgresql":
        from pgvector.django import CosineDistance

        exact_max = settings.KNOWLEDGE_EXACT_SEARCH_MAX_CHUNKS
        with transaction.atomic(using=chunks.db):
            # A user with few chunks: read them by the owner's index and sort them all (exact,
            # and faster than walking the graph past everyone else's). Only index scans are
            # switched off, so the owner's index is still read, as a bitmap.
            exact = exact_max > 0 and chunks.values("id")[: exact_max + 1].count() <= exact_max
            with connections[chunks.db].cursor() as cursor:
                if exact:
                    cursor.execute("SELECT set_config('enable_indexscan', 'off', true)")
                else:
                    cursor.execute(
                        "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', %s, true)",
                        [str(max(settings.KNOWLEDGE_HNSW_EF_SEARCH, n))],
                    )
            fetch = n if exact else max(n * HNSW_FETCH_FACTOR, HNSW_MIN_FETCH)
            rows = list(chunks.annotate(distance=CosineDistance("embedding", query_vector)).order_by("distance").values_list("id", "distance")[:fetch])
        rows.sort(key=lambda row: (row[1], row[0]))  # relaxed_order: nearly sorted only
        return [(chunk_id, 1.0 - float(distance)) for chunk_id, distance in rows[:n]]
    # The stored float32 bytes as they are (the field's converter would build a list per row).
    raw = RawSQL('"knowledge_chunks"."embedding"', [], output_field=BinaryField())
    rows = list(chunks.annotate(_vector=raw).values_list("id", "_vector"))
    if not rows:
        return []
    ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
    matrix = np.frombuffer(b"".join(bytes(row[1]) for row in rows), dtype="<f4").reshape(len(rows), -1)
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
    # The full-text match runs once (materialized); the scoped chunk ids filter its rows. Written
    # as one WHERE, SQLite would run the match again for every chunk of the user.
    sql = (
        "WITH matched AS MATERIALIZED (SELECT rowid AS id, bm25(knowledge_chunks_fts) AS rank FROM knowledge_chunks_fts "
        "WHERE knowledge_chunks_fts MATCH %s) "
        f"SELECT id, rank FROM matched WHERE id IN ({inner_sql}) ORDER BY rank, id LIMIT %s"
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
    filters: Any = None,
    rrf_k: float = RRF_K,
    vector_weight: float = VECTOR_WEIGHT,
    keyword_weight: float = KEYWORD_WEIGHT,
    reranker: str | None = None,
) -> list[SearchHit]:
    """The passages of base ``base_id`` best matching ``query`` that ``user`` may read (their own
    and the shared ones), best first. ``reranker``: a reranker's id, ``"none"`` for no reranking,
    or None for the deployment's (``KNOWLEDGE_RERANKER``). Raises ``KnowledgeBase.DoesNotExist``
    for a base the user may not use and ``SearchError`` for a bad type, limit, filter or
    reranker. Three or four queries."""
    if search_type not in SEARCH_TYPES:
        raise SearchError(f"search_type must be one of {', '.join(SEARCH_TYPES)}")
    if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise SearchError(f"limit must be between 1 and {MAX_LIMIT}")
    if rrf_k < 0 or vector_weight < 0 or keyword_weight < 0:
        raise SearchError("rrf_k and the weights must not be negative")
    chosen = _reranker(reranker)
    base = readable(KnowledgeBase.objects, user).get(pk=base_id)
    chunks = _candidates(user=user, base=base, filters=filters)  # bad filters are refused, whatever the query
    query = (query or "").strip()
    if not query:
        return []
    wanted = limit if chosen is None else max(limit, settings.KNOWLEDGE_RERANK_CANDIDATES)
    # Hybrid fuses two rankings of the depth a plain search uses, whatever the candidates: a
    # deeper fusion would order even its top differently, and a reranker that fails must leave
    # the order the search has without one. The fused list holds up to twice the depth.
    depth = wanted if search_type != "hybrid" else max(limit * 4, 20)
    if search_type == "keyword":
        ranked = _keyword_ranked(chunks, query, wanted)
    else:
        vector = embedder_get(base.embedder_id).embed([query])[0]
        ranked = _vector_ranked(chunks, vector, depth)
        if search_type == "hybrid":
            keyword = _keyword_ranked(chunks, query, depth)
            ranked = fuse([([i for i, _ in ranked], vector_weight), ([i for i, _ in keyword], keyword_weight)], k=rrf_k, limit=wanted)
    hits = _hits(user, ranked[:wanted])
    if chosen is None or not hits:
        return hits[:limit]
    try:
        return chosen.rerank(query, hits, limit)
    except RerankerError as exc:
        # The ranking's own order is still an answer: a reranker that is down or slow must
        # not turn a search (or the run that asked for it) into an error.
        logger.warning("knowledge rerank failed", extra={"reranker": chosen.id, "error": str(exc), "candidates": len(hits)})
        return hits[:limit]


def _reranker(reranker_id: str | None) -> Any:
    """The reranker a search uses, or None (see ``knowledge_search``)."""
    if reranker_id is None:
        reranker_id = default_reranker_id()
    if not reranker_id or reranker_id == NO_RERANKER:
        return None
    try:
        return reranker_get(reranker_id)
    except ValueError as exc:
        raise SearchError(str(exc)) from None


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
