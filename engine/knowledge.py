"""What an agent needs of a knowledge base: search it on behalf of a user.

The runtime knows no storage. A knowledge source is anything with ``asearch``; the Django side
(``knowledge/``) provides one per knowledge base, scoped to the user the run belongs to, and
tests can pass a list in memory. A hit keeps what AgentOS reports as a run's ``references``:
the passage, where it came from, and how well it matched.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class KnowledgeHit:
    content: str
    name: str = ""  # the content (document) the passage is from
    content_id: str | None = None
    chunk_id: str | None = None
    score: float = 0.0
    meta_data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "name": self.name,
            "content_id": self.content_id,
            "chunk_id": self.chunk_id,
            "score": self.score,
            "meta_data": dict(self.meta_data),
        }


@runtime_checkable
class KnowledgeSource(Protocol):
    """A searchable knowledge base. ``user_id`` is the run's user: a source answers only with
    passages that user may read (their own and the shared ones), never another user's."""

    name: str

    async def asearch(
        self,
        query: str,
        *,
        user_id: str | None,
        limit: int = 5,
        filters: dict[str, Any] | None = None,
    ) -> list[KnowledgeHit]: ...
