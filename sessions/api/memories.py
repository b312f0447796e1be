"""The /memories family of the AgentOS API (agentos-api.md §7).

Reads go through the caller's scope; writes are owned by ``Principal.owner``. Under user
isolation the query/body ``user_id`` is ignored and another user's memory answers 404.
Memory bodies keep explicit nulls (AgentOS declares no null-dropping on these routes).
"""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.errors import APIError, BadRequest, Conflict, NotFound, invalid
from core.api.params import envelope, page, sort_order_param
from sessions.models import UserMemory
from sessions.selectors import memory_get, memory_list, memory_topics, memory_user_stats
from sessions.services import (
    MemoriesChanged,
    MemoryOptimizationError,
    UnusableModel,
    memory_create,
    memory_delete,
    memory_optimize,
    memory_upsert,
)

from . import inputs as q
from .base import MemoriesAPIView
from .inputs import json_body, topics_param
from .serializers import (
    DeleteMemoriesIn,
    ErrorOut,
    MemoryIn,
    MemoryOut,
    OptimizeMemoriesIn,
    OptimizeMemoriesOut,
    PaginatedMemoriesOut,
    PaginatedUserStatsOut,
    UserStatsOut,
    errors,
    memory_data,
    render,
    render_memory,
)

TAGS = ["Memory"]
USER_ID_REQUIRED = "User ID is required"
MEMORY_ID_MAX_LENGTH = UserMemory._meta.get_field("memory_id").max_length


