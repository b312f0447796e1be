"""Approvals: written with a run's pause, resolved by an operator, applied when the run continues.

The run pipeline calls ``approvals_on_run_end`` where it records a run's end or pause (in that
transaction): a pause whose tool calls carry ``approval_type: "required"`` gets one pending row,
owned by the run's owner, under the ``approval_id`` those tool calls carry in
every copy of the run (the runtime gives the ids with the pause, so its RunPaused event has them
too). Tool calls with ``approval_type: "audit"`` get a resolved row once the human decided them.
Wherever the call is nested (a team's member, a workflow's agent or team step), the row is the
top-level run's: that is the run that pauses, that the gate guards and that a resolution continues.

Resolving a pending row (``approval_resolve``) continues the run by itself: a durable background
continuation through the submit service, on behalf of the run's owner, with the resolution as the
decisions (approved: the tools run; rejected: "Function call was rejected by the user", with the
resolver's note). The continue gate (approvals.gate) keeps the owner from deciding it instead.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone

from core.auth import OPEN, Principal
from core.errors import DomainError
from core.tenancy import ALL_USERS, scope_queryset
from sessions.models import Run, RunStatus, SessionType

from .models import Approval, ApprovalStatus, ApprovalType

logger = logging.getLogger("agno_site.approvals")

RESOLVABLE = (ApprovalStatus.APPROVED, ApprovalStatus.REJECTED)


class ApprovalNotFound(DomainError):
    status_code, error_code = 404, "approval_not_found"

    def __init__(self) -> None:
        super().__init__("Approval not found")


class ApprovalAlreadyResolved(DomainError):
    status_code, error_code = 409, "approval_already_resolved"

    def __init__(self, status: str) -> None:
        super().__init__(f"Approval is already '{status}' and cannot be resolved")


# ---- the tool calls of a run output -----------------------------------------------------------


def tool_executions(output: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every ToolExecution dict of a run output, wherever the call is nested: its tools, its
    requirements' (a paused team's member calls, naming the member), and those of a
    workflow's agent and team steps (``step_executor_runs``: each the RunOutput the runtime made,
    never the caller's answers, which a workflow keeps in its ``step_requirements``), and a team's
    members' runs (``member_responses``: once continued, a member's answered calls are only
    there, as in Agno). A call in more than one place is in the list as often."""
    found: list[dict[str, Any]] = [te for te in output.get("tools") or [] if isinstance(te, dict)]
    for req in output.get("requirements") or []:
        te = req.get("tool_execution") if isinstance(req, dict) else None
        if isinstance(te, dict):
            found.append(te)
    for nested in [*(output.get("step_executor_runs") or []), *(output.get("member_responses") or [])]:
        if isinstance(nested, dict):
            found.extend(tool_executions(nested))
    return found


