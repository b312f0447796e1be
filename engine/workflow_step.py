"""``Step``: one unit of work in a workflow, an agent, a team or a function.

An agent or team step runs its component as a child run of the workflow run (its events relayed,
its RunOutput kept in ``step_executor_runs``); a function step is called with the ``StepInput``.
A failed execution is retried, then skipped or failed, or paused for a human (``on_error``).
"""
from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from engine.agent import Agent
from engine.aio import in_tool_thread, maybe_await
from engine.hooks import child_hooks
from engine.ids import new_id
from engine.output import CANCELLED, COMPLETED, ERROR, PAUSED, json_copy
from engine.team import Team
from engine.workflow_execution import Index, StepFailed, WorkflowCancelledError, run_child, top_index
from engine.workflow_review import (
    HumanReview,
    WorkflowPause,
    error_requirement,
    executor_requirement,
    reject_flat_review_kwargs,
)
from engine.workflow_types import StepInput, StepOutput

if TYPE_CHECKING:
    from engine.workflow import WorkflowRun


class Step:
    """One unit of work: an agent, a team or a function (``executor(step_input)``, sync or async).

    A function's return value is its content unless it returns a ``StepOutput``. A sync function
    runs in the runtime's tool thread pool. A failed execution is retried ``max_retries`` times;
    then ``skip_on_failure`` or ``human_review.on_error`` ("skip") skips the step, else ("fail")
    the workflow ends in ERROR.
    """

    step_type = "Step"

    def __init__(
        self,
        name: str | None = None,
        agent: Agent | None = None,
        team: Team | None = None,
        executor: Callable[..., Any] | None = None,
        *,
        step_id: str | None = None,
        description: str | None = None,
        max_retries: int = 3,
        skip_on_failure: bool = False,
        human_review: HumanReview | None = None,
        **flat: Any,
    ) -> None:
        reject_flat_review_kwargs("Step", flat)
        given = [x for x in (agent, team, executor) if x is not None]
        if len(given) != 1:
            raise ValueError("A Step has exactly one of agent=, team= or executor=")
        if agent is not None and not isinstance(agent, Agent):
            raise TypeError("Step(agent=) takes an Agent")
        if team is not None and not isinstance(team, Team):
            raise TypeError("Step(team=) takes a Team")
        if executor is not None and not callable(executor):
            raise TypeError("Step(executor=) takes a function")
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.agent, self.team, self.executor = agent, team, executor
        component = agent or team
        self.name = name or (component.name or component.id if component is not None else getattr(executor, "__name__", "step"))
        self.step_id = step_id or new_id()
        self.named_step_id = step_id is not None
        self.description = description
        self.max_retries = max_retries
        self.skip_on_failure = skip_on_failure
        self.human_review = human_review or HumanReview()
        self.human_review.validate_for("Step")

    @property
    def executor_type(self) -> str:
        return "agent" if self.agent is not None else "team" if self.team is not None else "function"

    @property
    def executor_name(self) -> str:
        component = self.agent or self.team
        if component is not None:
            return component.name or component.id
        return getattr(self.executor, "__name__", self.name)

    def to_dict(self) -> dict[str, Any]:
        """The step's definition, as Agno's ``Step.to_dict`` (the executor by id or function name)."""
        data: dict[str, Any] = {
            "type": "Step", "name": self.name, "step_id": self.step_id, "description": self.description,
            "max_retries": self.max_retries, "skip_on_failure": self.skip_on_failure, "human_review": self.human_review.to_dict(),
        }
        if self.agent is not None:
            data["agent_id"] = self.agent.id
        elif self.team is not None:
            data["team_id"] = self.team.id
        else:
            data["executor_ref"] = self.executor_name
        return data

    async def execute(self, scope: WorkflowRun, step_input: StepInput, index: Index, parent_step_id: str | None) -> AsyncIterator[Any]:
        yield scope.step_event("StepStarted", self, index, parent_step_id)
        output: StepOutput | None = None
        resume = scope.resume_for(self)
        for attempt in range(self.max_retries + 1):
            await scope.check_cancelled()
            found: list[StepOutput] = []
            try:
                async with aclosing(run_child(self._attempt(scope, step_input, index), found)) as events:
                    async for event in events:
                        yield event
            except StepFailed as failure:
                if attempt < self.max_retries:
                    continue
                yield scope.step_event("StepError", self, index, parent_step_id, error=failure.message)
                if self.human_review.on_error == "pause" and not self.skip_on_failure:
                    retries = resume.error_retries if resume is not None else 0
                    raise WorkflowPause(error_requirement(self, top_index(index), failure.message, failure.error_type, retries), error=True)
                if not (self.skip_on_failure or self.human_review.on_error == "skip"):
                    raise
                output = self._output(f"Step {self.name} failed but skipped", success=False, error=failure.message)
                break
            output = found[-1]
            break
        assert output is not None
        yield scope.step_completed(self, index, parent_step_id, output)
        yield output

    def _output(self, content: Any, **values: Any) -> StepOutput:
        return StepOutput(
            content=content, step_name=self.name, step_id=self.step_id, step_type="Step",
            executor_type=self.executor_type, executor_name=self.executor_name, **values,
        )

    async def _attempt(self, scope: WorkflowRun, step_input: StepInput, index: Index) -> AsyncIterator[Any]:
        if self.executor is not None:
            yield await self._call_function(step_input)
            return
        component = self.agent or self.team
        assert component is not None
        resume = scope.resume_for(self)
        if resume is not None and resume.executor_run is not None:
            # The executor paused for its tools' human decisions: it goes on under its own run id.
            run, resume.executor_run = resume.executor_run, None
        else:
            message = step_input.get_last_step_content() if step_input.previous_step_outputs else step_input.input
            text = with_review_context(_message_text(message), step_input.additional_data or {})
            run = component.start_run(text, scope.executor_context(component), stream_events=True)
            run.state.parent_run_id = scope.run_id
        try:
            async for event in run:
                yield scope.executor_event(event, self, index)
        finally:
            await run.aclose()
        out = run.output
        scope.executor_finished(out)
        scope.child_background_hooks.extend(child_hooks(run))
        status = out.get("status")
        if status == CANCELLED:
            raise WorkflowCancelledError()
        if status == ERROR:
            raise StepFailed(str(out.get("content") or "the executor failed"), error_type="executor_error")
        if status == PAUSED:
            raise WorkflowPause(executor_requirement(self, top_index(index), step_input, out, scope.ctx.clock()))
        assert status == COMPLETED, status
        yield self._output(json_copy(out.get("content")), step_run_id=out["run_id"], metrics=json_copy(out.get("metrics")))

    async def _call_function(self, step_input: StepInput) -> StepOutput:
        fn = self.executor
        assert fn is not None
        kwargs = {"session_state": step_input.session_state} if _accepts(fn, "session_state") else {}
        try:
            if inspect.iscoroutinefunction(fn):
                result = await fn(step_input, **kwargs)
            else:
                result = await maybe_await(await in_tool_thread(fn, step_input, **kwargs))
        except (WorkflowCancelledError, asyncio.CancelledError):
            raise
        except Exception as exc:
            raise StepFailed(f"{type(exc).__name__}: {exc}", error_type=type(exc).__name__) from exc
        if isinstance(result, StepOutput):
            result.step_name = result.step_name or self.name
            result.step_id = result.step_id or self.step_id
            result.step_type = result.step_type or "Step"
            result.executor_type = result.executor_type or "function"
            result.executor_name = result.executor_name or self.executor_name
            return result
        return self._output(result)


def with_review_context(message: str, additional_data: dict[str, Any]) -> str:
    """An agent step's message with what a human said in a review (Agno's wording)."""
    user_input = additional_data.get("user_input")
    if user_input:
        lines = "\n".join(f"- {k}: {v}" for k, v in user_input.items())
        message = f"{message}\n\nUser preferences:\n{lines}" if message else f"User preferences:\n{lines}"
    if additional_data.get("previous_output"):
        message = f"{message}\n\nYour previous output:\n{additional_data['previous_output']}"
    if additional_data.get("rejection_feedback"):
        message = f"{message}\n\nFeedback from reviewer:\n{additional_data['rejection_feedback']}"
    return message


def _message_text(message: Any) -> str:
    if message is None:
        return ""
    if isinstance(message, str):
        return message
    return json.dumps(message, ensure_ascii=False, default=str)


def _accepts(fn: Callable[..., Any], name: str) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
