"""The workflow step types: ``Step``, ``Steps``, ``Parallel``, ``Loop``, ``Condition``, ``Router``.

``Step`` (an agent, a team or a function) is in ``workflow_step.py``; the containers are here.
Each type's ``execute`` follows the protocol of ``workflow_execution.py``; containers run their
inner steps through it, so any type nests in any other.
"""
from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, Union

from engine.agent import Agent
from engine.aio import maybe_await
from engine.child_runs import concurrent_events
from engine.ids import new_id
from engine.team import Team
from engine.workflow_branches import step_path
from engine.workflow_execution import (
    Index,
    StepFailed,
    WorkflowCancelledError,
    chained,
    container_output,
    frame_outputs,
    inner_index,
    run_reviewed,
    run_sequence,
    top_index,
)
from engine.workflow_review import HumanReview, WorkflowPause, iteration_requirement, pauses, reject_flat_review_kwargs
from engine.workflow_step import Step
from engine.workflow_types import StepInput, StepOutput

if TYPE_CHECKING:
    from engine.workflow import WorkflowRun
    from engine.workflow_branches import ParallelBranches

StepLike = Union["Step", "Steps", "Parallel", "Loop", "Condition", "Router", Agent, Team, Callable[..., Any]]


def as_step(item: StepLike) -> Any:
    """A bare agent, team or function in a step list becomes a ``Step``."""
    if isinstance(item, (Step, Steps, Parallel, Loop, Condition, Router)):
        return item
    if isinstance(item, Agent):
        return Step(agent=item)
    if isinstance(item, Team):
        return Step(team=item)
    if callable(item):
        return Step(executor=item)
    raise TypeError(f"A workflow step is a Step, Steps, Parallel, Loop, Condition, Router, Agent, Team or function, not {type(item).__name__}")


def as_steps(items: Sequence[StepLike] | StepLike) -> list[Any]:
    if not isinstance(items, (list, tuple)):
        items = [items]
    return [as_step(item) for item in items]


def may_pause(steps: Sequence[Any]) -> bool:
    """Whether any of ``steps``, or a step inside them, has a review that can pause the run."""
    return any(
        getattr(step, "human_review", None) is not None and pauses(step.human_review)
        for step in [*steps, *nested_steps(steps)]
    )


def _names(steps: Sequence[Any]) -> list[str]:
    return [s.name for s in steps]


class Steps:
    """A named sequence of steps, run one after another (Agno's ``Steps``)."""

    step_type = "Steps"

    def __init__(
        self,
        name: str | None = None,
        steps: Sequence[StepLike] = (),
        *,
        step_id: str | None = None,
        description: str | None = None,
        human_review: HumanReview | None = None,
        **flat: Any,
    ) -> None:
        reject_flat_review_kwargs("Steps", flat)
        self.name = name or "Steps"
        self.steps = as_steps(list(steps))
        self.human_review = human_review or HumanReview()
        self.human_review.validate_for("Steps")
        self.step_id = step_id or new_id()
        self.named_step_id = step_id is not None
        self.description = description

    def to_dict(self) -> dict[str, Any]:
        return {**_base(self), "steps": [s.to_dict() for s in self.steps], "human_review": self.human_review.to_dict()}

    async def execute(self, scope: WorkflowRun, step_input: StepInput, index: Index, parent_step_id: str | None) -> AsyncIterator[Any]:
        yield scope.step_event("StepsExecutionStarted", self, index, parent_step_id, steps_count=len(self.steps))
        frame = scope.take_frame(self)
        outputs = frame_outputs(frame)
        start = frame["position"] if frame else 0
        async with aclosing(run_sequence(scope, self.steps, step_input, index, self.step_id, outputs, start)) as events:
            async for event in events:
                yield event
        yield scope.step_event(
            "StepsExecutionCompleted", self, index, parent_step_id, steps_count=len(self.steps),
            executed_steps=len(outputs), step_results=[o.to_dict() for o in outputs],
        )
        yield container_output(self, f"Steps {self.name} completed with {len(outputs)} results", outputs)


