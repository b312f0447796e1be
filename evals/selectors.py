"""Reads of eval runs, datasets and batches, each through the caller's scope (core.tenancy): a
row the caller may not see is a missing row. An eval run read while its job has ended without
finishing it is settled failed first (``eval_runs_settle_abandoned``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.querysets import window
from core.tenancy import scope_queryset

from .models import EvalDataset, EvalRun
from .services import EvalRunNotFound, eval_runs_settle_abandoned

SORT_COLUMNS = {name: name for name in ("created_at", "updated_at", "name", "eval_type", "agent_id", "team_id", "workflow_id", "model_id", "status", "score")}


@dataclass(frozen=True)
class EvalRunFilters:
    """GET /eval-runs' filters; None: not filtered on."""

    agent_id: str | None = None
    team_id: str | None = None
    workflow_id: str | None = None
    model_id: str | None = None
    component_kind: str | None = None  # the ``type`` parameter: agent | team | workflow
    eval_types: tuple[str, ...] | None = None

    def applied(self, rows: Any) -> Any:
        wanted = {"agent_id": self.agent_id, "team_id": self.team_id, "workflow_id": self.workflow_id, "model_id": self.model_id}
        rows = rows.filter(**{name: value for name, value in wanted.items() if value})
        if self.component_kind:
            rows = rows.filter(component_kind=self.component_kind)
        if self.eval_types:
            rows = rows.filter(eval_type__in=self.eval_types)
        return rows


def eval_run_list(*, user: Any, filters: EvalRunFilters, sort_by: str | None, descending: bool, offset: int, limit: int) -> tuple[list[EvalRun], int]:
    """One page of the eval runs ``user`` may see and how many there are: two queries. An
    unknown ``sort_by`` sorts by ``created_at``, as AgentOS ignores unknown columns."""
    rows = filters.applied(scope_queryset(EvalRun.objects, user))
    total = rows.count()
    column = SORT_COLUMNS.get(sort_by or "", "created_at")
    sign = "-" if descending else ""
    found = window(rows.order_by(f"{sign}{column}", f"{sign}run_id"), offset=offset, limit=limit)
    eval_runs_settle_abandoned(found)
    return found, total


def eval_run_get(*, user: Any, run_id: str) -> EvalRun:
    row = scope_queryset(EvalRun.objects, user).filter(pk=run_id).first()
    if row is None:
        raise EvalRunNotFound()
    eval_runs_settle_abandoned([row])
    return row


def dataset_list(*, user: Any) -> list[EvalDataset]:
    return list(scope_queryset(EvalDataset.objects, user).order_by("-created_at", "id"))


def batch_runs(*, user: Any, batch_id: str) -> list[EvalRun]:
    return list(scope_queryset(EvalRun.objects, user).filter(batch_id=batch_id).order_by("created_at", "run_id"))


def score_trends(*, user: Any, limit: int = 10) -> list[dict[str, Any]]:
    """Per evaluated component and eval type: how many completed runs, their mean score, and the
    last ``limit`` scores oldest first (the admin's trend table). One query."""
    rows = (
        scope_queryset(EvalRun.objects, user).filter(status="completed", score__isnull=False)
        .order_by("created_at").values_list("component_kind", "agent_id", "team_id", "workflow_id", "eval_type", "score")
    )
    groups: dict[tuple[str, str, str], list[float]] = {}
    for kind, agent_id, team_id, workflow_id, eval_type, score in rows:
        groups.setdefault((kind, agent_id or team_id or workflow_id or "", eval_type), []).append(score)
    return [
        {"component_kind": kind, "component_id": component_id, "eval_type": eval_type, "runs": len(scores),
         "mean": sum(scores) / len(scores), "recent": scores[-limit:]}
        for (kind, component_id, eval_type), scores in sorted(groups.items())
    ]
