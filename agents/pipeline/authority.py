"""The one authority: may this principal run this component? Every way a run starts asks here.

``run_authorize(principal, kind, component_id, version=...)`` decides from the principal's scopes
as they stand now (``<family>:run`` or ``<family>:<id>:run``, family ``agents|teams|workflows``)
and from the registry's stages (only an admin may pin a draft version; anyone else runs what is
published), and returns the registry entry to run. A refusal is ``RunForbidden``, which every
surface renders as AgentOS's 403 (``Insufficient permissions. Required scope(s): <family>:run``).

Who calls it: the run pipeline (``agents.pipeline.runs.run_prepare`` and ``continue_prepare``, and
the background submission in ``agents.pipeline.submit``), so the API, both WebSockets, the chat
(it talks to the API), the admin's run/retry/resume actions, a schedule's fire, an eval and an
agent's tool that starts work all pass through it; the schedule service and the eval service ask
it before they store what will run later.

Members and steps: a team's run scope covers its members, a workflow's covers its steps (as in
AgentOS); a member or a step is part of the component that was authorized, not a start of its own,
and is not checked again.
"""
from __future__ import annotations

from typing import Any

from core.auth import Principal
from core.errors import DomainError

from ..registry import entry_get, entry_version_get

FAMILIES = {"agent": "agents", "team": "teams", "workflow": "workflows"}


class ComponentNotFound(DomainError):
    """No live component of that kind and id: AgentOS's "Agent not found" / "Team not found"."""

    status_code, error_code = 404, "component_not_found"

    def __init__(self, kind: str) -> None:
        self.kind = kind
        super().__init__(f"{kind.capitalize()} not found")


class RunForbidden(DomainError):
    """The principal may not run the component: AgentOS's 403, word for word."""

    status_code, error_code = 403, "run_forbidden"

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.family = family_of(kind)
        super().__init__(f"Insufficient permissions. Required scope(s): {self.family}:run")


def family_of(kind: str) -> str:
    """The scope family of a component kind ("agent" -> "agents"); a family passes through."""
    return FAMILIES.get(kind, kind if kind in FAMILIES.values() else "agents")


def run_permitted(principal: Principal, kind: str, component_id: str | None) -> bool:
    """Does ``principal`` hold ``<family>:run`` on ``component_id`` (its scopes as they stand)?"""
    return principal.can(family_of(kind), "run", component_id)


def run_authorize(principal: Principal, kind: str, component_id: str, *, version: int | None = None) -> Any:
    """The registry entry ``principal`` may run, or RunForbidden (no run scope: checked first, so a
    refusal says nothing about whether the id exists) or ComponentNotFound (none, or a draft for
    anyone but an admin)."""
    if not run_permitted(principal, kind, component_id):
        raise RunForbidden(kind)
    if principal.is_admin and version is not None:
        return component_entry_pinned(component_id, kind=kind, version=version)
    return component_entry(component_id, kind=kind, version=version)


def component_entry(component_id: str, *, kind: str, version: int | None = None) -> Any:
    """The live component, or a published version of it; a draft is not found (ComponentNotFound).
    No authority is decided here: for a run already authorized (a worker's, a continuation's)."""
    entry = entry_get(kind, component_id, version=version)
    if entry is None:
        raise ComponentNotFound(kind)
    return entry


def component_entry_pinned(component_id: str, *, kind: str, version: int) -> Any:
    """Any stored version, drafts included: only for a run an admin asked for (``run_authorize``)."""
    entry = entry_version_get(kind, component_id, version=version)
    if entry is None:
        raise ComponentNotFound(kind)
    return entry


__all__ = ["ComponentNotFound", "FAMILIES", "RunForbidden", "component_entry", "component_entry_pinned", "family_of", "run_authorize", "run_permitted"]
