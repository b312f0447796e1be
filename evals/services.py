"""Writes of eval runs, datasets and batches; the owner always comes from the caller's principal.

An eval is accepted as a committed EvalRun row (QUEUED) and a job of type ``eval`` handed to the
engine's workers on commit (jobs.services.jobs); ``evals.execution`` runs it.
"""
from __future__ import annotations

import csv
import io
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agents.registry import entry_get
from engine.models import get_model
from jobs.services.jobs import job_enqueue
from jobs.selectors import jobs_ended
from core.tenancy import scope_queryset

from .models import ComponentKind, EvalBatch, EvalDataset, EvalRun, EvalStatus, EvalType
from .results import InvalidResultPath, result_path_check

EVAL_JOB = "eval"
BATCH_JOB = "eval-batch"
BATCH_TYPES = (EvalType.ACCURACY, EvalType.AGENT_AS_JUDGE)
MAX_CASES = 1000


class EvalInvalid(ValueError):
    """The request cannot be evaluated (a 400, AgentOS's wording where it has one)."""


class ComponentMissing(LookupError):
    """The named agent, team or workflow does not exist for the caller (a 404)."""


class EvalForbidden(PermissionError):
    """The caller may not run what the eval would run, or may not choose its model (a 403)."""


MODEL_OVERRIDE_FORBIDDEN = "Insufficient permissions: model_id and model_provider (running the component on another model) are an admin's option"


def _check_authority(principal: Any, request: EvalRequest, kind: str, component_id: str) -> None:
    """An eval runs its component as the caller: ``<family>:run`` on it (the one authority,
    agents.pipeline.authority); a model override is an admin's (or an open server's) option."""
    from agents.pipeline.authority import RunForbidden, run_authorize

    try:
        run_authorize(principal, kind, component_id)
    except RunForbidden as exc:
        raise EvalForbidden(str(exc)) from None
    overrides = request.model_id or request.model_provider
    bound = principal.isolated or principal.scope_enforced or principal.guest
    if overrides and bound and not principal.is_admin:
        raise EvalForbidden(MODEL_OVERRIDE_FORBIDDEN)


class EvalRunNotFound(LookupError):
    def __init__(self, what: str = "Eval run") -> None:
        super().__init__(f"{what} not found")


@dataclass
class EvalRequest:
    """``EvalRunInput``, validated (and ``workflow_id``, ``file_path_to_save_results``: ours)."""

    eval_type: str
    input: str
    agent_id: str | None = None
    team_id: str | None = None
    workflow_id: str | None = None
    model_id: str | None = None
    model_provider: str | None = None
    additional_guidelines: str | None = None
    additional_context: str | None = None
    num_iterations: int = 1
    name: str | None = None
    expected_output: str | None = None
    criteria: str | None = None
    scoring_strategy: str | None = "binary"
    threshold: int | None = 7
    warmup_runs: int = 0
    expected_tool_calls: list[str] | None = None
    allow_additional_tool_calls: bool = False
    expected_tool_call_arguments: dict[str, Any] | None = None
    file_path_to_save_results: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def stored_input(self) -> dict[str, Any]:
        """What ``eval_input`` keeps: the options that shaped the eval (Agno logs the same)."""
        keys = {
            EvalType.ACCURACY: ("input", "expected_output", "additional_guidelines", "additional_context", "num_iterations"),
            EvalType.AGENT_AS_JUDGE: ("input", "criteria", "scoring_strategy", "threshold", "additional_guidelines", "num_iterations"),
            EvalType.PERFORMANCE: ("input", "num_iterations", "warmup_runs"),
            EvalType.RELIABILITY: ("input", "expected_tool_calls", "allow_additional_tool_calls", "expected_tool_call_arguments"),
        }[self.eval_type]
        stored = {key: getattr(self, key) for key in keys}
        if self.eval_type == EvalType.AGENT_AS_JUDGE and self.scoring_strategy != "numeric":
            stored["threshold"] = None
        if self.model_id and self.model_provider:
            stored.update(model_id=self.model_id, model_provider=self.model_provider)
        if self.file_path_to_save_results:
            stored["file_path_to_save_results"] = self.file_path_to_save_results
        return {key: value for key, value in stored.items() if value is not None}


