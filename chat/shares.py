"""Share links to a read-only copy of a conversation: created, updated and revoked by its owner.

A share is a snapshot, not a live view: the link shows the conversation as it stood when its
owner shared it (or last updated the link). What the owner says afterwards, a reply still
being written, a tool waiting for approval, the owner's other conversations, documents and
traces: none of it is reachable from the link, because the shared page reads only the snapshot.
"""
from __future__ import annotations

import secrets
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from core.tenancy import scope_queryset

from .models import SharedConversation
from sessions.transcript import conversation_transcript, transcript_title

# What a shared copy keeps of each message: no run ids, no ids of any kind.
PRIVATE_KEYS = ("run_id",)


class ConversationNotFound(Exception):
    """Missing, or another user's: the same to the caller."""


def share_get(*, user: str, session_id: str) -> SharedConversation | None:
    return scope_queryset(SharedConversation.objects, user).filter(session_id=session_id).first()


def share_save(*, user: str, session_id: str) -> SharedConversation:
    """Share the conversation as it stands now: a new link, or the existing link's copy updated
    (its token kept, so what was handed out shows the update)."""
    transcript = conversation_transcript(user=user, session_id=session_id)
    if transcript is None:
        raise ConversationNotFound(session_id)
    fields = {"title": transcript_title(transcript), "messages": [_public(message) for message in transcript.messages], "shared_at": timezone.now()}
    existing = share_get(user=user, session_id=session_id)
    if existing is not None:
        for name, value in fields.items():
            setattr(existing, name, value)
        existing.save(update_fields=list(fields))
        return existing
    try:
        with transaction.atomic():
            return SharedConversation.objects.create(user_id=user, session_id=session_id, token=secrets.token_urlsafe(32), **fields)
    except IntegrityError:
        # Shared at the same moment from another tab: that link is the one.
        return share_save(user=user, session_id=session_id)


def share_revoke(*, user: str, session_id: str) -> bool:
    """The link stops working at once (a 404, as a link that never existed); False: there was none."""
    deleted, _ = scope_queryset(SharedConversation.objects, user).filter(session_id=session_id).delete()
    return bool(deleted)


def shared_by_token(token: str) -> SharedConversation | None:
    if not token or len(token) > 64:
        return None
    return SharedConversation.objects.unscoped("a share link opens by its unguessable token, whoever owns it").filter(token=token).first()


def _public(message: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in message.items() if key not in PRIVATE_KEYS}