def paused_requirements(output: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The RunRequirement dicts a paused run shows its human: its own (an agent's, a team's with
    its members'), or a workflow's paused agent or team step's open ones (the pause's
    ``executor_requirements``)."""
    own = [dict(req) for req in output.get("requirements") or [] if isinstance(req, dict)]
    if own:
        return own
    for executor_run in output.get("step_executor_runs") or []:
        if isinstance(executor_run, dict) and executor_run.get("status") == RunStatus.PAUSED:
            nested = [
                dict(req) for req in paused_requirements(executor_run) or []
                if isinstance(req.get("tool_execution"), dict) and waiting(req["tool_execution"])
            ]
            if nested:
                return nested
    return None


def decided_calls(decisions: Iterable[Any] | None) -> list[dict[str, Any]]:
    """The ToolExecution dicts a continue's decisions carry, whatever their shape: ToolExecution
    dicts, RunRequirement dicts (a requirement-level ``confirmation`` fills the call's, as the
    runtime reads it), or a workflow's StepRequirement dicts with ``executor_requirements``."""
    found: list[dict[str, Any]] = []
    for item in decisions or ():
        if not isinstance(item, Mapping):
            continue
        nested = item.get("executor_requirements")
        if isinstance(nested, list):
            found.extend(decided_calls(nested))
        elif isinstance(item.get("tool_execution"), Mapping):
            te = dict(item["tool_execution"])
            if te.get("confirmed") is None and item.get("confirmation") is not None:
                te["confirmed"] = item["confirmation"]
            found.append(te)
        elif "tool_call_id" in item:
            found.append(dict(item))
    return found


def waiting(te: Mapping[str, Any]) -> bool:
    """Still waiting for a human (the runtime clears these flags once a decision is applied)."""
    return bool(te.get("requires_confirmation") or te.get("requires_user_input") or te.get("external_execution_required"))


def pause_type(te: Mapping[str, Any]) -> str:
    if te.get("requires_user_input") or te.get("answered"):
        return "user_input"
    if te.get("external_execution_required") or (te.get("result") is not None and te.get("confirmed") is None):
        return "external_execution"
    return "confirmation"


def _source(record: Any) -> tuple[str, dict[str, str | None], str]:
    """The kind of the run's component, its id under that kind's key, and its name."""
    kind = str(record.session_type or SessionType.AGENT)
    name = str((record.component_data or {}).get("name") or "")
    key = {SessionType.TEAM: "team_id", SessionType.WORKFLOW: "workflow_id"}.get(kind, "agent_id")
    ids: dict[str, str | None] = {"agent_id": None, "team_id": None, "workflow_id": None, key: record.component_id}
    return kind, ids, name


def _context(names: Iterable[str], source_name: str) -> dict[str, Any]:
    return {"tool_names": list(names), **({"source_name": source_name} if source_name else {})}


# ---- the pause: rows written with the run's end ----------------------------------------------


def approvals_on_run_end_observed(end: Any) -> None:
    """The run-end observer approvals registers with the run pipeline (approvals.apps):
    ``end`` is its ``RunEnd``; a run that never started has no tool calls to record."""
    if end.record is not None:
        approvals_on_run_end(end.record)


def approvals_concern_run_end(end: Any) -> bool:
    """Whether a run's end may write approval rows: it has tool calls of an approval type (what
    the pipeline asks before opening the observers' savepoint; most runs have none)."""
    return end.record is not None and bool(_approval_executions(end.record.output))


def _approval_executions(output: Any) -> list[dict[str, Any]]:
    if not isinstance(output, dict):
        return []
    return [te for te in tool_executions(output) if te.get("approval_type") and te.get("approval_id")]


def approvals_on_run_end(record: Any) -> list[Approval]:
    """The approval rows a run's end (or pause) makes, written in the caller's transaction.

    ``record``: the run as the sessions service writes it (sessions.services.runs.RunRecord). The
    runtime gave the paused approval calls their ids (engine.hitl.approval_ids); a pause
    writes the pending row of its "required" calls, and an audited call gets its resolved row
    once it was decided. Ids with a row already (an earlier pause, a continuation) are skipped."""
    executions = _approval_executions(record.output)
    if not executions:
        return []  # the common case: nothing to read or write
    approvals = scope_queryset(Approval.objects, record.owner_id)
    written = set(approvals.filter(pk__in={te["approval_id"] for te in executions}).values_list("pk", flat=True))
    kind, ids, name = _source(record)
    now = timezone.now()
    common = {"user_id": record.owner_id, "run_id": record.run_id, "session_id": record.session_id, "source_type": kind, "source_name": name, **ids}
    required: dict[str, list[dict[str, Any]]] = {}
    audited: dict[str, dict[str, Any]] = {}
    for te in executions:
        if te["approval_id"] in written:
            continue
        if te["approval_type"] == ApprovalType.REQUIRED and waiting(te) and record.status == RunStatus.PAUSED:
            required.setdefault(te["approval_id"], []).append(te)
        elif te["approval_type"] == ApprovalType.AUDIT and not waiting(te):
            audited.setdefault(te["approval_id"], te)
    made: list[Approval] = []
    requirements = paused_requirements(record.output)
    for approval_id, calls in required.items():
        first = calls[0]
        made.append(Approval(
            id=approval_id, status=ApprovalStatus.PENDING, approval_type=ApprovalType.REQUIRED, pause_type=pause_type(first),
            tool_name=first.get("tool_name") or "", tool_args=first.get("tool_args"), requirements=requirements,
            context=_context(dict.fromkeys(te.get("tool_name") or "" for te in calls), name), created_at=now, **common,
        ))
    for approval_id, te in audited.items():
        made.append(Approval(
            id=approval_id, status=ApprovalStatus.REJECTED if te.get("confirmed") is False else ApprovalStatus.APPROVED,
            approval_type=ApprovalType.AUDIT, pause_type=pause_type(te), tool_name=te.get("tool_name") or "",
            tool_args=te.get("tool_args"), context=_context([te.get("tool_name") or ""], name), resolved_at=now, created_at=now, **common,
        ))
    if made:
        Approval.objects.bulk_create(made)
        logger.info("run %s: %d approval row(s) written", record.run_id, len(made))
    return made


# ---- applying a resolution ------------------------------------------------------------------


def decisions_from(approval: Approval, run_data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """ToolExecution dicts with the resolution applied (Agno's ``_apply_approval_to_tools``):
    approved confirms the approval's tool calls, with resolution_data's values (user input) or
    result (external execution); rejected rejects them, with the resolver's note."""
    data = approval.resolution_data if isinstance(approval.resolution_data, dict) else {}
    approved = approval.status == ApprovalStatus.APPROVED
    values = data.get("values") if isinstance(data.get("values"), dict) else data
    decisions, seen = [], set()
    for te in tool_executions(run_data):  # a team member's calls are in its requirements, a workflow step's in its executor run
        if not waiting(te) or te.get("approval_id") != approval.id or te.get("tool_call_id") in seen:
            continue
        seen.add(te["tool_call_id"])
        decision = {"tool_call_id": te["tool_call_id"]}
        if not approved:
            decision["confirmed"] = False
            if approval.note:
                decision["confirmation_note"] = approval.note
        else:
            if te.get("requires_confirmation"):
                decision["confirmed"] = True
            if te.get("requires_user_input"):
                decision["user_input_schema"] = [
                    {**field, "value": values.get(field.get("name"), field.get("value"))} for field in te.get("user_input_schema") or []
                ]
            if te.get("external_execution_required") and "result" in data:
                decision["result"] = data["result"]
        decisions.append(decision)
    return decisions


# ---- writes -----------------------------------------------------------------------------------


def approval_resolve(
    *, approval_id: str, status: str, resolved_by: str | None, resolution_data: dict[str, Any] | None = None,
    user: Any = ALL_USERS, continue_run: bool = True,
) -> Approval:
    """Resolve a pending approval (``user``: the resolver's scope; the caller checked who may)
    and, for a "required" one, continue its run by itself as a durable background job, in the
    same transaction (the job is handed to the workers once it commits).

    ApprovalAlreadyResolved when it is not pending any more: the row is locked while it is read,
    and the update is conditional on its status, so of two resolvers exactly one wins (SQLite,
    which has no row locks, relies on the condition alone)."""
    if status not in RESOLVABLE:
        raise ValueError(f"status must be one of {', '.join(RESOLVABLE)}")
    now = timezone.now()
    with transaction.atomic():
        approvals = scope_queryset(Approval.objects, user)
        approval = approvals.select_for_update().filter(pk=approval_id).first()
        if approval is None:
            raise ApprovalNotFound()
        if not approval.pending:
            raise ApprovalAlreadyResolved(approval.status)
        changed = approvals.filter(pk=approval_id, status=ApprovalStatus.PENDING).update(
            status=status, resolved_by=resolved_by, resolved_at=now, updated_at=now, resolution_data=resolution_data,
        )
        if not changed:
            current = approvals.filter(pk=approval_id).values_list("status", flat=True).first()
            raise ApprovalAlreadyResolved(current or ApprovalStatus.CANCELLED)
        approval.status, approval.resolved_by, approval.resolved_at, approval.updated_at = status, resolved_by, now, now
        approval.resolution_data = resolution_data
        if continue_run and approval.approval_type == ApprovalType.REQUIRED:
            _continue_after(approval)
    logger.info("approval %s %s by %s", approval.pk, status, resolved_by or "-")
    return approval


def owner_principal(user_id: str | None) -> Principal:
    """The run's owner, bound to their own data as their browser would be: the continuation sees
    exactly the history and memories their own continue would."""
    return Principal(user_id=user_id, isolated=True, via="session") if user_id else OPEN


def _continue_after(approval: Approval) -> None:
    """The resolved approval's run continues, as its owner would continue it, in the background."""
    from engine import InvalidContinuation
    from agents.pipeline.runs import ComponentNotFound, RunNotContinuable, RunNotFound
    from agents.pipeline.submit import submit_continue

    from .gate import AdminApprovalRequired

    run = (
        scope_queryset(Run.objects, approval.user_id)
        .filter(pk=approval.run_id)
        .only("run_id", "status", "component_id", "run_type", "session_id", "user_id")
        .first()
    )
    if run is None or run.status != RunStatus.PAUSED:
        return  # continued meanwhile (by a caller who may decide it), or deleted
    try:
        with transaction.atomic():
            submit_continue(
                principal=owner_principal(approval.user_id), component_id=run.component_id, kind=run.run_type, run_id=run.pk,
                session_id=run.session_id, tools=None, stream=False, background=True, adopt=True,
            )
    except (ComponentNotFound, RunNotFound, RunNotContinuable, InvalidContinuation, AdminApprovalRequired) as exc:
        # Resolved all the same: the owner's continue applies the resolution, and the run says why not.
        logger.warning("approval %s: run %s was not continued: %s", approval.pk, run.pk, exc)


def approval_resolve_by_continue(*, principal: Principal, run_id: str, tools: list[dict[str, Any]] | None) -> None:
    """A caller the continue gate let decide a run whose approval was pending (an admin, a holder
    of approvals:write, anyone on a server without RBAC) continued it with their own decisions:
    the approval is theirs, approved unless they rejected one of its calls, and leaves the queue."""
    if not tools:
        return
    rejected = {te.get("tool_call_id") for te in decided_calls(tools) if te.get("confirmed") is False}
    now = timezone.now()
    pending = Approval.objects.unscoped("the caller continued this run; the run lookup checked they may").filter(
        run_id=run_id, approval_type=ApprovalType.REQUIRED, status=ApprovalStatus.PENDING,
    )
    for approval in pending.only("id", "user_id", "requirements"):
        calls = {
            te.get("tool_call_id") for te in tool_executions({"requirements": approval.requirements or []})
            if te.get("approval_id") == approval.pk
        }
        status = ApprovalStatus.REJECTED if calls & rejected or (rejected and not calls) else ApprovalStatus.APPROVED
        scope_queryset(Approval.objects, approval.user_id).filter(pk=approval.pk, status=ApprovalStatus.PENDING).update(
            status=status, resolved_by=principal.user_id, resolved_at=now, updated_at=now, resolution_data={"via": "continue"},
        )


def approval_delete(*, approval_id: str, user: Any = ALL_USERS) -> bool:
    deleted, _ = scope_queryset(Approval.objects, user).filter(pk=approval_id).delete()
    return bool(deleted)