def _component(request: EvalRequest, visible: dict[str, set[str] | None]) -> tuple[str, str, Any]:
    """(kind, id, registry entry) of what the eval runs against; AgentOS's errors."""
    named = [(kind, value) for kind, value in (("agent", request.agent_id), ("team", request.team_id), ("workflow", request.workflow_id)) if value]
    if len(named) > 1:
        raise EvalInvalid("Only one of agent_id or team_id must be provided")
    if not named:
        raise EvalInvalid("One of agent_id or team_id must be provided")
    kind, component_id = named[0]
    allowed = visible.get(kind)
    entry = entry_get(kind, component_id) if allowed is None or component_id in allowed else None
    if entry is None:
        raise ComponentMissing(f"{kind.capitalize()} with id '{component_id}' not found")
    return kind, component_id, entry


def _check_kind_options(request: EvalRequest) -> None:
    if request.eval_type == EvalType.ACCURACY and not request.expected_output:
        raise EvalInvalid("expected_output is required for accuracy evaluation")
    if request.eval_type == EvalType.AGENT_AS_JUDGE and not request.criteria:
        raise EvalInvalid("criteria is required for agent-as-judge evaluation")
    if request.eval_type == EvalType.RELIABILITY and request.expected_tool_calls is None:
        raise EvalInvalid("expected_tool_calls is required for reliability evaluations")
    if request.file_path_to_save_results is not None:
        if not settings.EVALS_RESULTS_DIR:
            raise EvalInvalid("file_path_to_save_results is off on this server: set EVALS_RESULTS_DIR to the directory result files go to")
        try:
            result_path_check(request.file_path_to_save_results, name=request.name, root=settings.EVALS_RESULTS_DIR)
        except InvalidResultPath as exc:
            raise EvalInvalid(str(exc)) from None


def _model_of(entry: Any) -> Any:
    template = getattr(entry, "template", None) or entry.build(None)
    return getattr(template, "model", None)


def _models(request: EvalRequest, kind: str, entry: Any) -> tuple[str | None, str | None]:
    """The (model_id, model_provider) the row records: the evaluated model (an override when
    one was asked), or, for agent-as-judge, the judge's."""
    if request.model_id and request.model_provider:
        try:
            get_model(f"{request.model_provider.lower()}:{request.model_id}")
        except ValueError as exc:
            raise EvalInvalid(str(exc)) from None
    if request.eval_type == EvalType.AGENT_AS_JUDGE:
        judge = settings.EVALS_JUDGE_MODEL
        if judge:
            provider, _, model_id = judge.partition(":")
            return model_id, provider
    if request.model_id and request.model_provider:
        return request.model_id, request.model_provider
    model = _model_of(entry)
    return (model.id, model.provider) if model is not None else (None, None)


def _check_judge(request: EvalRequest, kind: str, entry: Any) -> None:
    needs_judge = request.eval_type in (EvalType.ACCURACY, EvalType.AGENT_AS_JUDGE)
    if needs_judge and not settings.EVALS_JUDGE_MODEL and _model_of(entry) is None:
        raise EvalInvalid(f"No judge model for this {kind}: set EVALS_JUDGE_MODEL (a {kind} without a model of its own cannot judge)")


