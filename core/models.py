"""Platform-wide tables: access tokens for people and services.

(This module also makes Django send core's pre_migrate signal, which creates the pgvector
extension: see core.apps.)
"""
from __future__ import annotations

from django.db import models
from django.utils import timezone

from .tenancy import OwnedModel


class TokenKind(models.TextChoices):
    PERSONAL = "personal", "Personal access token"
    SERVICE = "service", "Service account"


class AccessToken(OwnedModel):
    """A bearer token (``agno_pat_…``). Only its SHA-256 is stored; the token is shown once.

    A personal token acts as its owner (``user_id``); a service account acts as ``sa:<name>``,
    always bound to its own data unless it holds the admin scope.
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
        return f"sa:{self.name}" if self.kind == TokenKind.SERVICE else self.user_id

    def is_usable(self, now=None) -> bool:
        now = now or timezone.now()
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)
