"""What documents shared shapes in the OpenAPI document: errors, pagination, query parameters."""
from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers


def query_param(name: str, description: str, type_: Any = OpenApiTypes.STR, **kwargs: Any) -> OpenApiParameter:
    """An optional query parameter, for ``extend_schema(parameters=...)``."""
    return OpenApiParameter(name, type_, OpenApiParameter.QUERY, required=False, description=description, **kwargs)


class ErrorOut(serializers.Serializer):
    detail = serializers.CharField(help_text="What went wrong")


class ValidationErrorItemOut(serializers.Serializer):
    type = serializers.CharField()
    loc = serializers.ListField(child=serializers.JSONField())
    msg = serializers.CharField()
    input = serializers.JSONField(allow_null=True)
    ctx = serializers.DictField(required=False)


class ValidationErrorOut(serializers.Serializer):
    detail = ValidationErrorItemOut(many=True)


class DetailOut(serializers.Serializer):
    """A 4xx whose ``detail`` is a sentence (AgentOS's own checks, e.g. "Invalid cron expression:
    nope") or a list of field errors (the body's validation)."""

    detail = serializers.JSONField(help_text="A sentence, or a list of field errors")


class PaginationInfoOut(serializers.Serializer):
    """AgentOS's ``PaginationInfo`` (the ``meta`` of every paginated list)."""

    page = serializers.IntegerField()
    limit = serializers.IntegerField()
    total_pages = serializers.IntegerField()
    total_count = serializers.IntegerField()
    search_time_ms = serializers.FloatField()
