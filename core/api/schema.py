"""Serializers that document shared shapes in the OpenAPI document (errors, pagination)."""
from __future__ import annotations

from rest_framework import serializers


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


class PaginationInfoOut(serializers.Serializer):
    """AgentOS's ``PaginationInfo`` (the ``meta`` of every paginated list)."""

    page = serializers.IntegerField()
    limit = serializers.IntegerField()
    total_pages = serializers.IntegerField()
    total_count = serializers.IntegerField()
    search_time_ms = serializers.FloatField()
