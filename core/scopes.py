"""AgentOS's RBAC scope grammar (agentos-api.md §9.3).

* ``agent_os:admin`` (configurable, ``ADMIN_SCOPE``): everything; ``agent_os:*:admin`` is the same
  scope. ``holds_admin`` decides this for every credential (JWT, access token, service account).
* ``resource:action``: the action on every resource of the family (``sessions:read``).
* ``resource:<id>:action``: one resource (``agents:web-agent:run``); ``resource:*:action`` is
  the same as ``resource:action``.
* ``system`` is a legacy alias of ``config``.
* Anything with other than two or three parts never matches.
* A principal may delegate (put on a token it mints) only what it holds: ``scopes_not_held``.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

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

    @property
    def text(self) -> str:
        """As written on a token: ``resource:action`` or ``resource:<id>:action``."""
        return f"{self.resource}:{self.action}" if self.resource_id == "*" else f"{self.resource}:{self.resource_id}:{self.action}"

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


def _admin_scope() -> Scope | None:
    from django.conf import settings

    return Scope.parse(settings.ADMIN_SCOPE)


def holds_admin(held: Iterable[Scope]) -> bool:
    """Does any held scope make its holder an admin? The one test, for every kind of credential.

    The admin scope is granted only by name (``agent_os:admin`` or ``agent_os:*:admin``), never by
    an action wildcard: ``agent_os:*`` is not admin, so a holder of it cannot delegate admin.
    """
    admin = _admin_scope()
    return admin is not None and any(
        scope.resource == admin.resource and scope.action == admin.action and scope.resource_id in ("*", admin.resource_id)
        for scope in held
    )


def _covers(held: Scope, wanted: Scope) -> bool:
    return (
        held.resource == wanted.resource
        and held.resource_id in ("*", wanted.resource_id)
        and held.action in ("*", wanted.action)
    )


def scopes_not_held(held: Iterable[Scope], wanted: Iterable[str]) -> list[str]:
    """The scopes of ``wanted`` (as written) that ``held`` does not grant: what a principal holding
    ``held`` may not put on a token it creates. Empty when all may be delegated.

    A wildcard is delegable only from an equal or wider one (``agents:*:run`` gives
    ``agents:web:run``; ``agents:web:run`` does not give ``agents:run``); the admin scope only
    from an admin, who may delegate anything.
    """
    held = tuple(held)
    if holds_admin(held):
        return []
    refused: list[str] = []
    for raw in wanted:
        scope = Scope.parse(raw)
        if scope is None or holds_admin((scope,)) or not any(_covers(mine, scope) for mine in held):
            refused.append(raw)
    return refused