class Parallel:
    """Branches run concurrently, each as its own asyncio task with the same input; their events
    are relayed as they happen and their outputs collected in declaration order."""

    step_type = "Parallel"

    def __init__(self, *steps: StepLike, name: str | None = None, step_id: str | None = None, description: str | None = None, **flat: Any) -> None:
        reject_flat_review_kwargs("Parallel", flat)
        if not steps:
            raise ValueError("Parallel needs at least one step")
        self.steps = as_steps(list(steps))
        self.name = name or "Parallel"
        self.step_id = step_id or new_id()
        self.named_step_id = step_id is not None
        self.description = description
        # A branch that can pause runs inline: its pause is kept in the run, to resume there.
        self.may_pause = may_pause(self.steps)

    def to_dict(self) -> dict[str, Any]:
        return {**_base(self), "steps": [s.to_dict() for s in self.steps]}

    async def execute(self, scope: WorkflowRun, step_input: StepInput, index: Index, parent_step_id: str | None) -> AsyncIterator[Any]:
        yield scope.step_event("ParallelExecutionStarted", self, index, parent_step_id, parallel_step_count=len(self.steps))
        branches = scope.ctx.parallel_branches if not self.may_pause else None
        path = step_path(scope.workflow.steps, self) if branches is not None else None
        if branches is not None and path is not None:
            outputs: list[StepOutput] = []
            async with aclosing(self._elsewhere(scope, branches, path, step_input, index, outputs)) as events:
                async for event in events:
                    yield event
        else:
            outputs = []
            async with aclosing(self._as_tasks(scope, step_input, index, outputs)) as events:
                async for event in events:
                    yield event
        yield scope.step_event(
            "ParallelExecutionCompleted", self, index, parent_step_id, parallel_step_count=len(self.steps),
            step_results=[o.to_dict() for o in outputs],
        )
        output = container_output(self, parallel_content(outputs), outputs)
        output.executor_type, output.executor_name = "parallel", self.name
        output.success = all(o.success for o in outputs)
        yield output

    async def _elsewhere(
        self, scope: WorkflowRun, branches: ParallelBranches, path: str, step_input: StepInput, index: Index, outputs: list[StepOutput],
    ) -> AsyncIterator[dict[str, Any]]:
        """The branches as separate work (``RunContext.parallel_branches``): their events as they
        come, their executor runs and session state taken in branch order once all have ended;
        then, as inline, the first failure (in branch order) fails the Parallel."""
        results: list[Any] = []
        gen = branches.run_branches(scope=scope, path=path, count=len(self.steps), step_input=step_input, index=index)
        async with aclosing(gen) as items:
            async for item in items:
                if isinstance(item, list):
                    results = item
                else:
                    yield item
        for result in results:
            scope.branch_finished(result.executor_runs, result.session_state_changes)
        if any(result.cancelled for result in results):
            raise WorkflowCancelledError()
        for result in results:
            if result.error is not None:
                raise StepFailed(result.error, error_type=result.error_type)
        outputs.extend(result.output for result in results if result.output is not None)

    async def _as_tasks(self, scope: WorkflowRun, step_input: StepInput, index: Index, outputs: list[StepOutput]) -> AsyncIterator[dict[str, Any]]:
        """The branches as tasks. A branch that pauses lets the others end; the first paused
        branch (in declaration order) pauses the run, with the finished branches' outputs kept
        in the frame: a continue runs only the branches that had not finished."""
        frame = scope.take_frame(self)
        finished = {int(p): StepOutput.from_dict(o) for p, o in ((frame or {}).get("done") or {}).items()}
        slots: list[list[StepOutput]] = [[finished[p]] if p in finished else [] for p in range(len(self.steps))]
        paused: dict[int, WorkflowPause] = {}
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

        async def branch(position: int, step: Any) -> None:
            if position in finished:
                return
            try:
                gen = run_reviewed(scope, step, step_input, inner_index(index, position), self.step_id, slots[position])
                async with aclosing(gen) as events:
                    async for event in events:
                        await queue.put(event)
            except WorkflowPause as pause:
                paused[position] = pause

        tasks = [asyncio.ensure_future(branch(p, s)) for p, s in enumerate(self.steps)]
        async with aclosing(concurrent_events(tasks, queue)) as relayed:
            async for event in relayed:
                yield event
        if paused:
            position = min(paused)
            pause = paused[position]
            done = {str(p): slot[-1].to_dict() for p, slot in enumerate(slots) if slot and p not in paused}
            pause.frames.insert(0, {"step_id": self.step_id, "position": position, "done": done})
            raise pause
        outputs.extend(slot[-1] for slot in slots if slot)


