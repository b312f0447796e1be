"""``Workflow``: a deterministic graph of steps, and ``WorkflowRun``, one execution of it.

``WorkflowRun`` has ``AgentRun``'s protocol: iterate it (``async for``, or plainly from a sync
caller) for event dicts in AgentOS's workflow shapes, then read ``output``, the
WorkflowRunOutput dict. Agent and team steps are child runs: their events are relayed live
(``nested_depth`` + 1, with ``workflow_id``, ``workflow_run_id``, ``step_id``, ``step_name`` and
``step_index``), their RunOutput dicts (``parent_run_id`` = the workflow run) are collected in
``step_executor_runs`` for the caller to store as child rows. Step failures end the run with a
``WorkflowError`` event, cancellation with ``WorkflowCancelled``; neither escapes the iteration.
"""
from __future__ import annotations

import copy
import json
import re
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import aclosing
from typing import Any

from engine.aio import maybe_await
from engine.child_runs import changed_state, deep_merge
from engine.context import RunContext
from engine.errors import InvalidContinuation
from engine.ids import new_id
from engine.output import CANCELLED, COMPLETED, ERROR, PAUSED, RUNNING, drop_nulls, json_copy
from engine.run_iteration import RunIteration
from engine.structured import OutputSchema
from engine.workflow_review import Resume, WorkflowPause, decide
from engine.workflow_execution import Index, StepFailed, WorkflowCancelledError, chained, run_reviewed
from engine.workflow_steps import StepLike, as_steps, name_step_ids, nested_steps
from engine.workflow_state import WorkflowState
from engine.workflow_types import StepInput, StepOutput, content_type_of

WORKFLOW_TERMINAL_EVENTS = frozenset({"WorkflowCompleted", "WorkflowPaused", "WorkflowCancelled", "WorkflowError"})
# What a caller with stream_events=False still gets: the end, and the executors' text.
ESSENTIAL_WORKFLOW_EVENTS = WORKFLOW_TERMINAL_EVENTS | {"RunContent", "TeamRunContent"}


