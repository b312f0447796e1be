"""Who is calling: the principal every API view, consumer and task works on behalf of.

AgentOS semantics (agentos-api.md §4.2, §9.5): an authenticated identity wins over any
``user_id`` the request asserts; a caller bound to their identity ("isolated") only ever sees
and writes their own rows; only an admin (or an open, no-auth server, or the security-key root)
may act for another user.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from .scopes import Scope, allows, holds_admin, holds_family, parse_scopes, readable_ids, scopes_not_held
from .tenancy import ALL_USERS

# A logged-in browser user may use every user-level capability on their own data.
BROWSER = "session"
# Whose name an anonymous guest's rows go under where rows without an owner are shared with every
# user (knowledge): a subject no token may claim (core.tokens.RESERVED_SUBJECTS).
GUEST_OWNER = "__guest__"


@dataclass(frozen=True)
class Principal:
    user_id: str | None = None
    scopes: tuple[Scope, ...] = ()
    is_admin: bool = False
    # True when every read and write must be the caller's own (user isolation).
    isolated: bool = False
    # "none" | "security_key" | "jwt" | "token" | "session" | "operator"
    via: str = "none"
    session_id: str | None = None
    token_id: int | None = None

    # DRF reads this on request.user.
    @property
    def is_authenticated(self) -> bool:
        return self.via != "none"

    @property
    def scope_enforced(self) -> bool:
        """Bearer tokens carry scopes; the open server, the security key and browser users do not."""
        return self.via in ("jwt", "token") and not self.is_admin

    def can(self, resource: str, action: str, resource_id: str | None = None) -> bool:
        return not self.scope_enforced or allows(self.scopes, resource, action, resource_id)

    def holds_any(self, resource: str) -> bool:
        return not self.scope_enforced or holds_family(self.scopes, resource)

    def visible_ids(self, resource: str, action: str = "read") -> set[str] | None:
        """Ids of ``resource`` this caller may ``action``; None means all."""
        return None if not self.scope_enforced else readable_ids(self.scopes, resource, action)

    def scopes_not_held(self, wanted: list[str]) -> list[str]:
        """What of ``wanted`` this caller may not put on a token it creates (admins: nothing)."""
        return [] if self.is_admin else scopes_not_held(self.scopes, wanted)

    @property
    def guest(self) -> bool:
        """An anonymous caller of a server that keeps them apart from those who sign in
        (ANONYMOUS_ACCESS=guests, the development default)."""
        return self.via == "none" and settings.ANONYMOUS_ACCESS == "guests"

    def read_scope(self, requested_user_id: str | None = None):
        """The core.tenancy scope for reads: forced to the caller when isolated."""
        if self.isolated:
            return self.user_id
        if self.guest:
            return guest_user_id(requested_user_id)
        if requested_user_id:
            return requested_user_id
        return ALL_USERS

    def owner(self, requested_user_id: str | None = None) -> str | None:
        """Whose name a new row is written under."""
        if self.isolated:
            return self.user_id
        if self.is_admin:
            return requested_user_id or self.user_id
        if self.guest:
            return guest_user_id(requested_user_id)
        return self.user_id or requested_user_id or None

    def private_owner(self, requested_user_id: str | None = None) -> str | None:
        """Whose name a new row is written under where rows without an owner are shared with every
        user (knowledge): ``owner()``, except that a guest's rows are never ownerless (they go
        under ``GUEST_OWNER`` when no user id is named). Only an admin, or an open server, writes
        shared rows."""
        owner = self.owner(requested_user_id)
        return GUEST_OWNER if owner is None and self.guest else owner


def guest_user_id(requested_user_id: str | None) -> str | None:
    """The user id an anonymous guest acts for: the one asked for, unless someone signs in as it
    (a login account, the owner of an access token, a service account), which only they may
    act for; None (rows without an owner) when none is asked for."""
    from django.contrib.auth import get_user_model
    from rest_framework.exceptions import PermissionDenied

    from .models import AccessToken

    if not requested_user_id:
        return None
    if (
        requested_user_id.startswith("sa:")
        or get_user_model().objects.filter(username=requested_user_id).exists()
        or AccessToken.objects.for_user(requested_user_id).exists()
    ):
        raise PermissionDenied(
            f"user_id {requested_user_id!r} belongs to someone who signs in: sign in as them or send "
            "their token (anonymous calls act only for user ids nobody signs in as; ANONYMOUS_ACCESS=open lifts this)"
        )
    return requested_user_id


def principal_grant(principal: Principal) -> dict:
    """What a principal may do, as JSON to keep with work that runs later (a background job, a
    schedule): its identity, credential and scopes. ``principal_from_grant`` reads it back."""
    return {
        "user_id": principal.user_id, "scopes": [scope.text for scope in principal.scopes], "is_admin": principal.is_admin,
        "isolated": principal.isolated, "via": principal.via, "token_id": principal.token_id,
    }


def principal_from_grant(grant: dict | None, *, owner_id: str | None = None) -> Principal | None:
    """The principal a grant was taken from, with the scopes it held then (None: no grant)."""
    if not isinstance(grant, dict):
        return None
    return Principal(
        user_id=grant.get("user_id", owner_id), scopes=parse_scopes(grant.get("scopes") or []), is_admin=bool(grant.get("is_admin")),
        isolated=bool(grant.get("isolated")), via=str(grant.get("via") or "none"), token_id=grant.get("token_id"),
    )


OPEN = Principal()
SECURITY_KEY_ROOT = Principal(is_admin=True, via="security_key")
# Who mints tokens in the Django admin and in manage.py commands: whoever runs the server.
OPERATOR = Principal(is_admin=True, via="operator")


def principal_for_django_user(user) -> Principal:
    """A browser user logged in with Django's session: always bound to their own account."""
    return Principal(user_id=user.get_username(), isolated=True, via=BROWSER)


