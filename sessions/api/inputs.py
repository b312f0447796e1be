"""Request parsing shared by the session and memory views: JSON bodies and documented query params."""
from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.request import Request

from core.api.errors import BadRequest, invalid, missing
from core.api.params import choice
from core.api.schema import query_param

from .serializers import SESSION_TYPES


def json_body(request: Request, serializer_class: type[serializers.Serializer], *, required: bool = True) -> dict[str, Any]:
    """The validated JSON object body. A missing body is a 422 unless ``required`` is False."""
    if request.stream is None:  # no body at all (DRF leaves the stream unset when it is empty)
        if required:
            raise missing(["body"])
        data: Any = {}
    else:
        data = request.data  # core's parser refuses what the database cannot store
    if not isinstance(data, dict):
        raise invalid(
            ["body"],
            "Input should be a valid dictionary or object to extract fields from",
            kind="model_attributes_type",
            value=data,
        )
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def session_type_param(params: Any, default: str | None = None) -> str | None:
    return choice(params, "type", SESSION_TYPES, default)


def status_param(params: Any, valid: tuple[str, ...]) -> set[str] | None:
    """Repeatable, case-insensitive ``status``; unknown values are a 400 as in AgentOS."""
    values = [value for value in params.getlist("status") if value != ""]
    if not values:
        return None
    wanted = {value.upper() for value in values}
    unknown = sorted(wanted - set(valid))
    if unknown:
        raise BadRequest(f"Invalid status value(s) {unknown}; expected one of {sorted(valid)}")
    return wanted


def topics_param(params: Any) -> list[str]:
    """AgentOS reads only the first ``topics`` parameter and splits it on commas."""
    values = params.getlist("topics")
    if not values:
        return []
    return [topic.strip() for topic in values[0].split(",") if topic.strip()]


# --- OpenAPI parameters ---------------------------------------------------------------------

DB_ID = query_param("db_id", "Database id (this server has one: its id from /config)")
TABLE = query_param("table", "Table name (needs db_id)")
USER_ID = query_param("user_id", "User id to act for (ignored, and forced to the caller, under user isolation)")
TYPE = query_param("type", "Session type; shapes the response", enum=SESSION_TYPES)
LIMIT = query_param("limit", "Items per page (>= 1)", OpenApiTypes.INT, default=20)
PAGE = query_param("page", "Page number, from 1 (needs limit)", OpenApiTypes.INT, default=1)
SORT_ORDER = query_param("sort_order", "Sort order", enum=("asc", "desc"), default="desc")
CREATED_AFTER = query_param("created_after", "Only runs created at or after this Unix time (seconds)", OpenApiTypes.INT)
CREATED_BEFORE = query_param("created_before", "Only runs created at or before this Unix time (seconds)", OpenApiTypes.INT)
STATUS = OpenApiParameter(
    "status",
    {"type": "array", "items": {"type": "string"}},
    OpenApiParameter.QUERY,
    required=False,
    explode=True,
    description="Run status filter; repeatable, case-insensitive (PENDING, RUNNING, PAUSED, COMPLETED, CANCELLED, ERROR, REGENERATED)",
)
DELETE_MEDIA = query_param("delete_media", "Also delete the session's offloaded media (needs media storage)", OpenApiTypes.BOOL, default=False)
SESSION_ID_PATH = OpenApiParameter("session_id", OpenApiTypes.STR, OpenApiParameter.PATH)
RUN_ID_PATH = OpenApiParameter("run_id", OpenApiTypes.STR, OpenApiParameter.PATH)
MEMORY_ID_PATH = OpenApiParameter("memory_id", OpenApiTypes.STR, OpenApiParameter.PATH)

