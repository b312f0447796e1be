"""Writes to user memories."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.utils import timezone

from core.tenancy import scope_queryset

from ..models import UserMemory
from .runs import new_id


def memory_topics_key(topics: Iterable[str]) -> str:
    cleaned = [str(topic).strip() for topic in topics if str(topic).strip()]
    return "," + ",".join(cleaned) + "," if cleaned else ""


def memory_create(
    *,
    user_id: str | None,
    memory: str,
    topics: Iterable[str] = (),
    input: str = "",
    agent_id: str | None = None,
    team_id: str | None = None,
    memory_id: str | None = None,
) -> UserMemory:
    now = timezone.now()
    topic_list = [str(topic) for topic in topics]
    row = UserMemory(
        memory_id=memory_id or new_id(),
        user_id=user_id,
        memory=memory,
        topics=topic_list,
        topics_key=memory_topics_key(topic_list),
        input=input,
        agent_id=agent_id,
        team_id=team_id,
        created_at=now,
        updated_at=now,
    )
    row.save(force_insert=True)
    return row


def memory_update(*, user: Any, memory_id: str, memory: str, topics: Iterable[str] | None = None) -> UserMemory | None:
    row = scope_queryset(UserMemory.objects, user).filter(pk=memory_id).first()
    if row is None:
        return None
    row.memory = memory
    fields = ["memory", "updated_at"]
    if topics is not None:
        row.topics = [str(topic) for topic in topics]
        row.topics_key = memory_topics_key(row.topics)
        fields += ["topics", "topics_key"]
    row.updated_at = timezone.now()
    row.save(update_fields=fields)
    return row


def memory_delete(*, user: Any, memory_ids: Iterable[str]) -> int:
    deleted, _ = scope_queryset(UserMemory.objects, user).filter(pk__in=list(memory_ids)).delete()
    return deleted