def _claimed_scopes(claims: dict) -> tuple[Scope, ...]:
    """The scopes claim: a list of strings or one space/comma-separated string (AgentOS), or absent."""
    from .tokens import TokenError

    value = claims.get(settings.JWT_SCOPES_CLAIM)
    if value is None or isinstance(value, str):
        return parse_scopes(value)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return parse_scopes(value)
    raise TokenError(f"Invalid token: the {settings.JWT_SCOPES_CLAIM} claim must be a list of strings or a string")


def _claimed_session(claims: dict) -> str | None:
    """The session a token is bound to (absent or empty: none). A binding of another type is
    refused, not dropped: dropping it would unbind the token from its session."""
    from .tokens import TokenError

    value = claims.get(settings.JWT_SESSION_ID_CLAIM)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not value.strip():
        raise TokenError(f"Invalid token: the {settings.JWT_SESSION_ID_CLAIM} claim must be a non-empty string")
    return value


def principal_for_claims(claims: dict) -> Principal:
    from .tokens import TokenError, check_subject

    scopes = _claimed_scopes(claims)
    is_admin = holds_admin(scopes)
    subject = claims.get(settings.JWT_USER_ID_CLAIM)
    if subject is None:
        user_id = None
    else:
        user_id = check_subject(subject)
    session_id = _claimed_session(claims)
    isolated = settings.AGENT_OS_USER_ISOLATION and not is_admin
    if isolated and user_id is None:
        raise TokenError("Invalid token subject")
    return Principal(
        user_id=user_id,
        scopes=scopes,
        is_admin=is_admin,
        isolated=isolated,
        via="jwt",
        session_id=session_id,
    )


def principal_for_access_token(token) -> Principal:
    scopes = parse_scopes(token.scopes)
    is_admin = holds_admin(scopes)
    return Principal(
        user_id=token.principal_id,
        scopes=scopes,
        is_admin=is_admin,
        # Tokens always act for their own principal (AgentOS: service accounts are self-scoped).
        isolated=not is_admin,
        via="token",
        token_id=token.pk,
    )
