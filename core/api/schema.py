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
