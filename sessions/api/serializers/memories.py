"""Memory bodies: ``UserMemorySchema``, user stats and the optimization result."""
from __future__ import annotations

from typing import Any

from rest_framework import serializers

from core.api.schema import PaginationInfoOut
from sessions.models import UserMemory

from .common import FIELD_REQUIRED, IsoZDateTimeField, StringListField, Text, output, render


class MemoryIn(serializers.Serializer):
    """``UserMemoryCreateSchema`` (create, and the whole replacement on PATCH)."""

    memory = Text(
        allow_blank=False,
        max_length=5000,
        error_messages={
            **FIELD_REQUIRED,
            "blank": "String should have at least 1 character",
            "max_length": "String should have at most 5000 characters",
        },
    )
    user_id = Text(required=False, allow_null=True, max_length=255)
    topics = serializers.ListField(child=Text(max_length=200), required=False, allow_null=True)


class DeleteMemoriesIn(serializers.Serializer):
    memory_ids = serializers.ListField(child=Text(), min_length=1, error_messages=FIELD_REQUIRED)
    user_id = Text(required=False, allow_null=True)


class OptimizeMemoriesIn(serializers.Serializer):
    user_id = Text(error_messages=FIELD_REQUIRED)
    model = Text(
        required=False,
        allow_null=True,
        help_text="'provider:model_id' (e.g. 'openai:gpt-4o-mini'); without it the merge is deterministic",
    )
    apply = serializers.BooleanField(required=False, default=True)


class MemoryOut(serializers.Serializer):
    """``UserMemorySchema``."""

    memory_id = serializers.CharField()
    memory = serializers.CharField()
    topics = output(StringListField())
    agent_id = output(serializers.CharField())
    team_id = output(serializers.CharField())
    user_id = output(serializers.CharField())
    updated_at = output(IsoZDateTimeField())


def memory_data(memory: UserMemory | Any) -> dict[str, Any]:
    return {
        "memory_id": memory.memory_id,
        "memory": memory.memory,
        "topics": list(memory.topics or []),
        "agent_id": memory.agent_id,
        "team_id": memory.team_id,
        "user_id": memory.user_id,
        "updated_at": memory.updated_at,
    }


def render_memory(memory: UserMemory | Any) -> dict[str, Any]:
    return render(MemoryOut, memory_data(memory))


class PaginatedMemoriesOut(serializers.Serializer):
    data = MemoryOut(many=True)
    meta = PaginationInfoOut()


class UserStatsOut(serializers.Serializer):
    """``UserStatsSchema``."""

    user_id = serializers.CharField()
    total_memories = serializers.IntegerField(min_value=0)
    last_memory_updated_at = output(IsoZDateTimeField())


class PaginatedUserStatsOut(serializers.Serializer):
    data = UserStatsOut(many=True)
    meta = PaginationInfoOut()


class OptimizeMemoriesOut(serializers.Serializer):
    """``OptimizeMemoriesResponse``."""

    memories = MemoryOut(many=True)
    memories_before = serializers.IntegerField(min_value=0)
    memories_after = serializers.IntegerField(min_value=0)
    tokens_before = serializers.IntegerField(min_value=0)
    tokens_after = serializers.IntegerField(min_value=0)
    tokens_saved = serializers.IntegerField(min_value=0)
    reduction_percentage = serializers.FloatField(min_value=0.0, max_value=100.0)
