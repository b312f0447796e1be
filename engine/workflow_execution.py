"""How a workflow's steps run: the protocol every step type's ``execute`` follows, and the
helpers the types share.

A step's ``execute`` is an async generator over the running workflow (``scope``, a
``WorkflowRun``): it yields event dicts as they happen and, last, one ``StepOutput`` (an async
generator cannot return a value; ``run_child`` splits the two for the caller). ``run_reviewed``
runs one step at any depth with its human review before and after it; ``run_sequence`` runs a
container's inner steps one after another, chained. A failure ends a step with ``StepFailed``,
a cancellation with ``WorkflowCancelledError``.

Chaining, as Agno's: a step sees the content of the step before it (``previous_step_content``)
and every earlier output by name; an agent or team step is sent the deepest content of the last
output, or the workflow's input for the first step. Inner steps' ``step_index`` is
``[container index, position]``.
"""
from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, Union

from engine.workflow_review import WorkflowPause, before_requirement, output_requirement
from engine.workflow_types import StepInput, StepOutput

if TYPE_CHECKING:
    from engine.workflow import WorkflowRun

Index = Union[int, list[int]]


class StepFailed(Exception):
    """A step's executor failed (it raised, or its agent's run ended in ERROR)."""

    def __init__(self, message: str, error_type: str = "step_error") -> None:
        super().__init__(message)
        self.message = message
        self.error_type = error_type


class WorkflowCancelledError(Exception):
    """The run was cancelled (``ctx.is_cancelled``) between or inside steps."""


def inner_index(index: Index, position: int) -> list[int]:
    return [index if isinstance(index, int) else index[0], position]


def top_index(index: Index) -> int:
    """The top-level step a (possibly nested) step index is inside."""
    return index if isinstance(index, int) else index[0]


async def run_child(gen: AsyncIterator[Any], outputs: list[StepOutput]) -> AsyncIterator[dict[str, Any]]:
    """A step execution's events; its ``StepOutput`` goes to ``outputs``."""
    async with aclosing(gen) as items:
        async for item in items:
            if isinstance(item, StepOutput):
                outputs.append(item)
            else:
                yield item


def chained(step_input: StepInput, outputs: Sequence[StepOutput]) -> StepInput:
    """The input of the step after ``outputs`` (inside a container, which starts from its own input)."""
    if not outputs:
        return step_input
    previous = dict(step_input.previous_step_outputs)
    for output in outputs:
        previous[output.step_name or ""] = output
    return StepInput(
        input=step_input.input,
        previous_step_content=outputs[-1].content,
        previous_step_outputs=previous,
        additional_data=step_input.additional_data,
        session_state=step_input.session_state,
    )


async def run_reviewed(
    scope: WorkflowRun, step: Any, step_input: StepInput, index: Index, parent_step_id: str | None, found: list[StepOutput]
) -> AsyncIterator[dict[str, Any]]:
    """Run one step, at any depth, with its ``human_review``: the review before it (confirmation,
    user input, a route choice) and after it (its output); its ``StepOutput`` goes to ``found``
    (nothing when a continue skips it). A continue of this very step applies the human's answer
    instead of asking again; a container the paused step is inside runs on from its frame."""
    resume = scope.resume_for(step)
    retry_count = 0
    ask_before = not scope.on_resume_path(step)
    if resume is not None:
        if resume.skip_step:
            resume.consumed = True
            found.extend(resume.kept or [])
            return
        if resume.extra:
            step_input = copy.copy(step_input)
            step_input.additional_data = {**(step_input.additional_data or {}), **resume.extra}
        retry_count = resume.retry_count
        ask_before = not resume.run_step
    review = getattr(step, "human_review", None)
    if review is not None and ask_before:
        requirement = before_requirement(step, top_index(index), step_input, scope.ctx.clock())
        if requirement is not None:
            requirement["retry_count"] = retry_count
            raise WorkflowPause(requirement)
    try:
        async with aclosing(run_child(step.execute(scope, step_input, index, parent_step_id), found)) as events:
            async for event in events:
                yield event
    finally:
        if resume is not None:
            resume.consumed = True
    if review is not None and step.step_type in ("Step", "Router"):
        output = found[-1]
        requirement = output_requirement(step, top_index(index), step_input, output, scope.ctx.clock(), retry_count)
        if requirement is not None:
            found.pop()
            raise WorkflowPause(requirement, output=output)


async def run_sequence(
    scope: WorkflowRun,
    steps: Sequence[Any],
    step_input: StepInput,
    index: Index,
    parent_step_id: str,
    outputs: list[StepOutput],
    start: int = 0,
) -> AsyncIterator[dict[str, Any]]:
    """Run ``steps`` from ``start`` one after another, chained, into ``outputs`` (which holds what
    ran before ``start``); an early stop ends the sequence. A step that pauses leaves this
    sequence's frame (its container's, ``parent_step_id``) on the pause."""
    for position in range(start, len(steps)):
        await scope.check_cancelled()
        found: list[StepOutput] = []
        try:
            gen = run_reviewed(scope, steps[position], chained(step_input, outputs), inner_index(index, position), parent_step_id, found)
            async with aclosing(gen) as events:
                async for event in events:
                    yield event
        except WorkflowPause as pause:
            pause.frames.insert(0, {"step_id": parent_step_id, "position": position, "outputs": [o.to_dict() for o in outputs]})
            raise
        if not found:
            continue
        outputs.append(found[-1])
        if found[-1].stop:
            return


def frame_outputs(frame: dict[str, Any] | None, key: str = "outputs") -> list[StepOutput]:
    return [StepOutput.from_dict(o) for o in (frame or {}).get(key) or []]


def container_output(step: Any, content: str, outputs: list[StepOutput]) -> StepOutput:
    return StepOutput(
        content=content, step_name=step.name, step_id=step.step_id, step_type=step.step_type,
        executor_type=step.step_type.lower(), executor_name=step.name,
        success=all(o.success for o in outputs), stop=any(o.stop for o in outputs), steps=outputs,
    )