def eval_run_create(
    *, owner_id: str | None, request: EvalRequest, visible: dict[str, set[str] | None], batch_id: str | None = None, enqueue: bool = True,
    principal: Any = None,
) -> EvalRun:
    """Accept an eval: its row (QUEUED) and, on commit, its job. ``visible``: per component kind,
    the ids the caller may see (None: all), so an unseen agent is as missing as an unknown one.
    ``principal``: who asks (None: an operator's batch): they must be allowed to run the component,
    and only an admin may run it on another model (EvalForbidden)."""
    _check_kind_options(request)
    kind, component_id, entry = _component(request, visible)
    if principal is not None:
        _check_authority(principal, request, kind, component_id)
    _check_judge(request, kind, entry)
    model_id, model_provider = _models(request, kind, entry)
    now = timezone.now()
    row = EvalRun(
        run_id=str(uuid.uuid4()), user_id=owner_id, eval_type=request.eval_type, name=request.name, component_kind=kind,
        agent_id=component_id if kind == "agent" else None, team_id=component_id if kind == "team" else None,
        workflow_id=component_id if kind == "workflow" else None, model_id=model_id, model_provider=model_provider,
        evaluated_component_name=getattr(entry, "name", None) or getattr(getattr(entry, "template", None), "name", None),
        eval_input=request.stored_input(), status=EvalStatus.QUEUED, batch_id=batch_id, created_at=now, updated_at=now,
    )
    with transaction.atomic():
        row.save(force_insert=True)
        if enqueue:
            payload: dict[str, Any] = {"eval_run_id": row.run_id}
            if principal is not None:
                from core.auth import principal_grant

                payload["principal"] = principal_grant(principal)  # its runs act, and are checked again, as the caller
            job = job_enqueue(job_type=EVAL_JOB, owner_id=owner_id, payload=payload, component_id=component_id)
            row.job_id = job.pk
            row.save(update_fields=["job_id"])
    return row


def eval_runs_settle_abandoned(rows: list[EvalRun]) -> None:
    """An eval still queued or running whose job has ended without finishing it (cancelled before
    it started, its worker lost for good, failed before it reached the eval) is failed with the
    job's reason, so no eval says ``running`` for ever and a waiting ``POST`` answers at once.
    Read paths call it on what they read (as knowledge contents are settled): one query when any
    is unfinished, none otherwise."""
    waiting = {row.job_id: row for row in rows if row.status in (EvalStatus.QUEUED, EvalStatus.RUNNING) and row.job_id}
    if not waiting:
        return
    ended = jobs_ended(list(waiting), cancelled="cancelled", unfinished="The eval's job ended without finishing it")
    now = timezone.now()
    for job_id, reason in ended.items():
        row = waiting[job_id]
        reason = reason[:2000]
        settled = scope_queryset(EvalRun.objects, row.user_id).filter(
            pk=row.pk, job_id=job_id, status__in=(EvalStatus.QUEUED, EvalStatus.RUNNING),
        ).update(status=EvalStatus.FAILED, error=reason, updated_at=now)
        if settled:
            row.status, row.error, row.updated_at = EvalStatus.FAILED, reason, now


def eval_run_rename(*, user: Any, run_id: str, name: str) -> EvalRun:
    row = scope_queryset(EvalRun.objects, user).filter(pk=run_id).first()
    if row is None:
        raise EvalRunNotFound()
    row.name = name
    row.updated_at = timezone.now()
    row.save(update_fields=["name", "updated_at"])
    return row


def eval_runs_delete(*, user: Any, run_ids: list[str]) -> int:
    """Delete the caller's eval runs among ``run_ids`` (others' and unknown ids are ignored, as
    AgentOS ignores unknown ids). A queued or running one's job finds its row gone and stops."""
    deleted, _ = scope_queryset(EvalRun.objects, user).filter(pk__in=run_ids).delete()
    return deleted


# ---- datasets and batches ---------------------------------------------------------------------


