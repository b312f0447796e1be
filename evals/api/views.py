"""The /eval-runs family of the AgentOS API (agentos-api.md, "Eval runs").

Reads and writes go through the caller's scope: under user isolation a caller sees only their
own eval runs, and another's is a 404. ``POST /eval-runs`` accepts the eval as a background job
(evals.tasks) and, as AgentOS answers with the finished eval, waits for it on the event loop
(holding no thread) up to ``EVALS_SYNC_WAIT_SECONDS``; past that it answers 202 with the eval
run as it stands. ``?background=true`` (this server's extension) answers 202 at once.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from jobs.services.executor import in_run_thread
from jobs.services.jobs import QueueFull
from core.api.errors import BadRequest, Forbidden, NotFound, TooManyRequests, invalid
from core.api.params import boolean, choice, envelope, page, sort_order_param
from core.api.parsers import StrictJSONParser
from core.api.schema import ErrorOut, ValidationErrorOut, query_param
from core.api.views import AgentOSView, AsyncAgentOSView
from sessions.api.base import BodySchema
from sessions.api.inputs import json_body

from ..models import EvalStatus
from ..selectors import EvalRunFilters, eval_run_get, eval_run_list
from ..services import ComponentMissing, EvalForbidden, EvalInvalid, EvalRequest, EvalRunNotFound, eval_run_create, eval_run_rename, eval_runs_delete
from .serializers import EVAL_TYPES, DeleteEvalRunsIn, EvalOut, EvalRunIn, PaginatedEvalsOut, UpdateEvalRunIn, render_eval, render_eval_run

TAGS = ["Evals"]
EVAL_RUN_ID_PATH = OpenApiParameter("eval_run_id", OpenApiTypes.STR, OpenApiParameter.PATH)
DB_ID = query_param("db_id", "The ID of the database to use")
TABLE = query_param("table", "The database table to use")
ERRORS = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 422: ValidationErrorOut}
FINISHED = (EvalStatus.COMPLETED, EvalStatus.FAILED)
POLL_SECONDS = 0.1


def _translated(exc: Exception) -> Exception:
    if isinstance(exc, (EvalRunNotFound, ComponentMissing)):
        return NotFound(str(exc))
    if isinstance(exc, EvalInvalid):
        return BadRequest(str(exc))
    if isinstance(exc, EvalForbidden):
        return Forbidden(str(exc))
    if isinstance(exc, QueueFull):
        return TooManyRequests(str(exc), headers={"Retry-After": "5"})
    return exc


class EvalsAPIView(AgentOSView):
    schema = BodySchema()  # DELETE /eval-runs and PATCH take JSON bodies
    scope_family = "evals"

    def handle_exception(self, exc: Exception) -> Any:
        return super().handle_exception(_translated(exc))


def _eval_types(params: Any) -> tuple[str, ...] | None:
    raw = params.get("eval_types")
    if not raw:
        return None
    wanted = tuple(item.strip() for item in str(raw).split(","))
    for item in wanted:
        if item not in EVAL_TYPES:
            raise invalid(["query", "eval_types"], f"Invalid eval_type: {item!r}. Valid types: {', '.join(EVAL_TYPES)}", value=raw)
    return wanted


def _filters(params: Any) -> EvalRunFilters:
    return EvalRunFilters(
        agent_id=params.get("agent_id") or None, team_id=params.get("team_id") or None, workflow_id=params.get("workflow_id") or None,
        model_id=params.get("model_id") or None, component_kind=choice(params, "type", ("agent", "team", "workflow")),
        eval_types=_eval_types(params),
    )


class EvalRunsView(EvalsAPIView, AsyncAgentOSView):
    """GET (list), POST (run an eval) and DELETE (many) on /eval-runs. Async, so that a POST
    waiting for its eval holds no thread; each handler's database work runs in ``prepare_*``."""

    parser_classes = [StrictJSONParser]

    async def in_thread(self, fn, /, *args: Any, **kwargs: Any) -> Any:
        return await in_run_thread(fn, *args, **kwargs)

    # -- list --
    def prepare_get(self, request: Request) -> dict[str, Any]:
        params = request.query_params
        self.check_db_selector(params)
        window = page(params, max_limit=None)
        descending = sort_order_param(params)
        rows, total = eval_run_list(
            user=self.principal.read_scope(), filters=_filters(params), sort_by=params.get("sort_by"), descending=descending,
            offset=window.offset, limit=window.limit,
        )
        return envelope([render_eval(row) for row in rows], window, total)

    @extend_schema(
        operation_id="get_eval_runs",
        tags=TAGS,
        parameters=[
            query_param("agent_id", "Agent ID"),
            query_param("team_id", "Team ID"),
            query_param("workflow_id", "Workflow ID"),
            query_param("model_id", "Model ID"),
            query_param("type", "Filter type", enum=["agent", "team", "workflow"]),
            query_param("limit", "Number of eval runs to return", OpenApiTypes.INT, default=20),
            query_param("page", "Page number, from 1", OpenApiTypes.INT, default=1),
            query_param("sort_by", "Field to sort by (unknown fields sort by created_at)", default="created_at"),
            query_param("sort_order", "Sort order (asc or desc)", enum=["asc", "desc"], default="desc"),
            DB_ID,
            TABLE,
            query_param("eval_types", "Comma-separated eval types (accuracy,agent_as_judge,performance,reliability)"),
        ],
        responses={200: PaginatedEvalsOut, **ERRORS},
    )
    async def get(self, request: Request) -> Response:
        return Response(self.prepared)

    # -- run --
    def prepare_post(self, request: Request) -> tuple[str, Any, bool, dict[str, Any] | None]:
        params = request.query_params
        self.check_db_selector(params)
        background = boolean(params, "background", False)
        body = json_body(request, EvalRunIn)
        principal = self.principal
        visible = {kind: principal.visible_ids(f"{kind}s") for kind in ("agent", "team", "workflow")}
        row = eval_run_create(owner_id=principal.owner(), request=EvalRequest(**body), visible=visible, principal=principal)
        # A background eval answers with its row as accepted: read again, a fast worker may have
        # finished it already, and the 202 would read as a finished eval's 200.
        return row.run_id, principal.read_scope(), background, render_eval_run(row) if background else None

    @extend_schema(
        operation_id="run_eval",
        tags=TAGS,
        parameters=[
            DB_ID,
            TABLE,
            query_param(
                "background",
                "Answer 202 at once with the queued eval run, and run it in the background (this server's extension; poll GET /eval-runs/{id})",
                OpenApiTypes.BOOL, default=False,
            ),
        ],
        request=EvalRunIn,
        responses={200: EvalOut, 202: EvalOut, 429: ErrorOut, **ERRORS},
    )
    async def post(self, request: Request) -> Response:
        run_id, user, background, accepted = self.prepared
        if background:
            return Response(accepted, status=202)
        deadline = time.monotonic() + settings.EVALS_SYNC_WAIT_SECONDS
        while True:
            row = await self.in_thread(_row_or_none, user, run_id)
            if row is None:  # deleted meanwhile
                raise NotFound("Eval run not found")
            if row.status in FINISHED:
                return Response(render_eval_run(row))
            if time.monotonic() >= deadline:
                return Response(render_eval_run(row), status=202)
            await asyncio.sleep(POLL_SECONDS)

    # -- delete many --
    def prepare_delete(self, request: Request) -> None:
        self.check_db_selector(request.query_params)
        body = json_body(request, DeleteEvalRunsIn)
        eval_runs_delete(user=self.principal.read_scope(), run_ids=body["eval_run_ids"])

    @extend_schema(
        operation_id="delete_eval_runs",
        tags=TAGS,
        parameters=[DB_ID, TABLE],
        request=DeleteEvalRunsIn,
        responses={204: None, **ERRORS},
    )
    async def delete(self, request: Request) -> Response:
        return Response(status=204)


def _row_or_none(user: Any, run_id: str) -> Any:
    try:
        return eval_run_get(user=user, run_id=run_id)
    except EvalRunNotFound:
        return None


class EvalRunDetailView(EvalsAPIView):
    @extend_schema(
        operation_id="get_eval_run",
        tags=TAGS,
        parameters=[EVAL_RUN_ID_PATH, DB_ID, TABLE],
        responses={200: EvalOut, **ERRORS},
    )
    def get(self, request: Request, eval_run_id: str) -> Response:
        self.check_db_selector(request.query_params)
        return Response(render_eval(eval_run_get(user=self.principal.read_scope(), run_id=eval_run_id)))

    @extend_schema(
        operation_id="update_eval_run",
        tags=TAGS,
        parameters=[EVAL_RUN_ID_PATH, DB_ID, TABLE],
        request=UpdateEvalRunIn,
        responses={200: EvalOut, **ERRORS},
    )
    def patch(self, request: Request, eval_run_id: str) -> Response:
        self.check_db_selector(request.query_params)
        body = json_body(request, UpdateEvalRunIn)
        return Response(render_eval(eval_run_rename(user=self.principal.read_scope(), run_id=eval_run_id, name=body["name"])))
