"""A workflow's step graph as a tree to show: its steps' types, names, executors and reviews.

It reads the definition dicts (``Workflow.to_dict()``'s steps, which is also the JSON an
admin-composed version stores), not the runtime objects, so a draft that does not build yet
still shows as far as it goes. The console's workflow pages and the admin's preview of a
version both render it with ``admin/console/workflow_steps.html``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.workflow_config import MAX_DEPTH

# Container steps and where their inner steps are listed in a definition (``to_dict``).
_INNER = (("steps", ""), ("else_steps", "else"), ("choices", "choice"))


@dataclass(frozen=True)
class StepNode:
    """One step of a definition: its type, name and executor, and the steps inside it."""

    step_type: str
    name: str
    executor: str = ""
    branch: str = ""  # "else" or "choice" for a Condition's else steps or a Router's choices
    review: tuple[str, ...] = ()
    children: tuple[StepNode, ...] = ()


def _executor(step: dict[str, Any]) -> str:
    if step.get("agent_id"):
        return f"agent {step['agent_id']}"
    if step.get("team_id"):
        return f"team {step['team_id']}"
    if step.get("executor_ref"):
        return f"function {step['executor_ref']}"
    for key in ("evaluator", "selector", "end_condition"):
        if step.get(key) is not None:
            return f"{key} {step[key]}"
    return ""


def _review(step: dict[str, Any]) -> tuple[str, ...]:
    review = step.get("human_review")
    if not isinstance(review, dict):
        return ()
    return tuple(key.removeprefix("requires_").replace("_", " ") for key, value in review.items() if key.startswith("requires_") and value is True)


def _node(step: dict[str, Any], branch: str = "", depth: int = 1) -> StepNode:
    # A graph saved before the composer bounded its depth shows down to that depth only.
    children = tuple(
        _node(inner, label, depth + 1) for key, label in _INNER
        for inner in (step.get(key) if isinstance(step.get(key), list) else []) if isinstance(inner, dict)
    ) if depth < MAX_DEPTH else ()
    name = step.get("name")
    return StepNode(
        step_type=str(step.get("type") or "Step"), name=name if isinstance(name, str) else "", executor=_executor(step), branch=branch,
        review=_review(step), children=children,
    )


def step_outline(steps: Any) -> tuple[StepNode, ...]:
    """The tree of ``steps`` (a list of step dicts); whatever is not a step dict is left out."""
    if not isinstance(steps, list):
        return ()
    return tuple(_node(step) for step in steps if isinstance(step, dict))
