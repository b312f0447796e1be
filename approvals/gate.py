"""Who may decide an approval, and the gate on a continue of a run whose approval is pending.

AgentOS (agentos-api.md §5.3): with RBAC on, a pending "required" approval refuses its run's
continue (403) unless the caller is an admin or holds ``approvals:write``; once it is resolved, a
continue applies the resolution. A server without RBAC (the open server) has no gate. Resolving
and deleting are an admin's under user isolation (others: 404, as for a row they cannot see).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.auth import Principal
from core.errors import DomainError
from core.tenancy import ALL_USERS, scope_queryset
from sessions.models import Run, RunStatus, SessionType

from .models import Approval, ApprovalType
from .services import ApprovalNotFound, decided_calls, decisions_from

ADMIN_APPROVAL_REQUIRED = "This run requires admin approval before it can be continued"


class AdminApprovalRequired(DomainError):
    """AgentOS's 403 on the wire, whichever surface continued the run (core.errors)."""

    status_code, error_code = 403, "admin_approval_required"

    def __init__(self) -> None:
        super().__init__(ADMIN_APPROVAL_REQUIRED)


def decides_own_approvals(principal: Principal) -> bool:
    """Whether the caller's own decisions may settle a pending approval (they pass the gate).

    Browser users and isolated tokens without approvals:write do not; neither do the anonymous
    guests of a server that keeps them apart. The open server (no authentication) has no RBAC."""
    if principal.is_admin:
        return True
    if principal.scope_enforced:
        return principal.can("approvals", "write")
    return principal.via == "none" and not principal.guest


def resolver_scope(principal: Principal) -> Any:
    """Whose approvals the caller may resolve or delete (the route gate already required
    approvals:write / approvals:delete of a token): everyone's for an admin, the open server, or a
    token without user isolation; ApprovalNotFound for anyone bound to their own data."""
    if principal.is_admin:
        return ALL_USERS
    if principal.isolated or principal.guest or principal.via == "session":
        raise ApprovalNotFound()
    return principal.read_scope()


# How far up a nested run's parents are followed (a workflow's team step's member is three deep).
MAX_NESTING = 8


def run_lineage(*, user: Any, run_id: str) -> list[str]:
    """``run_id`` and the runs it is nested in (a team member's team, a workflow step's
    workflow), innermost first, as far as ``user`` may see them."""
    runs = scope_queryset(Run.objects, user)
    lineage = [run_id]
    for _ in range(MAX_NESTING):
        parent = runs.filter(pk=lineage[-1]).values_list("parent_run_id", flat=True).first()
        if not parent or parent in lineage:
            break
        lineage.append(parent)
    return lineage


def approval_for_run(*, user: Any, run_id: str) -> Approval | None:
    """The latest "required" approval that ``user`` may see of ``run_id`` or of a run it is nested
    in (the row is the top-level run's; continuing the nested run on its own must not skip it).
    None: none, or not theirs."""
    return (
        scope_queryset(Approval.objects, user)
        .filter(run_id__in=run_lineage(user=user, run_id=run_id), approval_type=ApprovalType.REQUIRED)
        .order_by("-created_at", "-id")
        .first()
    )


def continue_gate(
    *, principal: Principal, run_id: str, requested_user_id: str | None, tools: list[dict[str, Any]] | None,
) -> list[dict[str, Any]] | None:
    """The decisions a continue of ``run_id`` goes on with, or AdminApprovalRequired.

    Pending: refused, unless the caller decides it (their decisions then resolve it, see
    ``approval_resolve_by_continue``). Resolved: its resolution decides its own tool calls,
    whatever the caller sent for them (the owner cannot overturn a rejection); the caller's
    decisions stand for the run's other paused calls. A workflow's decisions are its
    StepRequirement dicts, the resolution going into the paused step's ``executor_requirements``.
    Runs the caller may not see are left to the run lookup (a 404, never this 403)."""
    approval = approval_for_run(user=principal.read_scope(requested_user_id), run_id=run_id)
    if approval is None:
        return tools
    if approval.pending:
        if not decides_own_approvals(principal):
            raise AdminApprovalRequired()
        return tools
    run = (
        scope_queryset(Run.objects, approval.user_id).filter(pk=run_id, status=RunStatus.PAUSED).only("run_data", "run_type", "user_id").first()
    )
    if run is None:
        return tools  # not paused any more: the continue says so itself
    resolution = decisions_from(approval, run.run_data or {})
    if run.run_type == SessionType.WORKFLOW:
        return _merged_steps(resolution, tools, run.run_data or {})
    return _merged(resolution, tools)


def _merged(resolution: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    if not resolution:
        return tools
    decided = {te["tool_call_id"] for te in resolution}
    others = [te for te in tools or [] if not (isinstance(te, Mapping) and te.get("tool_call_id") in decided)]
    return [*others, *resolution]


def _merged_steps(resolution: list[dict[str, Any]], steps: list[dict[str, Any]] | None, run_data: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """A workflow's answer to its paused agent or team step: the caller's answers for the step's
    other calls, and the resolution for the approval's (each the paused RunRequirement, as the
    run stored it, with the resolution's decision: no requirement-level ``confirmation`` of the
    caller's can stand for them)."""
    active = (run_data.get("step_requirements") or [None])[-1]
    if not resolution or not isinstance(active, Mapping) or not active.get("requires_executor_input"):
        return steps
    decided = {te["tool_call_id"] for te in resolution}
    paused = {
        req["tool_execution"].get("tool_call_id"): req for req in active.get("executor_requirements") or []
        if isinstance(req, Mapping) and isinstance(req.get("tool_execution"), Mapping)
    }
    others = [
        answer
        for step in steps or [] if isinstance(step, Mapping) and step.get("step_id") in (None, active.get("step_id"))
        and isinstance(step.get("executor_requirements"), list)
        for answer in step["executor_requirements"]
        if not (isinstance(answer, Mapping) and any(te.get("tool_call_id") in decided for te in decided_calls([answer])))
    ]
    resolved = []
    for te in resolution:
        stored = paused.get(te["tool_call_id"]) or {}
        decision = {"confirmation": te["confirmed"]} if "confirmed" in te else {}
        resolved.append({**stored, **decision, "tool_execution": {**(stored.get("tool_execution") or {}), **te}})
    return [{"step_id": active.get("step_id"), "executor_requirements": [*others, *resolved]}]