class Loop:
    """``steps`` run again and again, chained, until ``end_condition(iteration_outputs)`` is true
    or ``max_iterations`` iterations ran."""

    step_type = "Loop"

    def __init__(
        self,
        name: str | None = None,
        steps: Sequence[StepLike] = (),
        *,
        end_condition: Callable[[list[StepOutput]], Any] | None = None,
        max_iterations: int = 3,
        step_id: str | None = None,
        description: str | None = None,
        human_review: HumanReview | None = None,
        **flat: Any,
    ) -> None:
        reject_flat_review_kwargs("Loop", flat)
        if max_iterations < 1:
            raise ValueError("max_iterations must be >= 1")
        self.name = name or "Loop"
        self.steps = as_steps(list(steps))
        if not self.steps:
            raise ValueError("A Loop needs at least one step")
        self.end_condition = end_condition
        self.max_iterations = max_iterations
        self.step_id = step_id or new_id()
        self.named_step_id = step_id is not None
        self.description = description
        self.human_review = human_review or HumanReview()
        self.human_review.validate_for("Loop")

    def to_dict(self) -> dict[str, Any]:
        return {
            **_base(self), "steps": [s.to_dict() for s in self.steps], "max_iterations": self.max_iterations,
            "end_condition": _ref(self.end_condition), "human_review": self.human_review.to_dict(),
        }

    async def execute(self, scope: WorkflowRun, step_input: StepInput, index: Index, parent_step_id: str | None) -> AsyncIterator[Any]:
        limits = {"max_iterations": self.max_iterations}
        yield scope.step_event("LoopExecutionStarted", self, index, parent_step_id, **limits)
        all_outputs: list[StepOutput] = []
        iteration = 0
        resume = scope.resume_for(self)
        if resume is not None and resume.loop_outputs is not None:
            # A rejected iteration review: go on from the iterations already run.
            all_outputs = [StepOutput.from_dict(o) for o in resume.loop_outputs]
            iteration = resume.loop_iteration
        # A step inside paused: go on in the iteration it paused in, from that step.
        frame = scope.take_frame(self)
        if frame is not None:
            all_outputs = frame_outputs(frame, "loop_outputs")
            iteration = int(frame["iteration"]) - 1
        stopped = False
        while iteration < self.max_iterations and not stopped:
            iteration += 1
            yield scope.step_event("LoopIterationStarted", self, index, parent_step_id, iteration=iteration, **limits)
            outputs = frame_outputs(frame)
            start = frame["position"] if frame is not None else 0
            frame = None
            try:
                async with aclosing(run_sequence(scope, self.steps, chained(step_input, all_outputs), index, self.step_id, outputs, start)) as events:
                    async for event in events:
                        yield event
            except WorkflowPause as pause:
                pause.frames[0].update(iteration=iteration, loop_outputs=[o.to_dict() for o in all_outputs])
                raise
            all_outputs.extend(outputs)
            stopped = any(o.stop for o in outputs)
            done = stopped or (self.end_condition is not None and bool(await maybe_await(self.end_condition(outputs))))
            yield scope.step_event(
                "LoopIterationCompleted", self, index, parent_step_id, iteration=iteration, **limits,
                iteration_results=[o.to_dict() for o in outputs], should_continue=not done and iteration < self.max_iterations,
            )
            if self.human_review.requires_iteration_review and not stopped:
                partial = container_output(self, f"Loop {self.name} completed iteration {iteration}/{self.max_iterations}", list(all_outputs))
                requirement = iteration_requirement(self, top_index(index), iteration, step_input, partial, scope.ctx.clock())
                raise WorkflowPause(requirement, output=partial)
            if done:
                break
        yield scope.step_event(
            "LoopExecutionCompleted", self, index, parent_step_id, **limits, total_iterations=iteration,
            all_results=[[o.to_dict() for o in all_outputs]],
        )
        yield container_output(self, f"Loop {self.name} completed {iteration} iterations with {len(all_outputs)} total steps", all_outputs)


