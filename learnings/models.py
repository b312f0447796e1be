"""What agents learned, per user: Agno v3's ``agno_learnings`` table (engine/learning.py)."""
from __future__ import annotations

from django.db import models
from django.utils import timezone

from core.tenancy import OwnedModel


class Learning(OwnedModel):
    """One learning record. ``learning_id`` is deterministic for the identity-keyed types
    (``memories_<user>``, ``user_profile_<user>``, ``entity_<namespace>_<type>_<id>``, under
    ``namespace="user"`` with a digest of the user), so the API and the agents address one row."""

    learning_id = models.CharField(max_length=255, primary_key=True)
    learning_type = models.CharField(max_length=64)
    namespace = models.CharField(max_length=255, null=True, blank=True)
    agent_id = models.CharField(max_length=255, null=True, blank=True)
    team_id = models.CharField(max_length=255, null=True, blank=True)
    session_id = models.CharField(max_length=255, null=True, blank=True)
    entity_id = models.CharField(max_length=255, null=True, blank=True)
    entity_type = models.CharField(max_length=255, null=True, blank=True)
    content = models.JSONField(default=dict)
    metadata = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "agno_learnings"
        indexes = [
            models.Index(fields=["user_id", "-updated_at"], name="learning_user_updated"),
            models.Index(fields=["learning_type", "namespace"], name="learning_type_namespace"),
        ]

    def __str__(self) -> str:
        return self.learning_id
