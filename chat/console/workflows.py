"""What the operator console shows of workflows: their definitions as step trees, and a workflow
run's step results as a timeline.

Both are plain data for templates. The trees come from the registry (code workflows and the
admin's published ones); the timeline from the run's own ``run_data`` (``step_results``, each
StepOutput with its nested ``steps``), with each agent or team step's child run found by its
``step_run_id``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agents.outline import StepNode, step_outline
from agents.registry import workflow_list
from core.admin import preview, seconds
from sessions.models import Run, RunStatus, SessionType

# A step's output is shown to this many characters; the rest opens on a click.
OUTPUT_PREVIEW = 160


@dataclass(frozen=True)
class WorkflowTree:
    workflow_id: str
    name: str
    description: str | None
    steps: tuple[StepNode, ...]


def workflow_trees() -> list[WorkflowTree]:
    """Every workflow (code, then published in the admin) with its steps as a tree, in the order the registry lists them."""
    trees = []
    for entry in workflow_list():
        definition = entry.template.to_dict() if entry.template is not None else {"steps": []}
        trees.append(WorkflowTree(entry.workflow_id, entry.name, entry.description, step_outline(definition["steps"])))
    return trees


# ---- a run's timeline -----------------------------------------------------------------------


@dataclass
class TimelineStep:
    """One executed step: status, duration, output, its child run (agent and team steps), and
    the steps inside it (a Parallel's branches, a Loop's iterations, a Condition's or Router's
    chosen steps)."""

    step_type: str
    name: str
    executor: str
    status: str
    duration: str  # empty where the step recorded none (a function or container step)
    output_preview: str
    output: str
    error: str | None = None
    child_run: Run | None = None
    child_run_id: str | None = None
    iteration: int | None = None  # inside a Loop: the iteration it ran in
    children: list[TimelineStep] = field(default_factory=list)

    @property
    def truncated(self) -> bool:
        return self.output != self.output_preview

    @property
    def parallel(self) -> bool:
        return self.step_type == "Parallel"


def _text(content: Any) -> str:
    if content is None:
        return ""
    return content if isinstance(content, str) else json.dumps(content, indent=2, ensure_ascii=False, default=str)


def _status(result: dict[str, Any]) -> str:
    if result.get("error") or result.get("success") is False:
        return "failed"
    return "stopped" if result.get("stop") else "completed"


def _timeline_step(result: dict[str, Any], children_by_id: dict[str, Run]) -> TimelineStep:
    text = _text(result.get("content"))
    run_id = result.get("step_run_id")
    metrics = result.get("metrics") or {}
    step = TimelineStep(
        step_type=result.get("step_type") or "Step", name=result.get("step_name") or "",
        executor=" ".join(filter(None, (result.get("executor_type"), result.get("executor_name")))),
        status=_status(result), duration=seconds(metrics.get("duration")) if metrics.get("duration") is not None else "",
        output_preview=preview(text, OUTPUT_PREVIEW) if text else "", output=text, error=result.get("error"),
        child_run=children_by_id.get(run_id) if run_id else None, child_run_id=run_id,
        children=[_timeline_step(inner, children_by_id) for inner in result.get("steps") or []],
    )
    if step.step_type == "Loop":
        _number_iterations(step.children)
    return step


def _number_iterations(steps: list[TimelineStep]) -> None:
    """A Loop's outputs are its iterations' steps one after another: an iteration starts again
    wherever the loop's first step comes round again."""
    if not steps:
        return
    first, iteration = steps[0].name, 0
    for step in steps:
        if step.name == first:
            iteration += 1
        step.iteration = iteration


def step_timeline(run: Run) -> list[TimelineStep]:
    """The steps ``run`` (a workflow run) has executed, in order, nested as they ran."""
    data = run.run_data or {}
    children = Run.all_users.filter(parent_run_id=run.pk, user_id=run.user_id).only(
        "run_id", "status", "component_id", "run_type", "user_id",
    )
    by_id = {child.pk: child for child in children}
    steps = [_timeline_step(result, by_id) for result in data.get("step_results") or []]
    waiting = paused_requirement(run)
    if waiting is not None:
        steps.append(_waiting_step(waiting, by_id))
    return steps


def _waiting_step(requirement: dict[str, Any], children_by_id: dict[str, Run]) -> TimelineStep:
    """The step a paused run waits at, last in its timeline (an executor's paused child run linked)."""
    status = {"error": "failed, waiting for retry or skip", "executor": "paused in its executor"}.get(requirement["kind"], "paused for review")
    message = requirement.get("confirmation_message") or requirement.get("user_input_message") or requirement.get("error_message") or ""
    run_id = requirement.get("executor_run_id")
    return TimelineStep(
        step_type=requirement.get("step_type") or "Step", name=requirement.get("step_name") or "", executor=requirement.get("executor_name") or "",
        status=status, duration="", output_preview=message, output=message,
        child_run=children_by_id.get(run_id) if run_id else None, child_run_id=run_id,
    )


def paused_requirement(run: Run) -> dict[str, Any] | None:
    """What a paused workflow run waits on: its open error decision, else its last step
    requirement (the one a continue answers); None for a run that is not paused."""
    data = run.run_data or {}
    if run.status != RunStatus.PAUSED or run.run_type != SessionType.WORKFLOW:
        return None
    errors = data.get("error_requirements") or []
    if errors and errors[-1].get("decision") is None:
        return {**errors[-1], "kind": "error"}
    requirements = data.get("step_requirements") or []
    if not requirements:
        return None
    active = requirements[-1]
    return {**active, "kind": "executor" if active.get("requires_executor_input") else "step"}
