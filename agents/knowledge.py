"""Knowledge bases by name, for agents defined in the admin and for ``/config``.

The agents app knows no storage. The knowledge app registers one provider when it starts
(``register_knowledge_bases(...)`` in its ``AppConfig.ready``); until one is registered there
are no bases, and an admin agent cannot name one. A provider answers two questions: which bases
exist (``bases()``, what ``/config`` lists) and the source for a name (``source(name)``, a
``KnowledgeSource`` whose ``asearch`` is scoped by the run's ``user_id``).

An agent names its bases; they are resolved at each search (``NamedKnowledge``), so a base
created, rebuilt or removed after the agent was built is seen as it is now: a base that is
gone is a tool error the model reads ("Error searching knowledge base: KnowledgeBaseNotFound"),
never a crashed run.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from engine.knowledge import KnowledgeHit, KnowledgeSource


@dataclass(frozen=True)
class KnowledgeBaseInfo:
    """One base as ``/config`` lists it (``knowledge_instances``)."""

    id: str
    name: str
    description: str | None = None


class KnowledgeBases(Protocol):
    """``bases()`` is read by ``/config`` and the admin's validation (sync, may query).
    ``source(name)`` is called on the run's event loop at each search, so it must not block:
    return a source for the name without I/O (its ``asearch`` does the I/O, and may raise when
    the base has gone), or None for a name it knows it does not hold."""

    def bases(self) -> Sequence[KnowledgeBaseInfo]: ...

    def source(self, name: str) -> KnowledgeSource | None: ...


class KnowledgeBaseNotFound(LookupError):
    pass


_provider: KnowledgeBases | None = None


def register_knowledge_bases(provider: KnowledgeBases | None) -> KnowledgeBases | None:
    """Make ``provider`` the one the agents read (None: no bases). Returns the previous one."""
    global _provider
    previous, _provider = _provider, provider
    return previous


@contextmanager
def knowledge_bases_registered(provider: KnowledgeBases | None) -> Iterator[None]:
    """``register_knowledge_bases`` for the length of a block (tests)."""
    previous = register_knowledge_bases(provider)
    try:
        yield
    finally:
        register_knowledge_bases(previous)


def knowledge_base_list() -> list[KnowledgeBaseInfo]:
    return list(_provider.bases()) if _provider is not None else []


def knowledge_source(name: str) -> KnowledgeSource | None:
    """The source of the base called ``name``, or None when there is none."""
    return _provider.source(name) if _provider is not None else None


def unknown_knowledge_bases(names: Sequence[str]) -> list[str]:
    known = {base.name for base in knowledge_base_list()}
    return [name for name in names if name not in known]


class NamedKnowledge:
    """A base named by an admin-defined agent, looked up through the provider at each search."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def asearch(self, query: str, *, user_id: str | None, limit: int = 5, filters: dict[str, Any] | None = None) -> list[KnowledgeHit]:
        source = knowledge_source(self.name)
        if source is None:
            raise KnowledgeBaseNotFound(self.name)
        return await source.asearch(query, user_id=user_id, limit=limit, filters=filters)

    def __repr__(self) -> str:
        return f"<NamedKnowledge {self.name!r}>"


def named_knowledge(names: Sequence[str] | None) -> list[NamedKnowledge] | None:
    """What ``Agent(knowledge=...)`` gets for a definition's list of base names."""
    return [NamedKnowledge(name) for name in names] if names else None


def knowledge_instances(principal: Any) -> list[dict[str, Any]]:
    """``/config``'s knowledge instances (``{id, name, description?}``): the registered bases,
    then the sources of the code agents and teams the caller may see that are not among them
    (a ``StaticKnowledge`` of a code agent, say)."""
    from core.components import component_list

    found: dict[str, dict[str, Any]] = {}
    for base in knowledge_base_list():
        found.setdefault(base.name, _instance(base.id, base.name, base.description))
    for kind, family in (("agent", "agents"), ("team", "teams")):
        visible = principal.visible_ids(family)
        for entry in component_list(kind):
            if visible is not None and entry.component_id not in visible:
                continue
            for source in _sources(getattr(entry.template, "knowledge", None)):
                if not isinstance(source, NamedKnowledge):
                    found.setdefault(source.name, _instance(str(getattr(source, "id", None) or source.name), source.name, getattr(source, "description", None)))
    return list(found.values())


def _instance(id: str, name: str, description: str | None) -> dict[str, Any]:
    return {"id": id, "name": name, **({"description": description} if description else {})}


def _sources(knowledge: Any) -> list[Any]:
    if knowledge is None:
        return []
    inner = getattr(knowledge, "sources", None)
    return [s for source in inner for s in _sources(source)] if isinstance(inner, list) else [knowledge]
