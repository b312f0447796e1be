"""The kinds of component this server runs, and where each kind's roster comes from.

An app that provides a kind registers it once, from its ``AppConfig.ready`` (agents today; teams
and workflows are one more registration each). Discovery (``/info``, ``/config``) and every
surface that names a component by kind and id read this registry, so ``core`` never imports the
apps that provide components, and a component's session type follows its kind.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


class Component(Protocol):
    """What every registered component offers (``agents.registry.AgentEntry`` is one)."""

    kind: str
    session_type: str
    component_id: str
    name: str
    description: str | None
    version: int | None
    stage: str | None


@dataclass(frozen=True)
class ComponentKind:
    kind: str  # "agent"
    family: str  # its API family, and its scope family: "agents"
    session_type: str  # the type of the sessions its runs live in
    list: Callable[[], list[Any]]  # every live component of the kind
    get: Callable[..., Any]  # (component_id, *, version=None) -> the component or None
    summary: Callable[[Any], dict[str, Any]]  # its entry in /config
    # The kind's components defined in code, by id: a dictionary, no query (their settings, such
    # as ``tracing``, read on every run's start).
    code: Callable[[], dict[str, Any]] = dict


_kinds: dict[str, ComponentKind] = {}


def register(kind: ComponentKind) -> None:
    """Add a kind (idempotent for the same kind: ``ready`` may run twice in tests)."""
    _kinds[kind.kind] = kind


def kind_get(kind: str) -> ComponentKind | None:
    return _kinds.get(kind)


def component_list(kind: str) -> list[Any]:
    """The kind's live components; none for a kind no app provides (yet)."""
    found = _kinds.get(kind)
    return found.list() if found is not None else []


def component_get(kind: str, component_id: str, *, version: int | None = None) -> Any | None:
    found = _kinds.get(kind)
    return found.get(component_id, version=version) if found is not None else None


def code_component(kind: str, component_id: str) -> Any | None:
    """The kind's code-defined component ``component_id`` (its registry entry), or None: no query."""
    found = _kinds.get(kind)
    return found.code().get(component_id) if found is not None else None


def component_summaries(kind: str, visible: Callable[[str], bool]) -> list[dict[str, Any]]:
    """The /config entries of the kind's components that ``visible(component_id)`` lets through."""
    found = _kinds.get(kind)
    if found is None:
        return []
    return [found.summary(component) for component in found.list() if visible(component.component_id)]


# Sections of /config that an app fills in (the agents app: "knowledge", from its knowledge
# bases hook), so core imports no app. A builder gets the caller's principal.
_config_sections: dict[str, Callable[[Any], Any]] = {}


def register_config_section(name: str, build: Callable[[Any], Any]) -> None:
    _config_sections[name] = build


def config_section(name: str, principal: Any) -> Any | None:
    build = _config_sections.get(name)
    return build(principal) if build is not None else None