class Condition:
    """``steps`` run only when ``evaluator(step_input)`` (or a plain bool) is true; otherwise
    ``else_steps`` run, when there are any."""

    step_type = "Condition"

    def __init__(
        self,
        name: str | None = None,
        evaluator: Callable[[StepInput], Any] | bool = True,
        steps: Sequence[StepLike] = (),
        *,
        else_steps: Sequence[StepLike] = (),
        step_id: str | None = None,
        description: str | None = None,
        human_review: HumanReview | None = None,
        **flat: Any,
    ) -> None:
        reject_flat_review_kwargs("Condition", flat)
        self.name = name or "Condition"
        self.evaluator = evaluator
        self.steps = as_steps(list(steps))
        self.else_steps = as_steps(list(else_steps))
        self.step_id = step_id or new_id()
        self.named_step_id = step_id is not None
        self.description = description
        self.human_review = human_review or HumanReview()
        self.human_review.validate_for("Condition")

    def to_dict(self) -> dict[str, Any]:
        return {
            **_base(self), "evaluator": self.evaluator if isinstance(self.evaluator, bool) else _ref(self.evaluator),
            "steps": [s.to_dict() for s in self.steps], "else_steps": [s.to_dict() for s in self.else_steps],
            "human_review": self.human_review.to_dict(),
        }

    async def evaluate(self, step_input: StepInput) -> bool:
        if isinstance(self.evaluator, bool):
            return self.evaluator
        return bool(await maybe_await(self.evaluator(step_input)))

    async def execute(self, scope: WorkflowRun, step_input: StepInput, index: Index, parent_step_id: str | None) -> AsyncIterator[Any]:
        resume = scope.resume_for(self)
        frame = scope.take_frame(self)
        if frame is not None:
            result = frame["branch"] == "if"  # the branch a step inside paused in, not evaluated again
        else:
            # A rejected confirmation with on_reject="else" runs the else branch without evaluating.
            result = False if resume is not None and resume.else_branch else await self.evaluate(step_input)
        yield scope.step_event("ConditionExecutionStarted", self, index, parent_step_id, condition_result=result)
        branch = "if" if result else "else"
        chosen = self.steps if result else self.else_steps
        outputs = frame_outputs(frame)
        start = frame["position"] if frame is not None else 0
        try:
            async with aclosing(run_sequence(scope, chosen, step_input, index, self.step_id, outputs, start)) as events:
                async for event in events:
                    yield event
        except WorkflowPause as pause:
            pause.frames[0]["branch"] = branch
            raise
        yield scope.step_event(
            "ConditionExecutionCompleted", self, index, parent_step_id, condition_result=result,
            executed_steps=len(outputs), branch=branch, step_results=[o.to_dict() for o in outputs],
        )
        if not chosen:
            content = f"Condition {self.name} not met - skipped {len(self.steps)} steps"
        else:
            content = f"Condition {self.name} completed with {len(outputs)} results ({branch} branch)"
        yield container_output(self, content, outputs)


