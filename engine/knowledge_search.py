"""Beside the knowledge contract (``knowledge.py``): what the run loop does with a source, and
sources that live in memory.

``StaticKnowledge`` is a base of fixed passages (code agents, tests, the offline demo);
``CombinedKnowledge`` searches several sources as one. The rest are Agno's rules for filters
and for a run's ``references`` (``MessageReferences``: ``{query, references, time}``).
"""
from __future__ import annotations

import asyncio
import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from engine.knowledge import KnowledgeHit, KnowledgeSource

REFERENCES_FORMATS = ("json", "yaml")
_WORD = re.compile(r"\w+", re.UNICODE)
# Words too common to say anything about a passage; kept short on purpose (an honest baseline).
_STOPWORDS = frozenset(
    "a an and are as at be by can do does for from has have how i in is it its me my of on or our so "
    "that the their there this to was we what when where which who why will with you your".split()
)


def _terms(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]


class StaticKnowledge:
    """A knowledge base held in memory: for code agents with a few fixed passages, tests and the
    offline demo. Scoring is plainly lexical: the idf-weighted share of the query's words that a
    passage contains (1.0 when it has all of them); passages sharing no word are not returned.

    ``passages`` are strings, ``KnowledgeHit``s or dicts with ``content`` and optionally
    ``name``, ``content_id``, ``chunk_id``, ``meta_data`` and ``user_id`` (a passage with a
    ``user_id`` is visible to that user only; without one, to everyone).
    """

    def __init__(self, name: str, passages: Sequence[str | KnowledgeHit | Mapping[str, Any]], *, id: str | None = None, description: str | None = None) -> None:
        self.name = name
        self.id = id or name
        self.description = description
        self._passages: list[tuple[KnowledgeHit, str | None, Counter[str]]] = []
        for index, passage in enumerate(passages):
            owner = None
            if isinstance(passage, str):
                hit = KnowledgeHit(content=passage, name=name, chunk_id=f"{self.id}:{index}")
            elif isinstance(passage, KnowledgeHit):
                hit = passage
            else:
                owner = passage.get("user_id")
                hit = KnowledgeHit(
                    content=str(passage["content"]),
                    name=str(passage.get("name") or name),
                    content_id=passage.get("content_id"),
                    chunk_id=passage.get("chunk_id") or f"{self.id}:{index}",
                    meta_data=dict(passage.get("meta_data") or {}),
                )
            self._passages.append((hit, owner, Counter(_terms(hit.content + " " + hit.name))))
        documents = len(self._passages)
        frequency: Counter[str] = Counter()
        for _, _, terms in self._passages:
            frequency.update(terms.keys())
        self._idf = {term: math.log(1 + documents / count) for term, count in frequency.items()}

    @property
    def filter_keys(self) -> set[str]:
        """The metadata keys its passages carry: what agentic filters may name."""
        return {key for hit, _, _ in self._passages for key in hit.meta_data}

    async def asearch(
        self, query: str, *, user_id: str | None, limit: int = 5, filters: dict[str, Any] | None = None
    ) -> list[KnowledgeHit]:
        wanted = set(_terms(query))
        if not wanted or limit <= 0:
            return []
        total = sum(self._idf.get(term, math.log(2)) for term in wanted)
        scored: list[tuple[float, int, KnowledgeHit]] = []
        for index, (hit, owner, terms) in enumerate(self._passages):
            if owner is not None and owner != user_id:
                continue
            if filters and not _matches(hit.meta_data, filters):
                continue
            score = sum(self._idf[term] for term in wanted if term in terms) / total
            if score > 0:
                scored.append((score, index, hit))
        scored.sort(key=lambda item: (-item[0], item[1]))
        return [replace(hit, score=round(score, 4)) for score, _, hit in scored[:limit]]

    def __repr__(self) -> str:
        return f"<StaticKnowledge {self.name!r} passages={len(self._passages)}>"


def _matches(meta_data: Mapping[str, Any], filters: Mapping[str, Any]) -> bool:
    for key, value in filters.items():
        have = meta_data.get(key)
        if isinstance(value, (list, tuple, set)):
            if have not in value:
                return False
        elif have != value:
            return False
    return True


