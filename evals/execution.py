"""Running an accepted eval: the component through the one run pipeline, the judge, the result.

Each run of the evaluated component is a real run (agents.pipeline.runs: recorded, with its own
session ``eval_<run_id>_<n>`` as Agno names them), owned by the eval's owner. The judge is a
model, asked once per answer with a JSON schema for its verdict (it is not recorded as a run).
"""
from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.utils import timezone

from engine import Agent, RunContext
from engine.models import get_model
from agents.pipeline.authority import RunForbidden, run_authorize
from agents.pipeline.execution import run_execute_here
from agents.pipeline.runs import ComponentNotFound, RunRequest, component_entry, prepare_for_owner
from core.tenancy import scope_queryset
from sessions.models import RunOrigin
from sessions.services.runs import new_id

from . import kinds
from .models import EvalBatch, EvalRun, EvalStatus, EvalType
from .results import InvalidResultPath, result_store

logger = logging.getLogger("agno_site.evals")

Report = Callable[..., None]
ERROR_CHARS = 2000  # an eval's error as stored (and as its job keeps it)


def _component_runner(row: EvalRun, owner_id: str | None, principal: Any = None) -> Callable[[str], dict[str, Any]]:
    """Each run of the evaluated component, as ``principal`` (who asked for the eval, None: an
    operator's batch), checked again by the one authority before each run."""
    counter = itertools.count(1)
    override = row.eval_input.get("model_provider"), row.eval_input.get("model_id")

    def run(message: str) -> dict[str, Any]:
        try:
            if principal is not None:
                entry = run_authorize(principal, row.component_kind, row.component_id or "")
            else:
                entry = component_entry(row.component_id or "", kind=row.component_kind)
        except ComponentNotFound as exc:
            raise kinds.EvalFailed(f"{exc.kind.capitalize()} {row.component_id} is no longer available") from None
        except RunForbidden as exc:
            raise kinds.EvalFailed(str(exc)) from None
        request = RunRequest(message=message, stream=False, stream_events=False, origin=RunOrigin.EVAL)
        prepared = prepare_for_owner(entry=entry, owner_id=owner_id, session=None, session_id=f"eval_{row.run_id}_{next(counter)}", request=request)
        prepared.ctx.principal = principal  # its tools act with the caller's rights
        if all(override) and row.component_kind != "workflow":
            # AgentOS: model_id/model_provider run the evaluated agent or team on that model.
            prepared.component = prepared.component.with_options(model=get_model(f"{override[0].lower()}:{override[1]}"))
        return run_execute_here(prepared)  # in this thread and its transaction (the job's)

    return run


def judge_model_spec(row: EvalRun) -> Any:
    """The judging model: EVALS_JUDGE_MODEL, else the evaluated component's own model."""
    if settings.EVALS_JUDGE_MODEL:
        return settings.EVALS_JUDGE_MODEL
    entry = component_entry(row.component_id or "", kind=row.component_kind)
    model = getattr(entry.template or entry.build(None), "model", None)
    if model is None:
        raise kinds.EvalFailed("No judge model: set EVALS_JUDGE_MODEL")
    return model


def _judge(spec: Any) -> kinds.Judge:
    model = get_model(spec)

    def judge(system: str, message: str, schema: dict[str, Any]) -> Any:
        agent = Agent(id="eval-judge", name="Eval judge", model=model, instructions=system, output_schema=schema)
        output = agent.run(message, RunContext(run_id=new_id(), session_id=new_id()), stream_events=False)
        if output.get("status") != "COMPLETED":
            raise kinds.EvalFailed(f"The judge model failed: {output.get('content') or output.get('status')}")
        content = output.get("content")
        if not isinstance(content, dict):
            raise kinds.EvalFailed(f"The judge model returned an invalid response: {content!r}")
        return content

    return judge


def _rows(owner_id: str | None) -> Any:
    return scope_queryset(EvalRun.objects, owner_id)


def eval_run_execute(*, run_id: str, owner_id: str | None, report: Report, principal: Any = None) -> EvalRun | None:
    """Run the eval to its end and store it COMPLETED, or FAILED with the reason. None if the
    row is gone (deleted while queued) or already finished."""
    now = timezone.now()
    claimed = _rows(owner_id).filter(pk=run_id, status__in=(EvalStatus.QUEUED, EvalStatus.RUNNING)).update(status=EvalStatus.RUNNING, updated_at=now)
    if not claimed:
        return None
    row = _rows(owner_id).get(pk=run_id)

    def progress(**values: Any) -> None:
        report(**values)  # raises once the job was cancelled or its lease lost
        _rows(owner_id).filter(pk=run_id, status=EvalStatus.RUNNING).update(progress=values, updated_at=timezone.now())

    try:
        eval_data = _evaluate(row, owner_id, progress, principal)
        score = kinds.score_of(row.eval_type, eval_data)
        _store_result(row, owner_id, eval_data)
    except BaseException as exc:
        error = str(exc) if isinstance(exc, kinds.EvalFailed) else (
            "cancelled" if type(exc).__name__ == "JobCancelled" else f"{type(exc).__name__}: {exc}"
        )
        _rows(owner_id).filter(pk=run_id, status=EvalStatus.RUNNING).update(status=EvalStatus.FAILED, error=error[:ERROR_CHARS], updated_at=timezone.now())
        raise
    finished = _rows(owner_id).filter(pk=run_id, status=EvalStatus.RUNNING).update(
        status=EvalStatus.COMPLETED, eval_data=eval_data, score=score, error="", updated_at=timezone.now(),
    )
    return _rows(owner_id).filter(pk=run_id).first() if finished else None  # None: deleted while it ran