class Router:
    """``selector(step_input)`` picks which of ``choices`` run (a step, a step's name, or a list of
    them); the picked steps run in the order given, chained."""

    step_type = "Router"

    def __init__(
        self,
        name: str | None = None,
        selector: Callable[[StepInput], Any] | None = None,
        choices: Sequence[StepLike] = (),
        *,
        step_id: str | None = None,
        description: str | None = None,
        human_review: HumanReview | None = None,
        **flat: Any,
    ) -> None:
        reject_flat_review_kwargs("Router", flat)
        if selector is None:
            raise ValueError("A Router needs a selector")
        self.name = name or "Router"
        self.selector = selector
        self.choices = as_steps(list(choices))
        self.step_id = step_id or new_id()
        self.named_step_id = step_id is not None
        self.description = description
        self.human_review = human_review or HumanReview()
        self.human_review.validate_for("Router")

    def to_dict(self) -> dict[str, Any]:
        return {
            **_base(self), "selector": _ref(self.selector), "choices": [s.to_dict() for s in self.choices],
            "human_review": self.human_review.to_dict(),
        }

    async def select(self, step_input: StepInput) -> list[Any]:
        picked = await maybe_await(self.selector(step_input))
        return self._resolve(picked)

    def _resolve(self, picked: Any) -> list[Any]:
        if picked is None:
            return []
        if isinstance(picked, (list, tuple)):
            return [step for item in picked for step in self._resolve(item)]
        if isinstance(picked, str):
            for choice in self.choices:
                if choice.name == picked:
                    return [choice]
            raise StepFailed(f"Router {self.name} selected {picked!r}, which is not one of {_names(self.choices)}")
        for choice in self.choices:
            if choice is picked or getattr(choice, "agent", None) is picked or getattr(choice, "team", None) is picked:
                return [choice]
        return [as_step(picked)]

    async def execute(self, scope: WorkflowRun, step_input: StepInput, index: Index, parent_step_id: str | None) -> AsyncIterator[Any]:
        resume = scope.resume_for(self)
        frame = scope.take_frame(self)
        if frame is not None:
            selected = self._resolve(list(frame["selected"]))  # the route a step inside paused on
        elif resume is not None and resume.selection is not None:
            selected = self._resolve(list(resume.selection))
        else:
            selected = await self.select(step_input)
        yield scope.step_event("RouterExecutionStarted", self, index, parent_step_id, selected_steps=_names(selected))
        outputs = frame_outputs(frame)
        start = frame["position"] if frame is not None else 0
        try:
            async with aclosing(run_sequence(scope, selected, step_input, index, self.step_id, outputs, start)) as events:
                async for event in events:
                    yield event
        except WorkflowPause as pause:
            pause.frames[0]["selected"] = _names(selected)
            raise
        yield scope.step_event(
            "RouterExecutionCompleted", self, index, parent_step_id, selected_steps=_names(selected),
            executed_steps=len(outputs), step_results=[o.to_dict() for o in outputs],
        )
        if not selected:
            content = f"Router {self.name} completed with 0 results (no steps selected)"
        else:
            content = f"Router {self.name} completed with {len(outputs)} results"
        yield container_output(self, content, outputs)


def parallel_content(outputs: Sequence[StepOutput]) -> str:
    """Agno's aggregated text of a Parallel's branches."""
    text = "## Parallel Execution Results\n\n"
    for position, output in enumerate(outputs):
        icon = "✅ SUCCESS:" if output.success else "❌ FAILURE:"
        text += f"### {icon} {output.step_name or f'Step {position + 1}'}\n"
        content = output.content
        text += f"{content}\n\n" if content is not None and str(content).strip() else "*(No content)*\n\n"
    return text.strip()


def _base(step: Any) -> dict[str, Any]:
    return {"type": step.step_type, "name": step.name, "step_id": step.step_id, "description": step.description}


def _ref(fn: Any) -> str | None:
    return None if fn is None else getattr(fn, "__name__", type(fn).__name__)


def nested_steps(steps: Sequence[Any]) -> list[Any]:
    """Every step nested inside ``steps`` (not ``steps`` themselves), depth first."""
    found: list[Any] = []
    for step in steps:
        inner = [*getattr(step, "steps", []), *getattr(step, "else_steps", []), *getattr(step, "choices", [])]
        found.extend(inner)
        found.extend(nested_steps(inner))
    return found


def name_step_ids(workflow_id: str, steps: Sequence[Any], path: str = "") -> None:
    """Steps without an explicit ``step_id`` get one derived from the workflow and their place in
    it, so the same definition has the same ids in every process (a paused run names its step)."""
    for position, step in enumerate(steps):
        here = f"{path}/{position}"
        if not step.named_step_id:
            step.step_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"agno-workflow:{workflow_id}{here}"))
        for label in ("steps", "else_steps", "choices"):
            name_step_ids(workflow_id, getattr(step, label, []), f"{here}/{label}")
