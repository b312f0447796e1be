"""A ``Parallel``'s branches run elsewhere: the protocol, the record of one branch, one branch run.

Inline, a ``Parallel`` runs its branches as asyncio tasks of the workflow run. A caller that
wants them as separate work (the background path: one job per branch, agents.services.
workflow_branches) puts a ``ParallelBranches`` in ``RunContext.parallel_branches``; the
``Parallel`` then hands it the branches and waits for their ``BranchResult``s, in branch order.
Whoever executes a branch rebuilds it from the workflow's definition and the ``Parallel``'s
place in the graph (``step_path``), and runs it with ``run_branch``.
"""
from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from engine.child_runs import changed_state
from engine.events import CONTENT_DELTAS
from engine.output import json_copy
from engine.workflow_execution import StepFailed, WorkflowCancelledError, inner_index, run_child
from engine.workflow_review import WorkflowPause
from engine.workflow_state import WorkflowState
from engine.workflow_types import StepInput, StepOutput

if TYPE_CHECKING:
    from engine.context import RunContext
    from engine.workflow import Workflow, WorkflowRun


@dataclass
class BranchResult:
    """What one branch hands back: its output and events, the executor runs it made, the session
    state it changed; or the failure that ends it (``error``), or its cancellation."""

    output: StepOutput | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    executor_runs: list[dict[str, Any]] = field(default_factory=list)
    session_state_changes: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    error_type: str = "step_error"
    cancelled: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "output": self.output.to_dict() if self.output is not None else None,
            "events": json_copy(self.events),
            "executor_runs": json_copy(self.executor_runs),
            "session_state_changes": json_copy(self.session_state_changes),
            "error": self.error,
            "error_type": self.error_type,
            "cancelled": self.cancelled,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BranchResult:
        output = data.get("output")
        return cls(
            output=StepOutput.from_dict(output) if output else None,
            events=list(data.get("events") or []),
            executor_runs=list(data.get("executor_runs") or []),
            session_state_changes=dict(data.get("session_state_changes") or {}),
            error=data.get("error"),
            error_type=data.get("error_type") or "step_error",
            cancelled=bool(data.get("cancelled")),
        )


class ParallelBranches(Protocol):
    """Runs a ``Parallel``'s branches as separate work and waits for all of them.

    ``path`` names the ``Parallel`` in the workflow's graph (``step_path``), ``index`` is its
    ``step_index``; ``count`` branches get the same ``step_input``. An async iterator: it yields
    the branches' events as they become known (each branch's in their order), and last the
    list of ``BranchResult``s, in branch order (their ``events`` are not yielded again). While it
    waits it must watch ``scope.check_cancelled()`` (which raises ``WorkflowCancelledError``) and
    stop the branches if the wait ends early."""

    def run_branches(
        self, *, scope: WorkflowRun, path: str, count: int, step_input: StepInput, index: int | list[int],
    ) -> AsyncIterator[dict[str, Any] | list[BranchResult]]: ...


def step_input_to_dict(step_input: StepInput) -> dict[str, Any]:
    """A branch's input, whole (``StepInput.to_dict`` is Agno's lossy view of it)."""
    return {
        "input": json_copy(step_input.input),
        "previous_step_content": json_copy(step_input.previous_step_content),
        "previous_step_outputs": {name: out.to_dict() for name, out in step_input.previous_step_outputs.items()},
        "additional_data": json_copy(step_input.additional_data),
        "session_state": json_copy(step_input.session_state),
    }


def step_input_from_dict(data: Mapping[str, Any]) -> StepInput:
    return StepInput(
        input=json_copy(data.get("input")),
        previous_step_content=json_copy(data.get("previous_step_content")),
        previous_step_outputs={name: StepOutput.from_dict(out) for name, out in (data.get("previous_step_outputs") or {}).items()},
        additional_data=json_copy(data.get("additional_data")),
        session_state=json_copy(data.get("session_state") or {}),
    )


_CHILDREN = ("steps", "else_steps", "choices")


def step_path(steps: Sequence[Any], target: Any, path: str = "") -> str | None:
    """Where ``target`` sits in the graph, as ``name_step_ids`` spells it ("0/steps/1"), or None."""
    for position, step in enumerate(steps):
        here = f"{path}/{position}" if path else str(position)
        if step is target:
            return here
        for label in _CHILDREN:
            found = step_path(getattr(step, label, []), target, f"{here}/{label}")
            if found is not None:
                return found
    return None


def step_at(steps: Sequence[Any], path: str) -> Any:
    """The step at ``path`` (``step_path``'s answer); ``LookupError`` if the graph has none there
    (the definition changed since the run started)."""
    parts = path.split("/")
    try:
        step = steps[int(parts[0])]
        for label, position in zip(parts[1::2], parts[2::2]):
            if label not in _CHILDREN:
                raise LookupError(path)
            step = getattr(step, label)[int(position)]
    except (IndexError, ValueError, AttributeError) as exc:
        raise LookupError(f"the workflow has no step at {path}") from exc
    return step


async def run_branch(
    workflow: Workflow,
    ctx: RunContext,
    *,
    run_id: str,
    path: str,
    branch_index: int,
    step_input: StepInput,
    index: int | list[int],
    keep_deltas: bool = True,
    on_event: Callable[[dict[str, Any]], None] | None = None,
) -> BranchResult:
    """Run one branch of the ``Parallel`` at ``path`` of ``workflow`` under the workflow run
    ``run_id`` (its events and executor runs are that run's): as the inline ``Parallel`` runs it,
    with the same failure handling (its step's ``on_error``, retries, skip). ``on_event`` sees each
    kept event as it happens (to pass it on while the branch runs)."""
    # Not at the top: workflow.py and workflow_steps.py import this module.
    from engine.workflow import WorkflowRun
    from engine.workflow_steps import Parallel

    parallel = step_at(workflow.steps, path)
    if not isinstance(parallel, Parallel) or branch_index >= len(parallel.steps):
        raise LookupError(f"the step at {path} is no longer a Parallel with a branch {branch_index}")
    step = parallel.steps[branch_index]
    given = json_copy(step_input.session_state)
    state = WorkflowState(
        run_id=run_id, workflow_id=workflow.id, workflow_name=workflow.name, session_id=ctx.session_id, user_id=ctx.user_id,
        input=step_input.input, created_at=int(ctx.clock()), session_state=step_input.session_state,
        additional_data=step_input.additional_data,
    )
    scope = WorkflowRun(workflow, ctx, state, stream_events=True)
    result = BranchResult()
    found: list[StepOutput] = []
    try:
        gen = step.execute(scope, step_input, inner_index(index, branch_index), parallel.step_id)
        async with aclosing(run_child(gen, found)) as events:
            async for event in events:
                if keep_deltas or event.get("event") not in CONTENT_DELTAS:
                    kept = json_copy(event)
                    result.events.append(kept)
                    if on_event is not None:
                        on_event(kept)
        result.output = found[-1]
    except StepFailed as failure:
        result.error, result.error_type = failure.message, failure.error_type
    except WorkflowCancelledError:
        result.cancelled = True
    except WorkflowPause as pause:
        # A branch with a review runs inline (Parallel.may_pause); an agent's tool that waits
        # for a human cannot be known before it runs, and a separate branch job has no run to
        # keep the pause in.
        result.error = f"Step {pause.requirement.get('step_name')!r} paused for a human in a Parallel branch run as a separate job, where the workflow cannot resume"
    result.executor_runs = json_copy(state.step_executor_runs)
    result.session_state_changes = changed_state(given, state.session_state)
    return result
