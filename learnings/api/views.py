"""The /learnings family (AgentOS 3.x, agno/os/routers/learnings/router.py).

Scoping as AgentOS's: an isolated caller lists their own records and those no one owns, may not
name another user (403 on list, create and the users routes), gets 404 for another user's record
and 403 when changing a record no one owns; admins and an open server see and change every record.
"""
from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import PermissionDenied as DRFPermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.errors import Conflict, Forbidden, NotFound, Unprocessable
from core.api.params import envelope, page, sort_order_param
from core.api.schema import ErrorOut
from core.api.views import AgentOSView
from sessions.api import inputs as q
from sessions.api.base import BodySchema
from sessions.api.inputs import json_body
from sessions.api.serializers.common import errors as common_errors

from ..models import Learning
from ..selectors import learning_get, learning_list, learning_owner, learning_users
from ..services import (
    LearningExists,
    LearningInvalid,
    learning_create,
    learning_delete,
    learning_update,
    learnings_delete_for_user,
)
from .serializers import (
    LearningIn,
    LearningOut,
    LearningUpdateIn,
    PaginatedLearningsOut,
    PaginatedLearningUsersOut,
    learning_data,
    user_data,
)

TAGS = ["Learnings"]


def errors(*statuses: int) -> dict:
    """The documented error bodies; these routes also answer 403 (AgentOS's scoping)."""
    return {**common_errors(*(s for s in statuses if s != 403)), **({403: ErrorOut} if 403 in statuses else {})}

FILTERS = ("learning_type", "agent_id", "team_id", "session_id", "namespace", "entity_id", "entity_type")
NOT_FOUND = "Learning not found"


class LearningsAPIView(AgentOSView):
    schema = BodySchema()
    scope_family = "learnings"

    def check_other_user(self, requested: str | None, message: str) -> None:
        principal = self.principal
        if principal.isolated and requested is not None and requested != principal.user_id:
            raise Forbidden(message)

    def visible(self, request: Request, learning_id: str) -> Learning:
        """The record by id if the caller may read it; another user's answers 404."""
        principal = self.principal
        learning = learning_get(user=self.read_scope_by_id(learning_id), learning_id=learning_id, include_shared=principal.isolated)
        if learning is None:
            raise NotFound(NOT_FOUND)
        return learning

    def read_scope_by_id(self, learning_id: str):
        """These routes name no user: a guest reads a record of whichever user it may act for
        (a user nobody signs in as, core.auth.guest_user_id) and the records no one owns."""
        principal = self.principal
        if not principal.guest:
            return principal.read_scope()
        owner = learning_owner(learning_id=learning_id)
        try:
            return principal.read_scope(owner) if owner else None
        except DRFPermissionDenied:
            return None

    def changeable(self, request: Request, learning_id: str) -> Learning:
        learning = self.visible(request, learning_id)
        if learning.user_id is None and (self.principal.isolated or self.principal.guest):
            raise Forbidden("Only admins can modify learnings that have no owner (user_id is null)")
        return learning


