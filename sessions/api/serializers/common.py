"""Shared pieces of the /sessions and /memories serializers: timestamps, JSON fields, errors, paging."""
from __future__ import annotations

import functools
import math
from datetime import datetime, timezone
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from engine.output import drop_nulls  # re-exported: the API bodies drop nulls as the runtime does
from core.api.schema import ErrorOut, ValidationErrorOut
from sessions.models import RunStatus, SessionType

SESSION_TYPES = tuple(SessionType.values)
RUN_STATUSES = tuple(sorted(RunStatus.values))
PREVIEW_CHARS = 280

FIELD_REQUIRED = {"required": "Field required", "null": "Input should be a valid string"}


def iso_z(value: datetime | None) -> str | None:
    """AgentOS's session/memory timestamp: ISO-8601, second precision, ``Z``."""
    if value is None:
        return None
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@extend_schema_field({"type": "string", "format": "date-time", "example": "2026-11-30T09:42:53Z"})
class IsoZDateTimeField(serializers.Field):
    def to_representation(self, value: datetime) -> str | None:
        return iso_z(value)


@extend_schema_field({"type": "object", "additionalProperties": True})
class ObjectField(serializers.JSONField):
    """A JSON object passed through as stored."""


@extend_schema_field({"type": "array", "items": {"type": "object", "additionalProperties": True}})
class ObjectListField(serializers.JSONField):
    """A JSON array of objects passed through as stored."""


@extend_schema_field({"type": "array", "items": {"type": "string"}})
class StringListField(serializers.JSONField):
    pass


@extend_schema_field({"oneOf": [{"type": "string"}, {"type": "object", "additionalProperties": True}]})
class ContentField(serializers.JSONField):
    """Run content: text, or a JSON object for structured output."""


@functools.lru_cache(maxsize=None)
def _renderer(serializer_class: type[serializers.Serializer]) -> serializers.Serializer:
    return serializer_class()


def render(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    """``serializer_class(data).data`` without building a serializer per object.

    DRF deep-copies every field of a serializer for each new instance, which cost more than the
    whole rest of a list endpoint; one instance per class renders any number of objects.
    """
    return dict(_renderer(serializer_class).to_representation(data))


def output(field: serializers.Field) -> serializers.Field:
    """An output field that may be null or (where nulls are dropped) absent."""
    field.allow_null = True
    field.required = False
    # Serializers deep-copy their fields by re-instantiating them from the constructor kwargs.
    field._kwargs = {**field._kwargs, "allow_null": True, "required": False}
    return field


# --- Errors (documented with core's shapes; core.api.errors renders them) ---------------------

ERRORS = {
    400: ErrorOut,
    404: ErrorOut,
    409: ErrorOut,
    422: ValidationErrorOut,
}


def errors(*statuses: int) -> dict[int, type[serializers.Serializer]]:
    return {status: ERRORS[status] for status in statuses}


# --- Input fields ------------------------------------------------------------------------------

class Text(serializers.CharField):
    """A string taken as sent: AgentOS (pydantic) neither trims it nor refuses an empty one."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        kwargs.setdefault("allow_blank", True)
        super().__init__(**kwargs)


class JSONObjectIn(serializers.DictField):
    """A JSON object the database can store as sent.

    PostgreSQL's jsonb refuses NUL characters and non-finite numbers (``1e400`` parses as
    infinity), so they are a 422 here rather than a database error.
    """

    default_error_messages = {
        "null_characters_not_allowed": "Null characters are not allowed.",
        "not_finite": "Input should be a finite number",
    }

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        value = super().to_internal_value(data)
        pending: list[Any] = [value]
        while pending:  # iterative: a deeply nested object must not exhaust the stack
            item = pending.pop()
            if isinstance(item, dict):
                for key, child in item.items():
                    if "\x00" in key:
                        self.fail("null_characters_not_allowed")
                    pending.append(child)
            elif isinstance(item, list):
                pending.extend(item)
            elif isinstance(item, str) and "\x00" in item:
                self.fail("null_characters_not_allowed")
            elif isinstance(item, float) and not math.isfinite(item):
                self.fail("not_finite")
        return value


def optional_object() -> JSONObjectIn:
    return JSONObjectIn(required=False, allow_null=True)