def dataset_cases_parse(*, content: bytes | str, filename: str = "") -> list[dict[str, str]]:
    """Cases from an upload: a JSON list of ``{input, expected_output}`` objects (or
    ``{"cases": [...]}``), or a CSV with ``input`` and ``expected_output`` columns."""
    try:
        text = content.decode("utf-8-sig") if isinstance(content, bytes) else content
    except UnicodeDecodeError:
        raise EvalInvalid("The dataset is not UTF-8 text") from None
    stripped = text.lstrip()
    if filename.lower().endswith(".json") or stripped.startswith(("[", "{")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise EvalInvalid(f"The dataset is not valid JSON: {exc}") from None
        except RecursionError:
            raise EvalInvalid("The dataset is not valid JSON: nested too deep") from None
        if isinstance(data, dict):
            data = data.get("cases")
        if not isinstance(data, list):
            raise EvalInvalid("A JSON dataset is a list of {\"input\", \"expected_output\"} objects")
        rows = data
    else:
        reader = csv.DictReader(io.StringIO(text))
        if not reader.fieldnames or "input" not in reader.fieldnames:
            raise EvalInvalid("A CSV dataset needs a header row with the columns input and expected_output")
        rows = list(reader)
    cases: list[dict[str, str]] = []
    for number, row in enumerate(rows, start=1):
        if not isinstance(row, dict) or not str(row.get("input") or "").strip():
            raise EvalInvalid(f"Case {number} has no input")
        case = {"input": str(row["input"]), "expected_output": str(row.get("expected_output") or "")}
        if any("\x00" in value for value in case.values()):  # PostgreSQL stores no NUL in text or JSON
            raise EvalInvalid(f"Case {number} holds a NUL character")
        cases.append(case)
    if not cases:
        raise EvalInvalid("The dataset has no cases")
    if len(cases) > MAX_CASES:
        raise EvalInvalid(f"A dataset holds at most {MAX_CASES} cases")
    return cases


def dataset_create(*, owner_id: str | None, name: str, cases: list[dict[str, str]], description: str = "") -> EvalDataset:
    now = timezone.now()
    dataset = EvalDataset(id=str(uuid.uuid4()), user_id=owner_id, name=name, description=description, cases=cases, created_at=now, updated_at=now)
    dataset.save(force_insert=True)
    return dataset


def batch_create(
    *, owner_id: str | None, dataset_id: str, eval_type: str, component_kind: str, component_id: str, options: dict[str, Any] | None = None,
) -> EvalBatch:
    """Run ``eval_type`` over every case of the owner's dataset, as one background job."""
    dataset = scope_queryset(EvalDataset.objects, owner_id).filter(pk=dataset_id).first()
    if dataset is None:
        raise EvalRunNotFound("Eval dataset")
    if eval_type not in BATCH_TYPES:
        raise EvalInvalid("A dataset runs as accuracy or agent_as_judge evals (its cases are inputs and expected outputs)")
    if component_kind not in ComponentKind.values or entry_get(component_kind, component_id) is None:
        raise ComponentMissing(f"{component_kind.capitalize()} with id '{component_id}' not found")
    options = dict(options or {})
    if eval_type == EvalType.AGENT_AS_JUDGE and not options.get("criteria"):
        raise EvalInvalid("criteria is required for agent-as-judge evaluation")
    if eval_type == EvalType.ACCURACY and any(not case.get("expected_output") for case in dataset.cases):
        raise EvalInvalid("Every case needs an expected_output for an accuracy batch")
    now = timezone.now()
    batch = EvalBatch(
        id=str(uuid.uuid4()), user_id=owner_id, dataset_id=dataset.pk, dataset_name=dataset.name, eval_type=eval_type,
        component_kind=component_kind, component_id=component_id, options=options, cases_total=len(dataset.cases),
        status=EvalStatus.QUEUED, created_at=now, updated_at=now,
    )
    with transaction.atomic():
        batch.save(force_insert=True)
        job = job_enqueue(job_type=BATCH_JOB, owner_id=owner_id, payload={"batch_id": batch.pk}, component_id=component_id)
        batch.job_id = job.pk
        batch.save(update_fields=["job_id"])
    return batch
