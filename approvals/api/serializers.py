"""The /approvals bodies, in AgentOS 3.1.10's shapes (``agno.os.routers.approvals.schema``):
timestamps as epoch seconds, explicit nulls."""
from __future__ import annotations

from typing import Any

from rest_framework import serializers

from core.api.schema import PaginationInfoOut
from sessions.api.serializers.common import RUN_STATUSES, JSONObjectIn, ObjectField, ObjectListField, Text, output, render

from ..models import Approval

RESOLVE_PATTERN = "^(approved|rejected)$"


class ApprovalResolveIn(serializers.Serializer):
    """``ApprovalResolve``."""

    status = Text(allow_blank=True, error_messages={"required": "Field required", "null": "Input should be a valid string"})
    resolved_by = Text(required=False, allow_null=True, max_length=255)
    resolution_data = JSONObjectIn(required=False, allow_null=True)

    def validate_status(self, value: str) -> str:
        if value not in ("approved", "rejected"):
            raise serializers.ValidationError(f"String should match pattern '{RESOLVE_PATTERN}'", code="string_pattern_mismatch")
        return value


class ApprovalOut(serializers.Serializer):
    """``ApprovalResponse``."""

    id = serializers.CharField()
    run_id = serializers.CharField()
    session_id = serializers.CharField()
    status = serializers.CharField()
    source_type = serializers.CharField()
    approval_type = output(serializers.CharField())
    pause_type = output(serializers.CharField())
    tool_name = output(serializers.CharField())
    tool_args = output(ObjectField())
    expires_at = output(serializers.IntegerField())
    agent_id = output(serializers.CharField())
    team_id = output(serializers.CharField())
    workflow_id = output(serializers.CharField())
    user_id = output(serializers.CharField())
    schedule_id = output(serializers.CharField())
    schedule_run_id = output(serializers.CharField())
    source_name = output(serializers.CharField())
    requirements = output(ObjectListField())
    context = output(ObjectField())
    resolution_data = output(ObjectField())
    resolved_by = output(serializers.CharField())
    resolved_at = output(serializers.IntegerField())
    created_at = output(serializers.IntegerField())
    updated_at = output(serializers.IntegerField())
    run_status = output(serializers.ChoiceField(choices=RUN_STATUSES))


class PaginatedApprovalsOut(serializers.Serializer):
    data = ApprovalOut(many=True)
    meta = PaginationInfoOut()


class ApprovalCountOut(serializers.Serializer):
    count = serializers.IntegerField()


class ApprovalStatusOut(serializers.Serializer):
    """``ApprovalStatusResponse``: what a poller needs."""

    approval_id = serializers.CharField()
    status = serializers.CharField()
    run_id = serializers.CharField()
    resolved_at = output(serializers.IntegerField())
    resolved_by = output(serializers.CharField())


def epoch(value: Any) -> int | None:
    return int(value.timestamp()) if value is not None else None


def approval_data(approval: Approval, run_status: str | None) -> dict[str, Any]:
    return {
        "id": approval.pk,
        "run_id": approval.run_id,
        "session_id": approval.session_id,
        "status": approval.status,
        "source_type": approval.source_type,
        "approval_type": approval.approval_type,
        "pause_type": approval.pause_type,
        "tool_name": approval.tool_name or None,
        "tool_args": approval.tool_args,
        "expires_at": epoch(approval.expires_at),
        "agent_id": approval.agent_id,
        "team_id": approval.team_id,
        "workflow_id": approval.workflow_id,
        "user_id": approval.user_id,
        "schedule_id": approval.schedule_id,
        "schedule_run_id": approval.schedule_run_id,
        "source_name": approval.source_name or None,
        "requirements": approval.requirements,
        "context": approval.context,
        "resolution_data": approval.resolution_data,
        "resolved_by": approval.resolved_by,
        "resolved_at": epoch(approval.resolved_at),
        "created_at": epoch(approval.created_at),
        "updated_at": epoch(approval.updated_at),
        "run_status": run_status,
    }


def render_approval(approval: Approval, run_status: str | None) -> dict[str, Any]:
    return render(ApprovalOut, approval_data(approval, run_status))


def render_status(approval: Approval) -> dict[str, Any]:
    return render(ApprovalStatusOut, {
        "approval_id": approval.pk, "status": approval.status, "run_id": approval.run_id,
        "resolved_at": epoch(approval.resolved_at), "resolved_by": approval.resolved_by,
    })