class Workflow:
    """A workflow's configuration. Keyword-only, as v3's: ``Workflow(name=..., steps=[...])``.

    ``steps`` are ``Step``, ``Steps``, ``Parallel``, ``Loop``, ``Condition`` and ``Router``, or bare
    agents, teams and functions (each wrapped in a ``Step``). ``session_state`` is the default state,
    under the session's stored state. ``input_schema`` (a JSON schema dict or a pydantic class)
    validates a structured input before the run starts. ``version`` is a stored definition's
    version (None in code): its runs record it as ``workflow_version``, so a paused run is
    continued on the steps it paused in, whatever was published since.
    """

    def __init__(
        self,
        *args: Any,
        id: str | None = None,
        name: str | None = None,
        description: str | None = None,
        steps: Sequence[StepLike] = (),
        session_state: Mapping[str, Any] | None = None,
        input_schema: Mapping[str, Any] | type | None = None,
        metadata: Mapping[str, Any] | None = None,
        version: int | None = None,
        tracing: bool | None = None,
    ) -> None:
        if args:
            raise TypeError(
                "Workflow() is keyword-only since v3: write Workflow(id=..., name=..., steps=[...]), "
                f"not {len(args)} positional argument(s)"
            )
        self.name = name
        self.id = id or _slug(name) or new_id()
        self.description = description
        # Whether its runs are traced (traces/): None follows the deployment's TRACING.
        self.tracing = tracing
        self.steps = as_steps(list(steps))
        if not self.steps:
            raise ValueError("A workflow needs at least one step")
        name_step_ids(self.id, self.steps)
        self.session_state = dict(session_state or {})
        self.input_schema = input_schema
        self.input_schema_spec = OutputSchema.of(input_schema)
        self.metadata = dict(metadata or {})
        self.version = version

    # What the run pipeline reads of every component (agents.pipeline.runs), with a workflow's
    # meaning: its history is the session's earlier workflow runs (each executor sees its own runs
    # in them); a workflow has no model, memories or summaries of its own (its agents do).
    add_history_to_context = True
    num_history_runs = 3
    update_memory_on_run = False
    add_memories_to_context = False
    search_past_sessions = False
    enable_session_summaries = False
    model = None

    def with_options(self, **options: Any) -> Workflow:
        """A shallow copy with some attributes changed (a request's options), as ``Agent.with_options``."""
        changed = copy.copy(self)
        for name, value in options.items():
            setattr(changed, name, value)
        return changed

    def start_run(
        self,
        message: Any,
        ctx: RunContext,
        *,
        stream_events: bool = True,
        additional_data: Mapping[str, Any] | None = None,
    ) -> WorkflowRun:
        """Prepare a run; iterating the returned ``WorkflowRun`` executes it and yields events.
        An input that does not fit ``input_schema`` raises ``ValueError`` here."""
        value = self.validated_input(message)
        metadata = {**self.metadata, **dict(ctx.metadata or {})}
        state = WorkflowState(
            run_id=ctx.run_id,
            workflow_id=self.id,
            workflow_name=self.name,
            session_id=ctx.session_id,
            user_id=ctx.user_id,
            input=value,
            created_at=int(ctx.clock()),
            session_state={**json_copy(self.session_state), **json_copy(ctx.session_state or {})},
            additional_data=json_copy(dict(additional_data)) if additional_data else None,
            metadata=metadata or None,
            workflow_version=self.version,
        )
        return WorkflowRun(self, ctx, state, stream_events=stream_events)

    def run(self, message: Any, ctx: RunContext, **options: Any) -> dict[str, Any]:
        """Run to the end and return the WorkflowRunOutput dict."""
        run = self.start_run(message, ctx, **options)
        for _ in run:
            pass
        return run.output

    def continue_run(
        self,
        run_output: Mapping[str, Any],
        ctx: RunContext | None = None,
        *,
        step_requirements: Sequence[Mapping[str, Any]] | None = None,
        error_requirements: Sequence[Mapping[str, Any]] | None = None,
        stream_events: bool = True,
    ) -> WorkflowRun:
        """Resume a PAUSED run from its stored WorkflowRunOutput dict alone, with the answers to its
        review: StepRequirement dicts with ``confirmed`` (and ``rejection_feedback``,
        ``edited_output``), ``user_input`` or ``selected_choices``; for a step paused on an error,
        ``{step_id, decision: "retry" | "skip"}``. A review answered after its ``timeout`` follows
        ``on_timeout`` (judged by ``ctx.clock``). Bad answers raise ``InvalidContinuation``."""
        if ctx is None:
            raise TypeError("continue_run() needs ctx")
        output = json_copy(dict(run_output))
        if output.get("workflow_id") and output["workflow_id"] != self.id:
            raise InvalidContinuation(f"Run {output.get('run_id')} belongs to workflow {output['workflow_id']}, not {self.id}")
        if output.get("workflow_version") != self.version:
            # Step ids and indexes are a version's own: another version's steps would resume elsewhere.
            raise InvalidContinuation(
                f"Run {output.get('run_id')} paused in version {output.get('workflow_version')} of {self.id}, not version {self.version}"
            )
        if output.get("status") != PAUSED:
            raise InvalidContinuation(f"Cannot continue a run that is not paused. Current status: {output.get('status')}")
        paused_step_id = _open_requirement(output).get("step_id")
        frames = output.get("paused_frames") or []
        # A nested step's kept output is in its container's frame, not in the run's step_results.
        view = {**output, "step_results": frames[-1].setdefault("paused", [])} if frames else output
        try:
            resume = decide(view, list(step_requirements or []), list(error_requirements or []), ctx.clock())
        except ValueError as exc:
            raise InvalidContinuation(str(exc)) from None
        resume.step_id = paused_step_id
        index = output["paused_step_index"]
        if frames and resume.index == index + 1:
            # Going on past a nested step means going on inside its container.
            resume.index, resume.skip_step, resume.finish = index, True, False
            resume.kept = [StepOutput.from_dict(o) for o in frames[-1]["paused"]]
        state = WorkflowState.from_dict(output)
        if ctx.session_state is not None:
            state.session_state = {**state.session_state, **json_copy(ctx.session_state)}
        run = WorkflowRun(self, ctx, state, stream_events=stream_events, resume=resume)
        if resume.executor_requirements is not None:
            run.prepare_executor_continue(resume)
        return run

    def validated_input(self, message: Any) -> Any:
        spec = self.input_schema_spec
        if spec is None:
            return json_copy(message)
        text = message if isinstance(message, str) else json.dumps(message, ensure_ascii=False, default=str)
        try:
            return spec.parse(text)
        except ValueError as exc:
            raise ValueError(f"The input does not match {self.name or self.id}'s input schema: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        """The definition for the API (``WorkflowResponse``'s own fields; the caller expands
        ``agent_id`` / ``team_id`` into their AgentResponse / TeamResponse)."""
        schema = self.input_schema_spec.schema if self.input_schema_spec is not None else None
        return {
            "id": self.id, "name": self.name, "description": self.description, "input_schema": json_copy(schema),
            "steps": [s.to_dict() for s in self.steps], "metadata": json_copy(self.metadata) or None,
        }

    def __repr__(self) -> str:
        return f"<Workflow id={self.id!r} steps={len(self.steps)}>"


class WorkflowRun(RunIteration):
    """One execution of a workflow. Iterate for events, then read ``output``."""

    def __init__(
        self, workflow: Workflow, ctx: RunContext, state: WorkflowState, *, stream_events: bool = True, resume: Resume | None = None
    ) -> None:
        self.workflow = workflow
        self.ctx = ctx
        self.state = state
        self.stream_events = stream_events
        self.resume = resume
        # Background post-hooks of the agent and team steps' runs (engine.hooks.child_hooks), for
        # the caller to queue once the run is stored.
        self.child_background_hooks: list[dict[str, Any]] = []
        # The containers a continue goes back into, outermost first, each taken as it is entered.
        self.frames: list[dict[str, Any]] = list(state.paused_frames) if resume is not None else []
        # The session state each executor run was given, by run id (see executor_finished).
        self._given_state: dict[str, dict[str, Any]] = {}
        self.agen = self._execute()
        self._sync: Iterator[dict[str, Any]] | None = None


    # ---- what the steps use -------------------------------------------------------------------

    def resume_for(self, step: Any) -> Resume | None:
        """The continue's decision, to the step it is about, once every container around that
        step has been entered again, and only until the step has run."""
        resume = self.resume
        if resume is None or resume.consumed or self.frames or resume.step_id != step.step_id:
            return None
        return resume

    def on_resume_path(self, step: Any) -> bool:
        """Whether ``step`` is a container the paused step is inside (its review was answered, or
        it has none: it is entered again without asking)."""
        return bool(self.frames) and self.frames[0]["step_id"] == step.step_id

    def take_frame(self, step: Any) -> dict[str, Any] | None:
        """The container's frame of the pause, the first time it is entered on a continue."""
        if self.on_resume_path(step):
            return self.frames.pop(0)
        return None

    async def check_cancelled(self) -> None:
        if await maybe_await(self.ctx.is_cancelled()):
            raise WorkflowCancelledError()

    def event(self, event: str, **fields: Any) -> dict[str, Any]:
        state = self.state
        data: dict[str, Any] = {
            "created_at": int(self.ctx.clock()),
            "event": event,
            "workflow_id": state.workflow_id,
            "workflow_name": state.workflow_name,
            "session_id": state.session_id,
            "run_id": state.run_id,
            "nested_depth": 0,
        }
        data.update(fields)
        return drop_nulls(data)

    def step_event(self, event: str, step: Any, index: Index, parent_step_id: str | None, **fields: Any) -> dict[str, Any]:
        return self.event(
            event, step_id=step.step_id, parent_step_id=parent_step_id, step_name=step.name, step_index=_index(index), **fields
        )

    def step_completed(self, step: Any, index: Index, parent_step_id: str | None, output: StepOutput) -> dict[str, Any]:
        return self.step_event(
            "StepCompleted", step, index, parent_step_id, content=json_copy(output.content),
            content_type=content_type_of(output.content), step_response=output.to_dict(),
        )

    def executor_event(self, event: dict[str, Any], step: Any, index: Index) -> dict[str, Any]:
        return {
            **event,
            "workflow_id": self.state.workflow_id,
            "workflow_run_id": self.state.run_id,
            "step_id": step.step_id,
            "step_name": step.name,
            "step_index": _index(index),
            "nested_depth": int(event.get("nested_depth") or 0) + 1,
        }

    def executor_context(self, component: Any, run_id: str | None = None) -> RunContext:
        """An agent or team step's context: the workflow's session, user, cancellation, clock and
        stores, a copy of the workflow's session state, and the component's earlier runs in this
        session's workflow runs as history."""
        ctx = self.ctx
        run_id = run_id or new_id()
        self._given_state[run_id] = json_copy(self.state.session_state)
        return ctx.child(
            run_id=run_id,
            history=executor_history(ctx.history, component.id),
            session_state=json_copy(self.state.session_state),
        )

    def prepare_executor_continue(self, resume: Resume) -> None:
        """The paused executor's own continue, from its stored RunOutput in ``step_executor_runs``;
        its ``continue_run`` refuses bad answers (``InvalidContinuation``) before anything runs."""
        requirement = self.state.step_requirements[-1]
        step = next((s for s in [*self.workflow.steps, *nested_steps(self.workflow.steps)] if s.step_id == requirement["step_id"]), None)
        component = getattr(step, "agent", None) or getattr(step, "team", None)
        stored = next((r for r in self.state.step_executor_runs if r.get("run_id") == requirement["executor_run_id"]), None)
        if component is None or stored is None:
            raise InvalidContinuation(f"Step {requirement['step_name']!r} has no paused executor run to continue")
        ctx = self.executor_context(component, run_id=stored["run_id"])
        resume.executor_run = component.continue_run(stored, ctx=ctx, requirements=resume.executor_requirements)

    def executor_finished(self, output: dict[str, Any]) -> None:
        runs = self.state.step_executor_runs
        for position, run in enumerate(runs):
            if run.get("run_id") == output.get("run_id"):
                runs[position] = json_copy(output)  # a continued executor run replaces its paused copy
                break
        else:
            runs.append(json_copy(output))
        # Only what the executor changed goes back: its copy of the rest is stale when Parallel
        # branches changed the state meanwhile.
        given = self._given_state.pop(output.get("run_id"), {})
        deep_merge(self.state.session_state, changed_state(given, output.get("session_state") or {}))

    def branch_finished(self, executor_runs: Sequence[Mapping[str, Any]], session_state_changes: Mapping[str, Any]) -> None:
        """A Parallel branch that ran elsewhere (``workflow_branches``) ended: its executor runs
        join this run's, and what it changed of the session state is merged in."""
        for run in executor_runs:
            self.state.step_executor_runs.append(json_copy(dict(run)))
        deep_merge(self.state.session_state, json_copy(dict(session_state_changes)))

    # ---- the run ------------------------------------------------------------------------------

    def _emit(self, event: dict[str, Any]) -> Iterator[dict[str, Any]]:
        if self.stream_events or event["event"] in ESSENTIAL_WORKFLOW_EVENTS:
            yield event

    async def _execute(self) -> AsyncIterator[dict[str, Any]]:
        clock, state, resume = self.ctx.clock, self.state, self.resume
        start = clock()
        previous = state.duration or 0.0
        state.status = RUNNING
        try:
            if resume is None:
                for event in self._emit(self.event("WorkflowStarted")):
                    yield event
            else:
                for event in self._emit(self._continued()):
                    yield event
                state.paused_step_index = state.paused_step_name = state.pause_kind = None
                state.paused_frames = []
                if resume.cancel is not None:
                    raise WorkflowCancelledError(resume.cancel)
                if resume.error is not None:
                    raise StepFailed(resume.error, error_type="max_retries")
            if resume is None or not resume.finish:
                async with aclosing(self._steps(resume.index if resume is not None else 0)) as steps:
                    async for event in steps:
                        for emitted in self._emit(event):
                            yield emitted
            state.status = COMPLETED
            last = state.step_results[-1] if state.step_results else None
            state.content = last.deepest_content() if last is not None else "No steps executed"
            state.content_type = content_type_of(state.content)
            state.duration = previous + clock() - start
            for event in self._emit(self._completed()):
                yield event
        except WorkflowPause as pause:
            state.duration = previous + clock() - start
            for event in self._pause(pause):
                yield event
        except WorkflowCancelledError as cancelled:
            state.status = CANCELLED
            state.cancellation_stage = "EXECUTING"
            state.content = str(cancelled) or f"Workflow run {state.run_id} was cancelled"
            state.duration = previous + clock() - start
            for event in self._emit(self.event("WorkflowCancelled", reason=state.content, content=state.content)):
                yield event
        except StepFailed as failure:
            state.status = ERROR
            state.content = failure.message
            state.duration = previous + clock() - start
            for event in self._emit(self.event("WorkflowError", error=failure.message, error_type=failure.error_type)):
                yield event

    async def _steps(self, start: int) -> AsyncIterator[dict[str, Any]]:
        """Top-level steps from ``start``, each asked for its review before and after it runs."""
        state = self.state
        base = StepInput(input=state.input, additional_data=state.additional_data, session_state=state.session_state)
        for position in range(start, len(self.workflow.steps)):
            await self.check_cancelled()
            found: list[StepOutput] = []
            gen = run_reviewed(self, self.workflow.steps[position], chained(base, state.step_results), position, None, found)
            async with aclosing(gen) as events:
                async for event in events:
                    yield event
            if not found:
                continue
            state.step_results.append(found[-1])
            if found[-1].stop:
                return

    def _pause(self, pause: WorkflowPause) -> Iterator[dict[str, Any]]:
        state, requirement = self.state, pause.requirement
        state.paused_frames = pause.frames
        if pause.output is not None and pause.frames:
            pause.frames[-1]["paused"] = [pause.output.to_dict()]
        elif pause.output is not None:
            state.step_results.append(pause.output)
        (state.error_requirements if pause.error else state.step_requirements).append(requirement)
        state.status = PAUSED
        state.paused_step_index = requirement["step_index"]
        state.paused_step_name = requirement["step_name"]
        state.pause_kind = "executor" if requirement.get("requires_executor_input") else "step"
        state.content = None
        step = {"step_id": requirement["step_id"], "step_name": requirement["step_name"], "step_index": requirement["step_index"]}
        if requirement.get("requires_executor_input"):
            yield from self._emit(self.event(
                "StepExecutorPaused", **step, executor_id=requirement["executor_id"], executor_name=requirement["executor_name"],
                executor_run_id=requirement["executor_run_id"], executor_type=requirement["executor_type"],
                executor_requirements=requirement["executor_requirements"],
            ))
        elif requirement.get("is_post_execution"):
            yield from self._emit(self.event(
                "StepOutputReview", **step, requires_output_review=True, output_review_message=requirement["output_review_message"],
            ))
        elif requirement.get("requires_route_selection"):
            yield from self._emit(self.event(
                "RouterPaused", **step, available_choices=requirement["available_choices"],
                user_input_message=requirement["user_input_message"], allow_multiple_selections=requirement["allow_multiple_selections"],
            ))
        elif not pause.error:
            yield from self._emit(self.event(
                "StepPaused", **step, requires_confirmation=requirement["requires_confirmation"],
                confirmation_message=requirement["confirmation_message"], requires_user_input=requirement["requires_user_input"],
                user_input_message=requirement["user_input_message"], user_input_schema=requirement.get("user_input_schema"),
            ))
        out = state.to_dict()
        yield from self._emit(self.event(
            "WorkflowPaused", status=PAUSED, paused_step_index=state.paused_step_index, paused_step_name=state.paused_step_name,
            pause_kind=state.pause_kind, step_requirements=out.get("step_requirements"), error_requirements=out.get("error_requirements"),
            step_results=out["step_results"], step_executor_runs=out["step_executor_runs"], metadata=out.get("metadata"),
        ))

    def _continued(self) -> dict[str, Any]:
        state = self.state
        requirements = state.error_requirements if state.error_requirements and state.error_requirements[-1].get("decision") else state.step_requirements
        step_id = requirements[-1]["step_id"] if requirements else None
        return self.event("StepContinued", step_id=step_id, step_name=state.paused_step_name, step_index=state.paused_step_index)

    def _completed(self) -> dict[str, Any]:
        out = self.state.to_dict()
        return self.event(
            "WorkflowCompleted", content=out.get("content"), content_type=out["content_type"],
            step_results=out["step_results"], step_executor_runs=out["step_executor_runs"],
            metadata=out.get("metadata"), metrics=out["metrics"], session_state=out["session_state"],
        )


def _open_requirement(output: Mapping[str, Any]) -> Mapping[str, Any]:
    """The review a paused run waits on: an undecided error, else the last step requirement."""
    errors = output.get("error_requirements") or []
    if errors and errors[-1].get("decision") is None:
        return errors[-1]
    return (output.get("step_requirements") or [{}])[-1]


def executor_history(history: Sequence[Mapping[str, Any]], component_id: str) -> list[dict[str, Any]]:
    """A step's agent's (or team's) completed runs inside this session's earlier workflow runs."""
    return [
        dict(run)
        for workflow_run in history
        for run in workflow_run.get("step_executor_runs") or []
        if (run.get("agent_id") or run.get("team_id")) == component_id and run.get("status") == COMPLETED
    ]


def _index(index: Index) -> int | list[int]:
    return index if isinstance(index, int) else list(index)


def _slug(name: str | None) -> str:
    return re.sub(r"[^a-z0-9]+", "-", (name or "").lower()).strip("-")
