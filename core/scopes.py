"""AgentOS's RBAC scope grammar (agentos-api.md §9.3).

* ``agent_os:admin`` (configurable): everything.
* ``resource:action``: the action on every resource of the family (``sessions:read``).
* ``resource:<id>:action``: one resource (``agents:web-agent:run``); ``resource:*:action`` is
  the same as ``resource:action``.
* ``system`` is a legacy alias of ``config``.
* Anything with other than two or three parts never matches.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

ACTIONS = ("read", "write", "delete", "run")
FAMILIES = (
    "config", "registry", "agents", "teams", "workflows", "sessions", "memories", "learnings", "knowledge",
    "filesystem", "metrics", "evals", "traces", "service_accounts", "schedules", "approvals", "components",
)


@dataclass(frozen=True)
class Scope:
    resource: str
    resource_id: str  # "*" for every resource of the family
    action: str

    @classmethod
    def parse(cls, text: str) -> Scope | None:
        parts = text.strip().split(":")
        if len(parts) == 2:
            resource, action, resource_id = parts[0], parts[1], "*"
        elif len(parts) == 3:
            resource, resource_id, action = parts
        else:
            return None
        if not resource or not action or not resource_id:
            return None
        if resource == "system":
            resource = "config"
        return cls(resource=resource, resource_id=resource_id, action=action)

    def allows(self, resource: str, action: str, resource_id: str | None) -> bool:
        if resource == "system":
            resource = "config"
        if self.resource != resource or self.action not in (action, "*"):
            return False
        if self.resource_id == "*":
            return True
        return resource_id is not None and self.resource_id == resource_id


def parse_scopes(values: Iterable[str] | str | None) -> tuple[Scope, ...]:
    if values is None:
        return ()
    if isinstance(values, str):
        values = values.replace(",", " ").split()
    return tuple(scope for scope in (Scope.parse(str(value)) for value in values) if scope is not None)


def allows(held: Iterable[Scope], resource: str, action: str, resource_id: str | None = None) -> bool:
    """Does any held scope grant ``resource[:resource_id]:action``?"""
    return any(scope.allows(resource, action, resource_id) for scope in held)


def readable_ids(held: Iterable[Scope], resource: str, action: str = "read") -> set[str] | None:
    """The ids of ``resource`` the scopes grant ``action`` on; ``None`` means all of them."""
    ids: set[str] = set()
    for scope in held:
        if scope.allows(resource, action, None):
            return None
        if scope.resource == (resource if resource != "system" else "config") and scope.action in (action, "*"):
            ids.add(scope.resource_id)
    return ids


def holds_family(held: Iterable[Scope], resource: str) -> bool:
    return any(scope.resource == resource for scope in held)
