"""Personal access tokens and service accounts: created with a secret shown once, revocable."""
from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.dispatch import Signal
from django.utils import timezone

from core.auth import Principal
from core.scopes import Scope
from core.tenancy import scope_queryset
from core.tokens import PAT_PREFIX, new_token_secret, token_hash

from ..models import AccessToken, TokenKind


# Sent once a token is revoked (``token``: the row): what fires under it stops (the scheduler
# disables its schedules). Observers register; this module knows none of them.
credential_revoked = Signal()


class TokenNameTaken(Exception):
    pass


class InvalidScopes(ValueError):
    pass


class ScopesNotHeld(Exception):
    """The creator asked for scopes it does not hold (``refused``, as written)."""

    def __init__(self, refused: list[str]) -> None:
        super().__init__(f"Insufficient permissions to grant scope(s) you do not hold: {', '.join(refused)}")
        self.refused = refused


def normalize_scopes(scopes: str | list[str]) -> list[str]:
    items = scopes.replace(",", " ").split() if isinstance(scopes, str) else [str(item).strip() for item in scopes]
    bad = [item for item in items if Scope.parse(item) is None]
    if bad:
        raise InvalidScopes(f"Invalid scope(s): {', '.join(bad)} (expected resource:action or resource:<id>:action)")
    return sorted(set(items))


def access_token_create(
    *,
    name: str,
    kind: str = TokenKind.PERSONAL,
    user_id: str | None,
    scopes: str | list[str],
    ttl_days: int | None = 90,
    created_by: str = "",
    granted_by: Principal,
) -> tuple[AccessToken, str]:
    """A new token and its secret (the only time the secret exists outside the caller).

    ``granted_by`` is who delegates the scopes: a token carries only scopes its creator holds
    (``ScopesNotHeld`` otherwise); operators (``core.auth.OPERATOR``) and admins may grant any.
    """
    scopes = normalize_scopes(scopes)
    refused = granted_by.scopes_not_held(scopes)
    if refused:
        raise ScopesNotHeld(refused)
    secret = new_token_secret()
    now = timezone.now()
    token = AccessToken(
        name=name,
        kind=kind,
        user_id=user_id,
        token_prefix=secret[len(PAT_PREFIX) : len(PAT_PREFIX) + 8],
        token_hash=token_hash(secret),
        scopes=scopes,
        created_by=created_by,
        created_at=now,
        expires_at=now + timedelta(days=ttl_days) if ttl_days else None,
    )
    try:
        with transaction.atomic():
            token.save(force_insert=True)
    except IntegrityError:
        raise TokenNameTaken(f"A {kind} token named {name!r} already exists") from None
    return token, secret


def access_token_revoke(*, token_id: int, user: Any, kind: str | None = None) -> bool:
    """Revoke the token if it is not yet; False only when ``user`` has no such token.

    Idempotent, as AgentOS's revoke is: revoking a revoked token keeps its first revocation time.
    """
    tokens = scope_queryset(AccessToken.objects, user).filter(pk=token_id)
    if kind is not None:
        tokens = tokens.filter(kind=kind)
    if tokens.filter(revoked_at__isnull=True).update(revoked_at=timezone.now()):
        token = tokens.first()
        if token is not None:
            credential_revoked.send(sender=AccessToken, token=token)
        return True
    return tokens.exists()