class CombinedKnowledge:
    """Several knowledge sources searched as one (an agent given more than one base): each is
    asked for ``limit`` hits at once, and the best ``limit`` by score are kept."""

    def __init__(self, sources: Sequence[KnowledgeSource]) -> None:
        if not sources:
            raise ValueError("CombinedKnowledge needs at least one source")
        self.sources = list(sources)
        self.name = ", ".join(source.name for source in self.sources)

    @property
    def filter_keys(self) -> set[str]:
        return set().union(*(set(getattr(source, "filter_keys", ()) or ()) for source in self.sources))

    async def asearch(
        self, query: str, *, user_id: str | None, limit: int = 5, filters: dict[str, Any] | None = None
    ) -> list[KnowledgeHit]:
        found = await asyncio.gather(
            *(source.asearch(query, user_id=user_id, limit=limit, filters=filters) for source in self.sources)
        )
        hits = [hit for hits in found for hit in hits]
        hits.sort(key=lambda hit: -hit.score)  # stable: equal scores keep the sources' order
        return hits[:limit]


def knowledge_source(knowledge: KnowledgeSource | Sequence[KnowledgeSource] | None) -> KnowledgeSource | None:
    """What ``Agent(knowledge=...)`` takes, as one source: a source, a list of them, or None."""
    if knowledge is None:
        return None
    if isinstance(knowledge, (list, tuple)):
        sources = [knowledge_source(item) for item in knowledge]
        found = [source for source in sources if source is not None]
        if not found:
            return None
        return found[0] if len(found) == 1 else CombinedKnowledge(found)
    if not isinstance(knowledge, KnowledgeSource):
        raise TypeError(f"knowledge must have a name and an async asearch(), not {type(knowledge).__name__}")
    return knowledge


def effective_filters(agent_filters: Mapping[str, Any] | None, run_filters: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Agno's ``get_effective_filters``: the agent's filters, updated with the run's."""
    merged = {**(agent_filters or {}), **(run_filters or {})}
    return merged or None


def agentic_filters(model_filters: Any, user_filters: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Agno's ``get_agentic_or_user_search_filters``: filters the model chose (a list of
    ``{key, value}`` or plain dicts) are used only when the user and agent set none; theirs win."""
    chosen: dict[str, Any] = {}
    for item in model_filters or []:
        if isinstance(item, Mapping):
            if set(item) == {"key", "value"}:
                chosen[str(item["key"])] = item["value"]
            else:
                chosen.update(item)
    if user_filters:
        return dict(user_filters)
    return chosen or None


def references_entry(query: str, hits: Sequence[KnowledgeHit], elapsed: float) -> dict[str, Any]:
    """One item of a run's ``references`` (Agno's ``MessageReferences``)."""
    return {"query": query, "references": [hit.to_dict() for hit in hits], "time": round(elapsed, 4)}


def documents_text(hits: Sequence[KnowledgeHit], references_format: str) -> str:
    """The passages as the model reads them (Agno's ``Document.to_dict``: content, name, meta_data)."""
    docs = [{"content": hit.content, "name": hit.name or None, "meta_data": dict(hit.meta_data) or None} for hit in hits]
    docs = [{key: value for key, value in doc.items() if value is not None} for doc in docs]
    if references_format == "yaml":
        import yaml  # PyYAML, which drf-spectacular already needs; only read when asked for

        return yaml.dump(docs, allow_unicode=True, default_flow_style=False)
    return json.dumps(docs, indent=2, ensure_ascii=False, default=str)


# What add_knowledge_to_context appends to the user's message (Agno's words), before the passages.
REFERENCES_INTRO = "\n\nUse the following references from the knowledge base if it helps:\n<references>\n"
SEARCH_TOOL_NAME = "search_knowledge_base"


def references_kept(references: Sequence[Mapping[str, Any]] | None, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]] | None:
    """The references a cut transcript still accounts for (a retry or fork from a message): a
    search whose tool result it keeps, or the passages added to a user message it keeps."""
    if not references:
        return None
    queries: set[str] = set()
    for message in messages:
        content = message.get("content")
        if message.get("role") == "tool" and message.get("tool_name") == SEARCH_TOOL_NAME:
            query = (message.get("tool_args") or {}).get("query")
            if isinstance(query, str):
                queries.add(query)
        elif message.get("role") == "user" and isinstance(content, str) and REFERENCES_INTRO in content:
            queries.add(content.split(REFERENCES_INTRO, 1)[0])
    kept = [dict(entry) for entry in references if entry.get("query") in queries]
    return kept or None