class LearningsView(LearningsAPIView):
    @extend_schema(
        operation_id="list_learnings",
        summary="List Learnings",
        tags=TAGS,
        parameters=[
            *(q.query_param(name, f"Filter by {name.replace('_', ' ')}") for name in ("learning_type", "user_id", *FILTERS[1:])),
            q.query_param("limit", "Page size (1 to 1000)", OpenApiTypes.INT, default=100),
            q.PAGE,
            q.query_param("sort_by", "created_at or updated_at (the default; anything else falls back to it)"),
            q.SORT_ORDER,
            q.DB_ID,
            q.TABLE,
        ],
        responses={200: PaginatedLearningsOut, **errors(400, 403, 404, 422)},
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        self.check_db_selector(params)
        self.check_other_user(params.get("user_id") or None, "Cannot list learnings for another user")
        window = page(params, default_limit=100, max_limit=1000)
        descending = sort_order_param(params)
        principal = self.principal
        rows, total = learning_list(
            user=principal.read_scope(params.get("user_id") or None),
            include_shared=principal.isolated,
            filters={name: params.get(name) or None for name in FILTERS},
            sort_by=params.get("sort_by"),
            descending=descending,
            offset=window.offset,
            limit=window.limit,
        )
        return Response(envelope([learning_data(row) for row in rows], window, total))

    @extend_schema(
        operation_id="create_learning",
        summary="Create Learning",
        description=(
            "Identity-keyed types (user_profile, user_memory, session_context, entity_memory) get a "
            "deterministic id (422 without their identity fields, 409 when it exists: PATCH it). An "
            "entity_memory without a namespace goes under 'global'; under namespace='user' its id embeds "
            "a digest of the user id. An isolated caller's records are always their own."
        ),
        tags=TAGS,
        parameters=[q.DB_ID, q.TABLE],
        request=LearningIn,
        responses={201: LearningOut, **errors(400, 403, 404, 409, 422)},
    )
    def post(self, request: Request) -> Response:
        self.check_db_selector(request.query_params)
        body = json_body(request, LearningIn)
        self.check_other_user(body.get("user_id"), "Cannot create learnings for another user")
        owner = self.principal.owner(body.get("user_id"))
        try:
            learning = learning_create(owner_id=owner, fields=body)
        except LearningInvalid as exc:
            raise Unprocessable(str(exc)) from None
        except LearningExists as exc:
            raise Conflict(str(exc)) from None
        return Response(learning_data(learning), status=201)


class LearningUsersView(LearningsAPIView):
    @extend_schema(
        operation_id="list_learning_users",
        summary="List Learning Users",
        tags=TAGS,
        parameters=[
            q.query_param("learning_type", "Restrict the grouping to one learning type"),
            q.query_param("user_id", "Restrict the result to one user"),
            q.LIMIT,
            q.PAGE,
            q.query_param("sort_by", "user_id or last_learning_updated_at (the default)"),
            q.SORT_ORDER,
            q.DB_ID,
            q.TABLE,
        ],
        responses={200: PaginatedLearningUsersOut, **errors(400, 403, 404, 422)},
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        self.check_db_selector(params)
        self.check_other_user(params.get("user_id") or None, "Cannot list learning users for another user")
        window = page(params, default_limit=20, max_limit=1000)
        descending = sort_order_param(params)
        rows, total = learning_users(
            user=self.principal.read_scope(params.get("user_id") or None),
            learning_type=params.get("learning_type") or None,
            sort_by=params.get("sort_by"),
            descending=descending,
            offset=window.offset,
            limit=window.limit,
        )
        return Response(envelope([user_data(row) for row in rows], window, total))


class LearningUserView(LearningsAPIView):
    @extend_schema(
        operation_id="delete_learning_user",
        summary="Delete Learning User",
        tags=TAGS,
        parameters=[q.query_param("learning_type", "Only this learning type"), q.DB_ID, q.TABLE],
        request=None,
        responses={204: None, **errors(400, 403, 404, 422)},
    )
    def delete(self, request: Request, user_id: str) -> Response:
        params = request.query_params
        self.check_db_selector(params)
        self.check_other_user(user_id, "Cannot delete learnings for another user")
        scope = self.principal.read_scope(user_id)
        if isinstance(scope, str) and scope == user_id:
            learnings_delete_for_user(user_id=user_id, learning_type=params.get("learning_type") or None)
        return Response(status=204)


class LearningDetailView(LearningsAPIView):
    @extend_schema(
        operation_id="get_learning",
        summary="Get Learning",
        tags=TAGS,
        parameters=[q.DB_ID, q.TABLE],
        responses={200: LearningOut, **errors(400, 404, 422)},
    )
    def get(self, request: Request, learning_id: str) -> Response:
        self.check_db_selector(request.query_params)
        return Response(learning_data(self.visible(request, learning_id)))

    @extend_schema(
        operation_id="update_learning",
        summary="Update Learning",
        description="Replaces content and/or metadata; identity fields are immutable. Records no one owns: admins only.",
        tags=TAGS,
        parameters=[q.DB_ID, q.TABLE],
        request=LearningUpdateIn,
        responses={200: LearningOut, **errors(400, 403, 404, 422)},
    )
    def patch(self, request: Request, learning_id: str) -> Response:
        self.check_db_selector(request.query_params)
        body = json_body(request, LearningUpdateIn)
        learning = self.changeable(request, learning_id)
        if "content" in body and body["content"] is None:
            raise Unprocessable("content cannot be null; omit the field to leave it unchanged")
        return Response(learning_data(learning_update(learning=learning, changes=body)))

    @extend_schema(
        operation_id="delete_learning",
        summary="Delete Learning",
        tags=TAGS,
        parameters=[q.DB_ID, q.TABLE],
        request=None,
        responses={204: None, **errors(400, 403, 404, 422)},
    )
    def delete(self, request: Request, learning_id: str) -> Response:
        self.check_db_selector(request.query_params)
        learning_delete(learning=self.changeable(request, learning_id))
        return Response(status=204)