class MemoriesView(MemoriesAPIView):
    """POST (create), GET (list) and DELETE (bulk) on /memories."""

    @extend_schema(
        operation_id="create_memory",
        summary="Create Memory",
        tags=TAGS,
        parameters=[q.DB_ID, q.TABLE],
        request=MemoryIn,
        responses={200: MemoryOut, **errors(400, 404, 422)},
    )
    def post(self, request: Request) -> Response:
        self.check_db_selector(request.query_params)
        body = json_body(request, MemoryIn)
        owner = self.principal.owner(body.get("user_id"))
        if not owner:
            raise BadRequest(USER_ID_REQUIRED)
        memory = memory_create(user_id=owner, memory=body["memory"], topics=body.get("topics") or [])
        return Response(render_memory(memory))

    @extend_schema(
        operation_id="get_memories",
        summary="List Memories",
        tags=TAGS,
        parameters=[
            q.query_param("user_id", "Only this user's memories (ignored, and forced to the caller, under user isolation)"),
            q.query_param("agent_id", "Only memories of this agent"),
            q.query_param("team_id", "Only memories of this team"),
            q.query_param(
                "topics",
                "Comma-separated topics a memory must all carry (only the first topics parameter is read)",
                {"type": "array", "items": {"type": "string"}},
                explode=True,
            ),
            q.query_param("search_content", "Only memories containing this text (case-insensitive)"),
            q.LIMIT,
            q.PAGE,
            q.query_param("sort_by", "Column to sort by (unknown columns fall back to updated_at)", default="updated_at"),
            q.SORT_ORDER,
            q.DB_ID,
            q.TABLE,
        ],
        responses={200: PaginatedMemoriesOut, **errors(400, 404, 422)},
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        self.check_db_selector(params)
        window = page(params, max_limit=None)
        descending = sort_order_param(params)
        memories, total = memory_list(
            user=self.principal.read_scope(params.get("user_id")),
            agent_id=params.get("agent_id") or None,
            team_id=params.get("team_id") or None,
            topics=topics_param(params),
            search_content=params.get("search_content") or None,
            sort_by=params.get("sort_by"),
            descending=descending,
            offset=window.offset,
            limit=window.limit,
        )
        items = [render(MemoryOut, memory_data(memory)) for memory in memories]
        return Response(envelope(items, window, total))

    @extend_schema(
        operation_id="delete_memories",
        summary="Delete Multiple Memories",
        tags=TAGS,
        parameters=[q.DB_ID, q.TABLE],
        request=DeleteMemoriesIn,
        responses={204: None, **errors(400, 404, 422)},
    )
    def delete(self, request: Request) -> Response:
        self.check_db_selector(request.query_params)
        body = json_body(request, DeleteMemoriesIn)
        memory_delete(user=self.principal.read_scope(body.get("user_id")), memory_ids=body["memory_ids"])
        return Response(status=204)


class MemoryDetailView(MemoriesAPIView):
    """GET, PATCH (upsert) and DELETE on /memories/{memory_id}."""

    @extend_schema(
        operation_id="get_memory",
        summary="Get Memory by ID",
        tags=TAGS,
        parameters=[q.MEMORY_ID_PATH, q.USER_ID, q.DB_ID, q.TABLE],
        responses={200: MemoryOut, **errors(400, 404, 422)},
    )
    def get(self, request: Request, memory_id: str) -> Response:
        params = request.query_params
        self.check_db_selector(params)
        memory = memory_get(user=self.principal.read_scope(params.get("user_id")), memory_id=memory_id)
        if memory is None:
            raise NotFound(f"Memory with ID {memory_id} not found")
        return Response(render_memory(memory))

    @extend_schema(
        operation_id="update_memory",
        summary="Update Memory",
        description=(
            "Replaces the memory's text and topics (topics left out become []). An unknown id is "
            "created, except for callers under user isolation, who get 404 for ids they do not own."
        ),
        tags=TAGS,
        parameters=[q.MEMORY_ID_PATH, q.DB_ID, q.TABLE],
        request=MemoryIn,
        responses={200: MemoryOut, **errors(400, 404, 422)},
    )
    def patch(self, request: Request, memory_id: str) -> Response:
        self.check_db_selector(request.query_params)
        if len(memory_id) > MEMORY_ID_MAX_LENGTH:  # it could not be stored if the upsert creates it
            raise invalid(
                ["path", "memory_id"],
                f"String should have at most {MEMORY_ID_MAX_LENGTH} characters",
                kind="string_too_long",
                value=memory_id,
                ctx={"max_length": MEMORY_ID_MAX_LENGTH},
            )
        body = json_body(request, MemoryIn)
        owner = self.principal.owner(body.get("user_id"))
        if not owner:
            raise BadRequest(USER_ID_REQUIRED)
        # The body's user_id names the owner, as the query's does on the other routes: a guest
        # reaches only that user's memories; an open or admin caller any memory by its id (the
        # upsert AgentOS does), whose owner never changes.
        scope = self.principal.read_scope(body.get("user_id")) if self.principal.guest else self.principal.read_scope()
        memory = memory_upsert(
            user=scope,
            owner_id=owner,
            memory_id=memory_id,
            memory=body["memory"],
            topics=body.get("topics") or [],
            create_missing=not self.principal.isolated,
        )
        if memory is None:
            raise NotFound("Memory not found")
        return Response(render_memory(memory))

    @extend_schema(
        operation_id="delete_memory",
        summary="Delete Memory",
        tags=TAGS,
        parameters=[q.MEMORY_ID_PATH, q.USER_ID, q.DB_ID, q.TABLE],
        request=None,
        responses={204: None, **errors(400, 404, 422)},
    )
    def delete(self, request: Request, memory_id: str) -> Response:
        params = request.query_params
        self.check_db_selector(params)
        memory_delete(user=self.principal.read_scope(params.get("user_id")), memory_ids=[memory_id])
        return Response(status=204)


class MemoryTopicsView(MemoriesAPIView):
    @extend_schema(
        operation_id="get_memory_topics",
        summary="Get Memory Topics",
        tags=TAGS,
        parameters=[q.USER_ID, q.DB_ID, q.TABLE],
        responses={200: {"type": "array", "items": {"type": "string"}}, **errors(400, 404, 422)},
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        self.check_db_selector(params)
        return Response(memory_topics(user=self.principal.read_scope(params.get("user_id"))))


class UserMemoryStatsView(MemoriesAPIView):
    @extend_schema(
        operation_id="get_user_memory_stats",
        summary="Get User Memory Statistics",
        tags=TAGS,
        parameters=[q.LIMIT, q.PAGE, q.USER_ID, q.DB_ID, q.TABLE],
        responses={200: PaginatedUserStatsOut, **errors(400, 404, 422)},
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        self.check_db_selector(params)
        window = page(params, max_limit=None)
        stats, total = memory_user_stats(
            user=self.principal.read_scope(params.get("user_id")), offset=window.offset, limit=window.limit
        )
        return Response(envelope([render(UserStatsOut, row) for row in stats], window, total))


class OptimizeMemoriesView(MemoriesAPIView):
    @extend_schema(
        operation_id="optimize_memories",
        summary="Optimize User Memories",
        description=(
            "Merges the user's memories into fewer ones without losing facts: duplicates and "
            "memories contained in others are folded in, and memories sharing a topic become one. "
            "With `model` ('provider:model_id') the model rewrites them all as one memory (a reply "
            "that is empty or longer than the memories is discarded). `apply=false` previews."
        ),
        tags=TAGS,
        parameters=[q.DB_ID, q.TABLE],
        request=OptimizeMemoriesIn,
        responses={200: OptimizeMemoriesOut, **errors(400, 404, 409, 422), 502: ErrorOut},
    )
    def post(self, request: Request) -> Response:
        self.check_db_selector(request.query_params)
        body = json_body(request, OptimizeMemoriesIn)
        user_id = self.principal.read_scope(body["user_id"])
        if not isinstance(user_id, str):
            raise NotFound(f"No memories found for user {body['user_id']}")
        try:
            result = memory_optimize(user_id=user_id, apply=body["apply"], model=body.get("model") or None)
        except UnusableModel as exc:
            raise BadRequest(str(exc)) from None
        except MemoryOptimizationError as exc:
            raise APIError(f"Failed to optimize memories: {exc}", status=502) from None
        except MemoriesChanged:
            raise Conflict("The user's memories changed while they were being optimized; try again") from None
        if result is None:
            raise NotFound(f"No memories found for user {user_id}")
        payload = {
            "memories": [memory_data(memory) for memory in result.memories],
            "memories_before": result.memories_before,
            "memories_after": result.memories_after,
            "tokens_before": result.tokens_before,
            "tokens_after": result.tokens_after,
            "tokens_saved": result.tokens_saved,
            "reduction_percentage": result.reduction_percentage,
        }
        return Response(OptimizeMemoriesOut(payload).data)
