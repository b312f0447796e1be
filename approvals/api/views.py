"""The /approvals family of the AgentOS API (agentos-api.md §5.3).

Reads go through the caller's scope: under user isolation a caller sees only their own runs'
approvals, and another's is a 404. Resolving and deleting are an operator's (approvals.gate).
"""
from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.params import choice, created_window, envelope, page
from core.api.schema import ErrorOut, ValidationErrorOut, query_param
from core.api.views import AgentOSView
from sessions.api.inputs import json_body

from ..gate import resolver_scope
from ..models import ApprovalStatus, ApprovalType
from ..selectors import ApprovalFilters, approval_get, approval_list, approval_pending_count, run_statuses
from ..services import ApprovalNotFound, approval_delete, approval_resolve
from .serializers import (
    ApprovalCountOut,
    ApprovalOut,
    ApprovalResolveIn,
    ApprovalStatusOut,
    PaginatedApprovalsOut,
    render_approval,
    render_status,
)

TAGS = ["Approvals"]
APPROVAL_ID_PATH = OpenApiParameter("approval_id", OpenApiTypes.STR, OpenApiParameter.PATH)
USER_ID = query_param("user_id", "Only this user's approvals (ignored, and forced to the caller, under user isolation)")
ERRORS = {401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 422: ValidationErrorOut}
TEXT_FILTERS = ("source_type", "pause_type", "agent_id", "team_id", "workflow_id", "schedule_id", "run_id")


class ApprovalsAPIView(AgentOSView):
    scope_family = "approvals"



def _filters(params: Any) -> ApprovalFilters:
    return ApprovalFilters(
        status=choice(params, "status", ApprovalStatus.values),
        approval_type=choice(params, "approval_type", ApprovalType.values),
        **{name: params.get(name) or None for name in TEXT_FILTERS},
        **created_window(params),
    )


class ApprovalsView(ApprovalsAPIView):
    @extend_schema(
        operation_id="list_approvals_approvals_get",
        tags=TAGS,
        parameters=[
            query_param("status", "Only approvals of this status", enum=ApprovalStatus.values),
            query_param("source_type", "Only approvals of this kind of component (agent, team, workflow)"),
            query_param("approval_type", "Only approvals of this type", enum=ApprovalType.values),
            query_param("pause_type", "Only approvals of this pause (confirmation, user_input, external_execution)"),
            query_param("agent_id", "Only approvals of this agent's runs"),
            query_param("team_id", "Only approvals of this team's runs"),
            query_param("workflow_id", "Only approvals of this workflow's runs"),
            USER_ID,
            query_param("schedule_id", "Only approvals of this schedule's runs"),
            query_param("run_id", "Only approvals of this run"),
            query_param("created_after", "Only approvals created at or after this Unix time (seconds; this server's extension)", OpenApiTypes.INT),
            query_param("created_before", "Only approvals created at or before this Unix time (seconds; this server's extension)", OpenApiTypes.INT),
            query_param("limit", "Items per page (1 to 1000)", OpenApiTypes.INT, default=100),
            query_param("page", "Page number, from 1 (needs limit)", OpenApiTypes.INT, default=1),
        ],
        responses={200: PaginatedApprovalsOut, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        window = page(params, default_limit=100, max_limit=1000)
        approvals, total = approval_list(
            user=self.principal.read_scope(params.get("user_id") or None), filters=_filters(params), offset=window.offset, limit=window.limit,
        )
        statuses = run_statuses(approvals)
        return Response(envelope([render_approval(approval, statuses.get(approval.run_id)) for approval in approvals], window, total))


class ApprovalCountView(ApprovalsAPIView):
    @extend_schema(
        operation_id="get_approval_count_approvals_count_get",
        tags=TAGS,
        parameters=[USER_ID],
        responses={200: ApprovalCountOut, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        user = self.principal.read_scope(request.query_params.get("user_id") or None)
        return Response({"count": approval_pending_count(user=user)})


class ApprovalDetailView(ApprovalsAPIView):
    @extend_schema(
        operation_id="get_approval_approvals__approval_id__get",
        tags=TAGS,
        parameters=[APPROVAL_ID_PATH],
        responses={200: ApprovalOut, **ERRORS},
    )
    def get(self, request: Request, approval_id: str) -> Response:
        approval = approval_get(user=self.principal.read_scope(), approval_id=approval_id)
        return Response(render_approval(approval, run_statuses([approval]).get(approval.run_id)))

    @extend_schema(
        operation_id="delete_approval_approvals__approval_id__delete",
        tags=TAGS,
        parameters=[APPROVAL_ID_PATH],
        request=None,
        responses={204: None, **ERRORS},
    )
    def delete(self, request: Request, approval_id: str) -> Response:
        if not approval_delete(approval_id=approval_id, user=resolver_scope(self.principal)):
            raise ApprovalNotFound()
        return Response(status=204)


class ApprovalStatusView(ApprovalsAPIView):
    @extend_schema(
        operation_id="get_approval_status_approvals__approval_id__status_get",
        tags=TAGS,
        parameters=[APPROVAL_ID_PATH],
        responses={200: ApprovalStatusOut, **ERRORS},
    )
    def get(self, request: Request, approval_id: str) -> Response:
        return Response(render_status(approval_get(user=self.principal.read_scope(), approval_id=approval_id)))


class ApprovalResolveView(ApprovalsAPIView):
    @extend_schema(
        operation_id="resolve_approval_approvals__approval_id__resolve_post",
        tags=TAGS,
        parameters=[APPROVAL_ID_PATH],
        request=ApprovalResolveIn,
        responses={200: ApprovalOut, 409: ErrorOut, **ERRORS},
    )
    def post(self, request: Request, approval_id: str) -> Response:
        scope = resolver_scope(self.principal)
        body = json_body(request, ApprovalResolveIn)
        # AgentOS: the authenticated subject always overrides the body's resolved_by.
        resolved_by = self.principal.user_id or body.get("resolved_by") or None
        approval = approval_resolve(
            approval_id=approval_id, status=body["status"], resolved_by=resolved_by,
            resolution_data=body.get("resolution_data"), user=scope,
        )
        return Response(render_approval(approval, run_statuses([approval]).get(approval.run_id)))
