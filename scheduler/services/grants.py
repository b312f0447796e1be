"""Whose rights a schedule's fire runs with: the grant it was created under, re-checked at the fire.

A schedule keeps the rights of the principal that created it (or last re-targeted or enabled
it): ``Schedule.grant``, written by scheduler.services.schedules. At each fire ``fire_principal``
rebuilds that principal as its credential stands *then*:

- an access token or service account (``via="token"``): the token must still exist, be neither
  revoked nor expired, and still hold every scope it held when the schedule was written; the fire
  runs with its scopes of now;
- a browser user (``via="session"``): the account must still exist and be active;
- a JWT (``via="jwt"``): the token itself is not kept, so its scopes as they were are what the
  fire runs with (a narrower token issued later does not widen or narrow them);
- no grant (a schedule from before grants were kept): its owner, as before.

Then the run pipeline's one authority (agents.pipeline.authority) decides whether that principal
may run the target. A refusal at either step fails the fire with the reason and disables the
schedule with it (scheduler.services.firing).
"""
from __future__ import annotations

from django.utils import timezone

from core.auth import Principal, principal_for_access_token, principal_from_grant
from core.scopes import scopes_not_held

from ..models import Schedule


class CredentialWithdrawn(Exception):
    """The credential a schedule was created under no longer grants its fires: why, in words."""


def fire_principal(schedule: Schedule) -> Principal:
    """The principal ``schedule``'s fire submits as, or CredentialWithdrawn."""
    from approvals.services import owner_principal

    stored = principal_from_grant(schedule.grant, owner_id=schedule.user_id)
    if stored is None:
        return owner_principal(schedule.user_id)
    if stored.via == "token":
        return _token_principal(stored)
    if stored.via == "session":
        _check_account(stored.user_id)
    # The scopes it was written under, for its owner only (an admin's stay an admin's).
    return Principal(
        user_id=schedule.user_id, scopes=stored.scopes, is_admin=stored.is_admin, isolated=not stored.is_admin, via=stored.via,
        token_id=stored.token_id,
    )


def _token_principal(stored: Principal) -> Principal:
    from core.models import AccessToken

    token = AccessToken.objects.unscoped("the credential a schedule fires with, whoever owns it").filter(pk=stored.token_id).first()
    what = f"access token {stored.token_id}" if token is None else f"{token.kind} token '{token.name}'"
    if token is None:
        raise CredentialWithdrawn(f"credential_revoked: {what} it was created with no longer exists")
    if token.revoked_at is not None:
        raise CredentialWithdrawn(f"credential_revoked: the {what} it was created with was revoked")
    if token.expires_at is not None and token.expires_at <= timezone.now():
        raise CredentialWithdrawn(f"credential_expired: the {what} it was created with expired")
    current = principal_for_access_token(token)
    lost = [] if current.is_admin else scopes_not_held(current.scopes, [scope.text for scope in stored.scopes])
    if lost:
        raise CredentialWithdrawn(f"scopes_narrowed: the {what} it was created with no longer holds {', '.join(lost)}")
    return current


def _check_account(username: str | None) -> None:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.filter(username=username).only("is_active").first() if username else None
    if user is None:
        raise CredentialWithdrawn(f"owner_deleted: the account '{username}' it was created by no longer exists")
    if not user.is_active:
        raise CredentialWithdrawn(f"owner_deactivated: the account '{username}' it was created by is deactivated")
