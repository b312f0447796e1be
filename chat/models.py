"""Share links: a read-only copy of one conversation that its owner hands out."""
from __future__ import annotations

from django.db import models
from django.utils import timezone

from core.tenancy import OwnedModel
from sessions.models import Session


class SharedConversation(OwnedModel):
    """A snapshot of a conversation, readable by whoever holds its token (``/chat/shared/<token>/``).

    Owned by the conversation's owner (``user_id``); at most one per conversation. The token is
    kept as it is, not hashed, so that its owner can copy the link again: it opens only this
    snapshot, which the same database holds anyway. Revoking deletes the row, and deleting the
    conversation deletes its share with it.
    """

    token = models.CharField(max_length=64, unique=True)
    session = models.OneToOneField(Session, on_delete=models.CASCADE, related_name="+", db_column="session_id")
    title = models.CharField(max_length=500, blank=True, default="")
    # The messages as the owner saw them when sharing (chat.transcript), without ids of any kind.
    messages = models.JSONField(default=list)
    created_at = models.DateTimeField(default=timezone.now)
    # When the snapshot was last taken (creating the link, or updating it).
    shared_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "agno_shared_conversations"
        verbose_name = "shared conversation"

    def __str__(self) -> str:
        return self.title or self.session_id