def _store_result(row: EvalRun, owner_id: str | None, eval_data: dict[str, Any]) -> None:
    """The result file, if the eval asked for one, under its owner's folder of EVALS_RESULTS_DIR;
    one that cannot be written fails the eval (EvalFailed, saying why)."""
    template = row.eval_input.get("file_path_to_save_results")
    if not template:
        return
    if not settings.EVALS_RESULTS_DIR:
        raise kinds.EvalFailed("The result file was not written: EVALS_RESULTS_DIR is no longer set on this server")
    try:
        result_store(  # as Agno writes the result: its *Result dataclass, run_id first
            root=settings.EVALS_RESULTS_DIR, template=template, run_id=row.run_id, name=row.name, owner_id=owner_id,
            eval_data={"run_id": row.run_id, **eval_data},
        )
    except (InvalidResultPath, OSError) as exc:
        raise kinds.EvalFailed(f"The result file was not written: {exc}"[:ERROR_CHARS]) from None


def _evaluate(row: EvalRun, owner_id: str | None, report: Report, principal: Any = None) -> dict[str, Any]:
    options = row.eval_input
    run = _component_runner(row, owner_id, principal)
    iterations = int(options.get("num_iterations") or 1)
    if row.eval_type == EvalType.ACCURACY:
        return kinds.accuracy(
            run=run, judge=_judge(judge_model_spec(row)), input=options["input"], expected_output=options["expected_output"],
            num_iterations=iterations, additional_guidelines=options.get("additional_guidelines"),
            additional_context=options.get("additional_context"), report=report,
        )
    if row.eval_type == EvalType.AGENT_AS_JUDGE:
        return kinds.agent_as_judge(
            run=run, judge=_judge(judge_model_spec(row)), input=options["input"], criteria=options["criteria"],
            scoring_strategy=options.get("scoring_strategy") or "binary", threshold=int(options.get("threshold") or 7),
            num_iterations=iterations, additional_guidelines=options.get("additional_guidelines"), report=report,
        )
    if row.eval_type == EvalType.PERFORMANCE:
        return kinds.performance(run=run, input=options["input"], num_iterations=iterations, warmup_runs=int(options.get("warmup_runs") or 0), report=report)
    output = run(options["input"])
    report(done=1, total=1)
    return kinds.reliability(
        output=output, expected_tool_calls=options.get("expected_tool_calls") or [],
        allow_additional_tool_calls=bool(options.get("allow_additional_tool_calls")),
        expected_tool_call_arguments=options.get("expected_tool_call_arguments"),
    )


# ---- batches ----------------------------------------------------------------------------------


def batch_passed(eval_type: str, options: dict[str, Any], row: EvalRun) -> bool:
    """Did one case pass: accuracy at or above the batch's threshold (default 7); agent-as-judge
    when every iteration passed."""
    if row.status != EvalStatus.COMPLETED:
        return False
    if eval_type == EvalType.ACCURACY:
        return (row.score or 0) >= int(options.get("threshold") or 7)
    return float(row.eval_data.get("pass_rate") or 0) >= 100


def batch_execute(*, batch_id: str, owner_id: str | None, report: Report) -> EvalBatch | None:
    """Every case of the batch's dataset as one eval run (``batch_id``), in order, then the
    aggregate: the mean score of the completed cases and how many passed. A case that fails is
    recorded failed; the batch goes on."""
    from .models import EvalDataset
    from .services import EvalRequest, eval_run_create

    batches = scope_queryset(EvalBatch.objects, owner_id)
    if not batches.filter(pk=batch_id, status__in=(EvalStatus.QUEUED, EvalStatus.RUNNING)).update(status=EvalStatus.RUNNING, updated_at=timezone.now()):
        return None
    batch = batches.get(pk=batch_id)
    dataset = scope_queryset(EvalDataset.objects, owner_id).filter(pk=batch.dataset_id).first()
    try:
        if dataset is None:
            raise kinds.EvalFailed("The dataset was deleted before the batch ran")
        every = {"agent": None, "team": None, "workflow": None}
        scores: list[float] = []
        passed = 0
        options = {key: value for key, value in batch.options.items() if key in EvalRequest.__dataclass_fields__}
        for number, case in enumerate(dataset.cases, start=1):
            request = EvalRequest(
                eval_type=batch.eval_type, input=case["input"], expected_output=case.get("expected_output") or None,
                name=f"{batch.dataset_name[:240]} #{number}", **{f"{batch.component_kind}_id": batch.component_id}, **options,
            )
            row = eval_run_create(owner_id=owner_id, request=request, visible=every, batch_id=batch.pk, enqueue=False)
            try:
                finished = eval_run_execute(run_id=row.run_id, owner_id=owner_id, report=lambda **_: None)
            except kinds.EvalFailed:
                finished = _rows(owner_id).get(pk=row.run_id)
            if finished is not None and finished.score is not None and finished.status == EvalStatus.COMPLETED:
                scores.append(finished.score)
            if finished is not None and batch_passed(batch.eval_type, batch.options, finished):
                passed += 1
            report(done=number, total=len(dataset.cases))
            batches.filter(pk=batch_id).update(progress={"done": number, "total": len(dataset.cases)}, cases_passed=passed, updated_at=timezone.now())
    except BaseException as exc:
        batches.filter(pk=batch_id, status=EvalStatus.RUNNING).update(status=EvalStatus.FAILED, error=str(exc) or type(exc).__name__, updated_at=timezone.now())
        raise
    aggregate = sum(scores) / len(scores) if scores else None
    batches.filter(pk=batch_id, status=EvalStatus.RUNNING).update(
        status=EvalStatus.COMPLETED, aggregate_score=aggregate, cases_passed=passed, updated_at=timezone.now(),
    )
    batch.refresh_from_db()
    return batch
