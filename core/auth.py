"""Who is calling: the principal every API view, consumer and task works on behalf of.

AgentOS semantics (agentos-api.md §4.2, §9.5): an authenticated identity wins over any
``user_id`` the request asserts; a caller bound to their identity ("isolated") only ever sees
and writes their own rows; an admin, or an open (no-auth) server, may act for any user.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .tenancy import ALL_USERS


@dataclass(frozen=True)
class Principal:
    user_id: str | None = None
    scopes: frozenset[str] = field(default_factory=frozenset)
    is_admin: bool = False
    # True when every read and write must be the caller's own (user isolation).
    isolated: bool = False
    # "none" | "security_key" | "jwt" | "session" | "token"
    via: str = "none"
    session_id: str | None = None

    # DRF reads these on request.user.
    @property
    def is_authenticated(self) -> bool:
        return self.via != "none"

    def read_scope(self, requested_user_id: str | None = None):
        """The core.tenancy scope for reads: forced to the caller when isolated."""
        if self.isolated:
            return self.user_id
        if requested_user_id:
            return requested_user_id
        return ALL_USERS

    def owner(self, requested_user_id: str | None = None) -> str | None:
        """Whose name a new row is written under."""
        if self.isolated:
            return self.user_id
        return self.user_id or requested_user_id or None


OPEN = Principal()


def principal_for_django_user(user) -> Principal:
    """A browser user logged in with Django's session: always bound to their own account."""
    return Principal(
        user_id=user.get_username(),
        is_admin=False,
        isolated=True,
        via="session",
    )
