"""Rerankers: a second, finer ordering of a search's candidates, after fusion.

A search asks its ranking for more candidates than it answers (``KNOWLEDGE_RERANK_CANDIDATES``),
and a reranker reads the query beside each candidate's text and keeps the best ``top_n``, each
with its ``reranking_score`` (AgentOS's ``VectorSearchResult.reranking_score``, in [-1, 1]).

- ``remote:<model>``: an endpoint speaking the common ``/rerank`` API (Cohere, Jina, Infinity,
  vLLM; not TEI's own, which takes ``texts``): ``POST {model, query, documents, top_n}`` answers
  ``{results: [{index, relevance_score}]}``. Its URL, key and timeout are settings
  (``KNOWLEDGE_RERANKER_URL``, ``KNOWLEDGE_RERANKER_API_KEY``, ``KNOWLEDGE_RERANKER_TIMEOUT_SECONDS``).
- ``fastembed:<model>``: a cross-encoder run locally by fastembed's ``TextCrossEncoder``
  (``Xenova/ms-marco-MiniLM-L-6-v2``, ``BAAI/bge-reranker-base``...), downloaded on first use
  where the machine can reach the model hub. No PyPI package ships a cross-encoder's files that
  fastembed or ONNX Runtime can load (README, "Reranking"), so there is no offline default.

A reranker that fails (an endpoint down, slow or answering nonsense, a model that cannot be
loaded) raises ``RerankerError``; the search then keeps its own order and logs a warning: a
reranker makes answers better, its absence must not make them fail.
"""
from __future__ import annotations

import math
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from django.conf import settings

if TYPE_CHECKING:
    from .services.search import SearchHit

NO_RERANKER = "none"
RERANKER_KINDS = ("remote", "fastembed")


class RerankerError(RuntimeError):
    """The reranker could not rank (unreachable, timed out, a malformed answer, no model)."""


class Reranker(Protocol):
    id: str

    def rerank(self, query: str, hits: Sequence[SearchHit], top_n: int) -> list[SearchHit]:
        """The best ``top_n`` of ``hits`` for ``query``, best first, each with its
        ``reranking_score``. Raises ``RerankerError`` when it cannot rank."""
        ...


def _bounded(scores: list[float]) -> list[float]:
    """Scores in AgentOS's [-1, 1]: as they are when they already are (Cohere's and Jina's
    relevance), else through the logistic function, which keeps their order (raw logits)."""
    if all(-1.0 <= score <= 1.0 for score in scores):
        return scores
    return [_sigmoid(score) for score in scores]


def _sigmoid(value: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, value))))


def _ordered(hits: Sequence[SearchHit], scores: dict[int, float], top_n: int) -> list[SearchHit]:
    """The hits the scores name, best score first (ties: the search's own order)."""
    order = sorted(scores, key=lambda index: (-scores[index], index))[:top_n]
    return [replace(hits[index], reranking_score=round(scores[index], 6)) for index in order]


# ---- the /rerank HTTP API ------------------------------------------------------------------------

@dataclass
class RemoteReranker:
    id: str
    model: str
    url: str
    api_key: str | None = None
    timeout: float = 10.0

    def rerank(self, query: str, hits: Sequence[SearchHit], top_n: int) -> list[SearchHit]:
        if not hits:
            return []
        import httpx

        headers = {"Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        body = {"model": self.model, "query": query, "documents": [hit.text for hit in hits], "top_n": min(top_n, len(hits))}
        try:
            # One deadline for connecting, sending and reading: a reranker that hangs must not
            # hold a search (and the run waiting on it) longer than the setting says.
            response = httpx.post(self.url, json=body, headers=headers, timeout=httpx.Timeout(self.timeout), follow_redirects=False)
        except httpx.TimeoutException:
            raise RerankerError(f"{self.id}: no answer within {self.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise RerankerError(f"{self.id}: {type(exc).__name__}") from None
        if response.status_code != 200:
            raise RerankerError(f"{self.id}: HTTP {response.status_code}")
        try:
            results = response.json()["results"]
            scores = {}
            for result in results:
                index, score = result["index"], result["relevance_score"]
                if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(hits) or index in scores:
                    raise ValueError("index")
                if not isinstance(score, (int, float)) or isinstance(score, bool) or not math.isfinite(score):
                    raise ValueError("relevance_score")
                scores[index] = float(score)
        except (ValueError, KeyError, TypeError):
            raise RerankerError(f"{self.id}: the answer is not {{results: [{{index, relevance_score}}]}}") from None
        if not scores:
            raise RerankerError(f"{self.id}: no results")
        indexes = list(scores)
        return _ordered(hits, dict(zip(indexes, _bounded([scores[index] for index in indexes]))), top_n)


# ---- a local cross-encoder (fastembed) ------------------------------------------------------------

_loaded: dict[str, object] = {}
_load_lock = threading.Lock()


def _cross_encoder(model_name: str) -> object:
    with _load_lock:
        model = _loaded.get(model_name)
        if model is None:
            from fastembed.rerank.cross_encoder import TextCrossEncoder

            model = TextCrossEncoder(model_name=model_name, threads=max(1, min(4, os.cpu_count() or 1)))
            _loaded[model_name] = model
        return model


@dataclass
class FastEmbedReranker:
    id: str
    model_name: str

    def rerank(self, query: str, hits: Sequence[SearchHit], top_n: int) -> list[SearchHit]:
        if not hits:
            return []
        try:
            model = _cross_encoder(self.model_name)
            logits = [float(value) for value in model.rerank(query, [hit.text for hit in hits], batch_size=32)]  # type: ignore[attr-defined]
        except Exception as exc:  # noqa: BLE001 - the model hub, files on disk, ONNX Runtime: any of them fails as a RerankerError
            raise RerankerError(f"{self.id}: {type(exc).__name__}: {str(exc)[:200]}") from None
        # Raw logits, as sentence-transformers' CrossEncoder reads them through a sigmoid.
        return _ordered(hits, {index: _sigmoid(value) for index, value in enumerate(logits)}, top_n)


def reranker_id_check(reranker_id: str) -> str:
    """``reranker_id`` if it names a reranker (``remote:<model>``, ``fastembed:<model>``), else a
    ValueError saying what would."""
    kind, _, name = reranker_id.partition(":")
    if kind not in RERANKER_KINDS or not name.strip():
        raise ValueError(f"Unknown reranker {reranker_id!r}: use 'remote:<model>' or 'fastembed:<model>'")
    return reranker_id


def reranker_get(reranker_id: str) -> Reranker:
    """The reranker an id names. ValueError for an id that names none, or a remote one without
    ``KNOWLEDGE_RERANKER_URL``."""
    kind, _, name = reranker_id_check(reranker_id).partition(":")
    if kind == "remote":
        if not settings.KNOWLEDGE_RERANKER_URL:
            raise ValueError(f"{reranker_id} needs KNOWLEDGE_RERANKER_URL (the endpoint's /rerank URL)")
        return RemoteReranker(
            id=reranker_id, model=name, url=settings.KNOWLEDGE_RERANKER_URL, api_key=settings.KNOWLEDGE_RERANKER_API_KEY,
            timeout=settings.KNOWLEDGE_RERANKER_TIMEOUT_SECONDS,
        )
    return FastEmbedReranker(id=reranker_id, model_name=name)


def default_reranker_id() -> str | None:
    """The deployment's reranker (``KNOWLEDGE_RERANKER``), or None when searches are not reranked."""
    return settings.KNOWLEDGE_RERANKER or None
