"""Reads of approvals, each through the caller's scope (core.tenancy): a row the caller may not
see is a missing row."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from core.querysets import window
from core.tenancy import scope_queryset
from sessions.models import Run

from .models import Approval, ApprovalStatus
from .services import ApprovalNotFound


@dataclass(frozen=True)
class ApprovalFilters:
    """GET /approvals' filters; None: not filtered on."""

    status: str | None = None
    source_type: str | None = None
    approval_type: str | None = None
    pause_type: str | None = None
    agent_id: str | None = None
    team_id: str | None = None
    workflow_id: str | None = None
    schedule_id: str | None = None
    run_id: str | None = None
    created_after: datetime | None = None  # inclusive
    created_before: datetime | None = None  # exclusive

    def applied(self, approvals: Any) -> Any:
        wanted = {field.name: getattr(self, field.name) for field in fields(self) if not field.name.startswith("created_")}
        approvals = approvals.filter(**{name: value for name, value in wanted.items() if value})
        if self.created_after is not None:
            approvals = approvals.filter(created_at__gte=self.created_after)
        if self.created_before is not None:
            approvals = approvals.filter(created_at__lt=self.created_before)
        return approvals


def approval_list(*, user: Any, filters: ApprovalFilters, offset: int, limit: int) -> tuple[list[Approval], int]:
    """One page of the approvals ``user`` may see, newest first, and how many there are."""
    approvals = filters.applied(scope_queryset(Approval.objects, user))
    total = approvals.count()
    return window(approvals.order_by("-created_at", "-id"), offset=offset, limit=limit), total


def approval_pending_count(*, user: Any) -> int:
    return scope_queryset(Approval.objects, user).filter(status=ApprovalStatus.PENDING).count()


def approval_get(*, user: Any, approval_id: str) -> Approval:
    approval = scope_queryset(Approval.objects, user).filter(pk=approval_id).first()
    if approval is None:
        raise ApprovalNotFound()
    return approval


def run_statuses(approvals: Iterable[Approval]) -> dict[str, str]:
    """The linked runs' statuses now (``run_status``), in one read: a run counts only when its
    owner is its approval's, so a row can never reveal another user's run."""
    owners = {approval.run_id: approval.user_id for approval in approvals}
    if not owners:
        return {}
    rows = (
        Run.objects.unscoped("the runs of approvals the caller may see; each kept only under its approval's owner")
        .filter(pk__in=list(owners))
        .values_list("run_id", "user_id", "status")
    )
    return {run_id: status for run_id, user_id, status in rows if owners.get(run_id) == user_id}
