"""A credential withdrawn stops what fires under it: revoking or deleting an access token or a
service account, or deleting or deactivating a user, disables their schedules with the reason.

Registered in SchedulerConfig.ready on core's ``credential_revoked`` and on the models' deletes;
an expired token is found at its schedule's next fire (scheduler.services.grants), which fails
that fire and disables the schedule the same way.
"""
from __future__ import annotations

from typing import Any

from django.utils import timezone

from .schedules import schedules_disable_for_credential


def _when() -> str:
    return f"{timezone.now():%Y-%m-%d %H:%M} UTC"


def _account(token: Any) -> str | None:
    from core.models import TokenKind

    return token.principal_id if token.kind == TokenKind.SERVICE else None


def token_revoked(sender: Any, token: Any, **_: Any) -> None:
    schedules_disable_for_credential(
        user_id=_account(token), token_id=token.pk,
        reason=f"credential_revoked: the {token.kind} token '{token.name}' it fires with was revoked ({_when()})",
    )


def token_deleted(sender: Any, instance: Any, **_: Any) -> None:
    schedules_disable_for_credential(
        user_id=_account(instance), token_id=instance.pk,
        reason=f"credential_revoked: the {instance.kind} token '{instance.name}' it fires with was deleted ({_when()})",
    )


def account_deleted(sender: Any, instance: Any, **_: Any) -> None:
    schedules_disable_for_credential(user_id=instance.get_username(), reason=f"owner_deleted: the account '{instance.get_username()}' was deleted ({_when()})")


def account_changed(sender: Any, instance: Any, created: bool = False, **_: Any) -> None:
    if not created and not instance.is_active:
        schedules_disable_for_credential(user_id=instance.get_username(), reason=f"owner_deactivated: the account '{instance.get_username()}' was deactivated ({_when()})")
