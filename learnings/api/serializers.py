"""Learning bodies: AgentOS's ``LearningCreate``, ``LearningUpdate``, ``LearningResponse`` and
``LearningUserStats`` (agno/os/routers/learnings/schema.py)."""
from __future__ import annotations

from typing import Any

from rest_framework import serializers

from core.api.schema import PaginationInfoOut
from sessions.api.serializers.common import FIELD_REQUIRED, ObjectField, Text

from ..models import Learning


class LearningIn(serializers.Serializer):
    learning_type = Text(max_length=64, error_messages=FIELD_REQUIRED)
    content = serializers.DictField(error_messages={"required": "Field required", "null": "Input should be a valid dictionary"})
    namespace = Text(required=False, allow_null=True, max_length=255)
    user_id = Text(required=False, allow_null=True, max_length=255)
    agent_id = Text(required=False, allow_null=True, max_length=255)
    team_id = Text(required=False, allow_null=True, max_length=255)
    session_id = Text(required=False, allow_null=True, max_length=255)
    entity_id = Text(required=False, allow_null=True, max_length=255)
    entity_type = Text(required=False, allow_null=True, max_length=255)
    metadata = serializers.DictField(required=False, allow_null=True)


class LearningUpdateIn(serializers.Serializer):
    content = serializers.DictField(required=False, allow_null=True)
    metadata = serializers.DictField(required=False, allow_null=True)


class LearningOut(serializers.Serializer):
    learning_id = serializers.CharField()
    learning_type = serializers.CharField()
    namespace = serializers.CharField(allow_null=True)
    user_id = serializers.CharField(allow_null=True)
    agent_id = serializers.CharField(allow_null=True)
    team_id = serializers.CharField(allow_null=True)
    session_id = serializers.CharField(allow_null=True)
    entity_id = serializers.CharField(allow_null=True)
    entity_type = serializers.CharField(allow_null=True)
    content = ObjectField(allow_null=True)
    metadata = ObjectField(allow_null=True)
    created_at = serializers.IntegerField(allow_null=True, help_text="Unix epoch seconds")
    updated_at = serializers.IntegerField(allow_null=True, help_text="Unix epoch seconds")


class PaginatedLearningsOut(serializers.Serializer):
    data = LearningOut(many=True)
    meta = PaginationInfoOut()


class LearningUserOut(serializers.Serializer):
    user_id = serializers.CharField()
    last_learning_updated_at = serializers.IntegerField(allow_null=True)


class PaginatedLearningUsersOut(serializers.Serializer):
    data = LearningUserOut(many=True)
    meta = PaginationInfoOut()


def learning_data(row: Learning) -> dict[str, Any]:
    return {
        "learning_id": row.learning_id,
        "learning_type": row.learning_type,
        "namespace": row.namespace,
        "user_id": row.user_id,
        "agent_id": row.agent_id,
        "team_id": row.team_id,
        "session_id": row.session_id,
        "entity_id": row.entity_id,
        "entity_type": row.entity_type,
        "content": row.content,
        "metadata": row.metadata,
        "created_at": int(row.created_at.timestamp()) if row.created_at else None,
        "updated_at": int(row.updated_at.timestamp()) if row.updated_at else None,
    }


def user_data(row: dict[str, Any]) -> dict[str, Any]:
    moment = row.get("last_learning_updated_at")
    return {"user_id": row["user_id"], "last_learning_updated_at": int(moment.timestamp()) if moment else None}
