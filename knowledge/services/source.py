"""The runtime's knowledge contract (``engine.knowledge.KnowledgeSource``) over a base.

``BaseSource("docs")`` is what an agent's ``knowledge=`` holds: the base is looked up by name when
searched (its own base first, else the shared one, as the run's user sees them), so an agent can
be defined before its base exists. ``reranker`` picks the base's reranking as the agent uses it: a
reranker's id (``"remote:<model>"``, ``"fastembed:<model>"``), ``"none"``, or None for the
deployment's (``KNOWLEDGE_RERANKER``). The search is database and CPU work (the query's embedding):
it runs in the run threads (``jobs.services.executor``), as the engine's database phases do,
never on the event loop.
"""
from __future__ import annotations

from typing import Any

from engine.knowledge import KnowledgeHit
from jobs.services.executor import in_run_thread

from ..rerankers import NO_RERANKER, reranker_id_check
from .bases import base_get_by_name
from .search import KEYWORD_WEIGHT, RRF_K, VECTOR_WEIGHT, knowledge_search


class BaseSource:
    def __init__(
        self, base_name: str, *, search_type: str = "vector", rrf_k: float = RRF_K, vector_weight: float = VECTOR_WEIGHT,
        keyword_weight: float = KEYWORD_WEIGHT, reranker: str | None = None,
    ) -> None:
        if reranker is not None and reranker != NO_RERANKER:
            reranker_id_check(reranker)  # a typo fails where the agent is defined, not at its first search
        self.name = base_name
        self.search_type = search_type
        self.reranker = reranker
        self.rrf_k, self.vector_weight, self.keyword_weight = rrf_k, vector_weight, keyword_weight

    def __repr__(self) -> str:
        return f"BaseSource({self.name!r}, search_type={self.search_type!r})"

    def search(self, query: str, *, user_id: str | None, limit: int = 5, filters: dict[str, Any] | None = None) -> list[KnowledgeHit]:
        """The blocking search (a sync caller, a thread)."""
        base = base_get_by_name(user=user_id, name=self.name)
        if base is None:
            return []
        hits = knowledge_search(
            user=user_id, base_id=base.pk, query=query, search_type=self.search_type, limit=limit, filters=filters,
            rrf_k=self.rrf_k, vector_weight=self.vector_weight, keyword_weight=self.keyword_weight, reranker=self.reranker,
        )
        return [hit.to_knowledge_hit() for hit in hits]

    async def asearch(
        self, query: str, *, user_id: str | None, limit: int = 5, filters: dict[str, Any] | None = None,
    ) -> list[KnowledgeHit]:
        return await in_run_thread(self.search, query, user_id=user_id, limit=limit, filters=filters)
