"""Platform-wide tables: access tokens for people and services.

(This module also makes Django send core's pre_migrate signal, which creates the pgvector
extension: see core.apps.)
"""
from __future__ import annotations

from django.db import models
from django.utils import timezone

from .tenancy import OwnedModel


def service_account_principal(token_id: int) -> str:
    """The user id a service account acts as: its own row id, unique by construction and never reused."""
    return f"sa:{token_id}"


class TokenKind(models.TextChoices):
    PERSONAL = "personal", "Personal access token"
    SERVICE = "service", "Service account"


class AccessToken(OwnedModel):
    """A bearer token (``agno_pat_…``). Only its SHA-256 is stored; the token is shown once.

    A personal token acts as its owner (``user_id``); a service account acts as ``sa:<id>``,
    always bound to its own data unless it holds the admin scope. The id, not the name: a name
    is unique only per owner (and not at all among ownerless accounts), so alice's and bob's
    ``bot`` would otherwise be one identity sharing sessions and memories.
    """

    name = models.CharField(max_length=128)
    kind = models.CharField(max_length=16, choices=TokenKind.choices, default=TokenKind.PERSONAL)
    token_prefix = models.CharField(max_length=24, editable=False)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    scopes = models.JSONField(default=list, blank=True)
    created_by = models.CharField(max_length=255, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "agno_access_tokens"
        constraints = [
            models.UniqueConstraint(fields=["user_id", "kind", "name"], name="access_token_name_unique_per_owner"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.token_prefix}…)"

    @property
    def principal_id(self) -> str | None:
        return service_account_principal(self.pk) if self.kind == TokenKind.SERVICE else self.user_id

    def is_usable(self, now=None) -> bool:
        now = now or timezone.now()
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)


class PeriodicPass(models.Model):
    """When a periodic duty (the reaper: ``REAPER``) last finished a pass, by any process: one row
    per duty, overwritten each pass. Readiness (``GET /ready``) reads it."""

    REAPER = "reaper"

    name = models.CharField(max_length=64, primary_key=True)
    last_at = models.DateTimeField()
    # The process that wrote it (host-pid), for an operator reading the table.
    by = models.CharField(max_length=255, blank=True, default="")

    class Meta:
        db_table = "agno_periodic_passes"

    def __str__(self) -> str:
        return f"{self.name} at {self.last_at:%Y-%m-%d %H:%M:%S}"
