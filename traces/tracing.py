"""Tracing: a run's events become OpenTelemetry spans.

The runtime knows nothing of tracing. Every event of a top-level run passes through its event
log (``agents.pipeline.eventlog``), which hands it to a ``RunTracer`` when tracing is on. The
tracer notes when each thing started and ended (the run, each model call, each tool call, each
member run and workflow step, parented by what the events say: a member's ``parent_run_id``, a
step's ``parent_step_id``, an executor's ``step_id``) with nanosecond clock readings taken as the
events arrive. When the run ends it gives the tree, with OpenTelemetry trace and span ids, to
the process's span processors (``traces.provider``): the database's, which writes batches of
trees to the trace tables off the run's path (``traces.exporter``), and, when
``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, the OpenTelemetry SDK's batch processor to an OTLP
collector. The attributes follow OpenInference's names (``openinference.span.kind``,
``input.value``, ``llm.token_count.prompt`` …), as Agno's tracing does, so other tools read them.

Most of a run's events are its content as it streams (a ``RunContent`` per chunk of the answer):
the tracer ignores those with one set lookup, before reading the clock or taking its lock.

A run whose events were not streamed (``stream_events=false``) has only what it emitted: its
own span and its members' and steps'; model and tool spans need their events.
"""
from __future__ import annotations

import json
import logging
import random
import threading
import time
from dataclasses import dataclass, field
from collections.abc import Sequence
from typing import Any

from django.conf import settings

from core.components import code_component

from . import provider

logger = logging.getLogger("agno_site.traces")

TEXT_LIMIT = 4000  # characters of an input or output kept on a span

_RUN_STARTED = {"RunStarted", "TeamRunStarted"}
# A run that begins by continuing another (a regenerated answer, an edited message's new version,
# a paused run's continuation) opens its span with these: its trace is its own.
_RUN_CONTINUED = {"RunContinued", "TeamRunContinued"}
_RUN_ENDED = {
    "RunCompleted", "RunError", "RunCancelled", "RunPaused",
    "TeamRunCompleted", "TeamRunError", "TeamRunCancelled", "TeamRunPaused",
}
_WORKFLOW_ENDED = {"WorkflowCompleted", "WorkflowError", "WorkflowCancelled", "WorkflowPaused"}
_STEP_STARTED = {
    "StepStarted", "StepsExecutionStarted", "ParallelExecutionStarted", "LoopExecutionStarted",
    "ConditionExecutionStarted", "RouterExecutionStarted",
}
_STEP_ENDED = {
    "StepCompleted", "StepError", "StepPaused", "StepsExecutionCompleted", "ParallelExecutionCompleted",
    "LoopExecutionCompleted", "ConditionExecutionCompleted", "RouterExecutionCompleted", "RouterPaused",
}
_STEP_TYPES = {
    "StepStarted": "Step", "StepsExecutionStarted": "Steps", "ParallelExecutionStarted": "Parallel",
    "LoopExecutionStarted": "Loop", "ConditionExecutionStarted": "Condition", "RouterExecutionStarted": "Router",
}
_ERRORS = {"RunError", "TeamRunError", "WorkflowError", "StepError", "ToolCallError", "ModelError"}
# Events a team's leader emits with a ``Team`` prefix, traced as an agent's.
_MEMBER_EVENTS = {
    "ModelRequestStarted", "ModelRequestCompleted", "ModelError", "ToolCallStarted", "ToolCallCompleted",
    "ToolCallError", "MemoryUpdateStarted", "MemoryUpdateCompleted",
    "PreHookStarted", "PreHookCompleted", "PostHookStarted", "PostHookCompleted",
}
# An agent's reasoning before it answers: a span around the reasoning model's call and its steps.
_REASONING = {"ReasoningStarted", "ReasoningStep", "ReasoningCompleted"}
_HOOK_STAGES = {"PreHookStarted": "pre", "PreHookCompleted": "pre", "PostHookStarted": "post", "PostHookCompleted": "post"}
# Every event the tracer reads; any other (content chunks above all) costs it one set lookup.
_OBSERVED = frozenset({
    *_RUN_STARTED, *_RUN_CONTINUED, *_RUN_ENDED, "WorkflowStarted", *_WORKFLOW_ENDED, *_STEP_STARTED, *_STEP_ENDED,
    "LoopIterationStarted", "LoopIterationCompleted", *_MEMBER_EVENTS, *(f"Team{name}" for name in _MEMBER_EVENTS), *_REASONING,
})


_JSON = json.JSONEncoder(default=str, ensure_ascii=False)  # one encoder: json.dumps builds one per call with these options


def _text(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else _JSON.encode(value)
    return text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT] + "…"


# ``TeamModelRequestStarted`` → ``ModelRequestStarted``: a team leader's events carry a prefix.
_UNPREFIXED = {name: name[4:] if name.startswith("Team") and name[4:] in _MEMBER_EVENTS else name for name in _OBSERVED}


@dataclass(slots=True)
class _Span:
    key: Any
    name: str
    kind: str  # OpenInference span kind: AGENT, CHAIN, LLM, TOOL
    start: int
    parent: _Span | None = None
    end: int | None = None
    error: str = ""
    attributes: dict[str, Any] = field(default_factory=dict)
    span_id: int = 0  # given when the run ends (``RunTracer.finish``)


class RunTracer:
    """The spans of one top-level run, built from its events as they arrive."""

    def __init__(self, *, run_id: str, user_id: str | None, session_id: str, component_id: str, run_type: str, input_text: str = "") -> None:
        self.run_id, self.user_id, self.session_id = run_id, user_id, session_id
        self.component_id, self.run_type = component_id, run_type
        self.input_text = input_text
        self.spans: list[_Span] = []
        self.open: dict[Any, _Span] = {}
        self.runs: dict[str, _Span] = {}  # run id -> its span
        self.loop_iterations: dict[str, _Span] = {}  # loop step id -> its open iteration
        self.finished = False
        self.began = time.time_ns()  # made as the run begins: the start of a span its events do not open
        self.trace_id = 0  # given when the run ends, with its spans' ids
        self.lock = threading.Lock()

    # --- building ------------------------------------------------------------------------------

    def observe(self, event: dict[str, Any]) -> None:
        name = event.get("event")
        if name not in _OBSERVED or self.finished:
            return
        now = time.time_ns()
        with self.lock:
            if self.finished:  # ended while this event waited: the tree is the writer's now
                return
            try:
                self._observe(_UNPREFIXED[name], name, event, now)
            except Exception:  # a trace must never break a run
                logger.exception("run %s: tracing event %s failed", self.run_id, name)

    def _observe(self, kind: str, name: str, event: dict[str, Any], now: int) -> None:
        run_id = event.get("run_id") or self.run_id
        if name in _RUN_STARTED or name in _RUN_CONTINUED or name == "WorkflowStarted":
            self._run_started(name, run_id, event, now)
        elif name in _RUN_ENDED or name in _WORKFLOW_ENDED:
            span = self.runs.get(run_id)
            if span is None and run_id == self.run_id:
                span = self._unstreamed_root(name, event)
            if span is not None and span.end is None:
                # A hook still open is the guardrail that refused: its span carries the reason.
                for key, hook in list(self.open.items()):
                    if key[0] == "hook" and key[1] == run_id:
                        self._close(hook, now, event, error=name.endswith("Error"))
                self._close(span, now, event, error=name.endswith("Error"))
                span.attributes["agno.run.status"] = name.removeprefix("Team").removeprefix("Run").removeprefix("Workflow").upper()
                if name in _RUN_ENDED or name in _WORKFLOW_ENDED:
                    span.attributes["output.value"] = _text(event.get("content"))
                if run_id == self.run_id:
                    self.finish(now)
        elif kind == "ModelRequestStarted":
            # The reasoning model's call hangs under the reasoning it does; the main model's under the run.
            parent = self.open.get(("reasoning", run_id)) or self.runs.get(run_id)
            self._open(("model", run_id), f"{event.get('model_provider') or 'model'}.invoke", "LLM", now, parent, {
                "llm.model_name": event.get("model") or "", "llm.provider": event.get("model_provider") or "", "agno.run.id": run_id,
            })
        elif kind in ("ModelRequestCompleted", "ModelError"):
            span = self.open.pop(("model", run_id), None)
            if span is not None:
                span.attributes.update({
                    "llm.token_count.prompt": int(event.get("input_tokens") or 0),
                    "llm.token_count.completion": int(event.get("output_tokens") or 0),
                    "llm.token_count.total": int(event.get("total_tokens") or 0),
                })
                if event.get("time_to_first_token") is not None:
                    span.attributes["llm.time_to_first_token"] = float(event["time_to_first_token"])
                self._close(span, now, event, error=kind == "ModelError")
        elif kind == "ToolCallStarted":
            tool = event.get("tool") or {}
            parent = self.runs.get(run_id)
            parameters = _text(tool.get("tool_args"))
            self._open(("tool", tool.get("tool_call_id") or id(tool)), tool.get("tool_name") or "tool", "TOOL", now, parent, {
                "tool.name": tool.get("tool_name") or "", "tool.parameters": parameters, "agno.run.id": run_id,
                "input.value": parameters,
            })
        elif kind in ("ToolCallCompleted", "ToolCallError"):
            self._tool_ended(kind, run_id, event, now)
        elif name in _STEP_STARTED:
            self._step_started(name, run_id, event, now)
        elif name in _STEP_ENDED:
            span = self.open.pop(("step", event.get("step_id")), None)
            if span is not None:
                span.attributes["output.value"] = _text(event.get("content"))
                self._close(span, now, event, error=name == "StepError")
        elif name == "LoopIterationStarted":
            loop = self.open.get(("step", event.get("step_id")))
            iteration = event.get("iteration")
            span = self._open(("iteration", event.get("step_id"), iteration), f"iteration {iteration}", "CHAIN", now, loop, {
                "agno.step.type": "LoopIteration", "agno.loop.iteration": iteration,
            })
            self.loop_iterations[event.get("step_id")] = span
        elif name == "LoopIterationCompleted":
            span = self.open.pop(("iteration", event.get("step_id"), event.get("iteration")), None)
            self.loop_iterations.pop(event.get("step_id"), None)
            if span is not None:
                self._close(span, now, event)
        elif kind in ("PreHookStarted", "PostHookStarted"):
            stage = _HOOK_STAGES[kind]
            hook = event.get(f"{stage}_hook_name") or "hook"
            guardrail = bool(event.get("guardrail"))
            label = "guardrail" if guardrail else f"{stage}_hook"
            self._open(("hook", run_id, stage, hook), f"{label}.{hook}", "GUARDRAIL" if guardrail else "CHAIN", now, self.runs.get(run_id), {
                "agno.run.id": run_id, "agno.hook.name": hook, "agno.hook.stage": stage,
            })
        elif kind in ("PreHookCompleted", "PostHookCompleted"):
            stage = _HOOK_STAGES[kind]
            span = self.open.pop(("hook", run_id, stage, event.get(f"{stage}_hook_name") or "hook"), None)
            if span is not None:
                self._close(span, now, event, error=bool(event.get("error")))
        elif name in _REASONING:
            self._reasoning(name, run_id, event, now)
        elif kind in ("MemoryUpdateStarted",):
            self._open(("memory", run_id), "memory.update", "CHAIN", now, self.runs.get(run_id), {"agno.run.id": run_id})
        elif kind in ("MemoryUpdateCompleted",):
            span = self.open.pop(("memory", run_id), None)
            if span is not None:
                self._close(span, now, event)

    def _reasoning(self, name: str, run_id: str, event: dict[str, Any], now: int) -> None:
        """``reasoning`` (CHAIN) under the run, holding the reasoning model's LLM span and one
        ``reasoning.step`` span per step with its text; a model call still open when the reasoning
        ends is one that failed (the agent answers without it, as Agno's)."""
        if name == "ReasoningStarted":
            self._open(("reasoning", run_id), "reasoning", "CHAIN", now, self.runs.get(run_id), {"agno.run.id": run_id})
            return
        reasoning = self.open.get(("reasoning", run_id))
        if reasoning is None:
            return
        if name == "ReasoningStep":
            steps = reasoning.attributes.get("agno.reasoning.steps", 0) + 1
            reasoning.attributes["agno.reasoning.steps"] = steps
            content = event.get("content")
            text = content.get("result") if isinstance(content, dict) and "result" in content else content
            step = self._open(("reasoning_step", run_id, steps), f"reasoning.step {steps}", "CHAIN", now, reasoning, {
                "agno.run.id": run_id, "output.value": _text(text or event.get("reasoning_content")),
            })
            self._close(step, now, event)
            return
        model = self.open.get(("model", run_id))
        if model is not None and model.parent is reasoning:
            self._close(model, now, {"error": "the reasoning model failed: the agent answered without its reasoning"}, error=True)
        reasoning.attributes.setdefault("agno.reasoning.steps", 0)
        self._close(reasoning, now, event)

    def _run_started(self, name: str, run_id: str, event: dict[str, Any], now: int) -> None:
        if run_id in self.runs:
            return  # a continued run: its span goes on
        if name == "WorkflowStarted":
            component, kind, label = event.get("workflow_id") or self.component_id, "CHAIN", "Workflow"
        elif name in ("TeamRunStarted", "TeamRunContinued"):
            component, kind, label = event.get("team_id") or self.component_id, "AGENT", "Team"
        else:
            component, kind, label = event.get("agent_id") or self.component_id, "AGENT", "Agent"
        parent = self._parent_of_run(run_id, event)
        attributes: dict[str, Any] = {
            "agno.run.id": run_id, f"agno.{label.lower()}.id": component, "session.id": event.get("session_id") or self.session_id,
            "user.id": self.user_id or "",
        }
        if event.get("model"):
            attributes["llm.model_name"] = event["model"]
        if run_id == self.run_id:
            attributes["input.value"] = _text(self.input_text)
        span = self._open(("run", run_id), f"{label}.run", kind, now, parent, attributes)
        span.attributes["agno.component.name"] = event.get("agent_name") or event.get("team_name") or event.get("workflow_name") or component
        if name in _RUN_CONTINUED:
            span.attributes["agno.run.continued"] = True
        self.runs[run_id] = span

    def _tool_ended(self, kind: str, run_id: str, event: dict[str, Any], now: int) -> None:
        tool = event.get("tool") or {}
        key = ("tool", tool.get("tool_call_id") or id(tool))
        span = self.open.pop(key, None)
        if span is None and kind == "ToolCallError" and not any(one.key == key for one in self.spans):
            # A call refused before it ran (no such tool, arguments that are not JSON, over the
            # limit): its error is its only event, and its span starts and ends there.
            span = self._open(key, tool.get("tool_name") or "tool", "TOOL", now, self.runs.get(run_id), {
                "tool.name": tool.get("tool_name") or "", "tool.parameters": _text(tool.get("tool_args")), "agno.run.id": run_id,
            })
        if span is None:
            return
        failed = kind == "ToolCallError" or bool(tool.get("tool_call_error"))
        span.attributes["output.value"] = _text(tool.get("result"))
        self._close(span, now, event, error=failed)
        if failed:
            span.error = _text(event.get("error") or tool.get("result") or "error")  # the tool's error, not the call's summary

    def _unstreamed_root(self, name: str, event: dict[str, Any]) -> _Span:
        """The run's own span when its end is the first event it emitted (``stream_events=false``,
        as an eval's runs are): from when its tracer was made, as the run began."""
        started = "WorkflowStarted" if name in _WORKFLOW_ENDED else "TeamRunStarted" if name.startswith("Team") else "RunStarted"
        self._run_started(started, self.run_id, event, self.began)
        return self.runs[self.run_id]

    def _parent_of_run(self, run_id: str, event: dict[str, Any]) -> _Span | None:
        if run_id == self.run_id:
            return None
        step = self.open.get(("step", event.get("step_id"))) if event.get("step_id") else None
        if step is not None:
            return step
        parent_run = self.runs.get(event.get("parent_run_id") or event.get("workflow_run_id") or "")
        if parent_run is None:
            return self.runs.get(self.run_id)
        # A member delegated to through a tool hangs under that open tool call.
        tools = [span for key, span in self.open.items() if key[0] == "tool" and span.parent is parent_run]
        return tools[-1] if tools else parent_run

    def _step_started(self, name: str, run_id: str, event: dict[str, Any], now: int) -> None:
        step_id = event.get("step_id")
        parent_step = event.get("parent_step_id")
        parent = None
        if parent_step:
            parent = self.loop_iterations.get(parent_step) or self.open.get(("step", parent_step))
        if parent is None:
            parent = self.runs.get(event.get("run_id") or self.run_id)
        step_type = _STEP_TYPES.get(name, "Step")
        self._open(("step", step_id), event.get("step_name") or step_type, "CHAIN", now, parent, {
            "agno.step.type": step_type, "agno.step.id": step_id or "", "agno.step.index": _text(event.get("step_index")),
        })

    def _open(self, key: Any, name: str, kind: str, now: int, parent: _Span | None, attributes: dict[str, Any]) -> _Span:
        span = _Span(key=key, name=name, kind=kind, start=now, parent=parent, attributes=attributes)
        self.spans.append(span)
        self.open[key] = span
        return span

    def _close(self, span: _Span, now: int, event: dict[str, Any], *, error: bool = False) -> None:
        span.end = now
        self.open.pop(span.key, None)
        if error or event.get("event") in _ERRORS:
            span.error = _text(event.get("content") or event.get("error") or (event.get("tool") or {}).get("result") or "error")

    # --- emitting ------------------------------------------------------------------------------

    def finish(self, now: int | None = None) -> None:
        """Seal the tree and hand it to the span processors. Called once, at the run's end."""
        if not self.seal(now):
            return
        try:
            provider.submit(self)
        except Exception:
            logger.exception("run %s: handing its trace over failed", self.run_id)

    def seal(self, now: int | None = None) -> bool:
        """End every span still open (a run that ended while a step or tool was under way) and
        give the tree its OpenTelemetry ids; from here on events leave it alone. False if it was
        sealed already, or has no span."""
        if self.finished:
            return False
        self.finished = True
        now = now or time.time_ns()
        if not self.spans:
            return False
        self.trace_id = _random_id(128)
        for span in self.spans:
            span.span_id = _random_id(64)
            if span.end is None:
                span.end = now
        return True


def _random_id(bits: int) -> int:
    """A trace (128 bits) or span (64 bits) id as OpenTelemetry's RandomIdGenerator makes them:
    random, never 0 (the invalid id)."""
    while True:
        value = random.getrandbits(bits)
        if value:
            return value


def tracer_for(run: Any) -> RunTracer | None:
    """A tracer for a top-level run, or None when tracing is off (the deployment's ``TRACING``,
    or the component's own ``tracing`` setting, which wins)."""
    if run.parent_run_id:
        return None
    enabled = settings.TRACING
    component = _component(run)
    if component is not None and getattr(component, "tracing", None) is not None:
        enabled = bool(component.tracing)
    if not enabled:
        return None
    data = run.input or {}
    return RunTracer(
        run_id=run.pk, user_id=run.user_id or None, session_id=run.session_id, component_id=run.component_id,
        run_type=run.run_type, input_text=str(data.get("input_content") or ""),
    )


def background_hooks_trace(run: Any, outcomes: Sequence[Any]) -> None:
    """A run's background post-hooks, run by a job after the run was stored (its own trace was
    written by then): a trace of their own for the run, a ``background_hooks`` span with one
    ``post_hook.<name>`` span per hook (``engine.hooks.HookOutcome``: its times, its error), as
    the run's inline hooks are spans of its trace. Written when the run would be traced."""
    if not outcomes:
        return
    component = _component(run)
    enabled = settings.TRACING if component is None or getattr(component, "tracing", None) is None else bool(component.tracing)
    if not enabled:
        return
    tracer = RunTracer(run_id=run.pk, user_id=run.user_id or None, session_id=run.session_id, component_id=run.component_id, run_type=run.run_type)
    failed = [outcome.name for outcome in outcomes if outcome.error]
    root = tracer._open(("background_hooks", run.pk), "background_hooks", "CHAIN", _nanos(outcomes[0].started), None, {
        "agno.run.id": run.pk, "agno.hook.stage": "post", "agno.hook.background": True,
    })
    for outcome in outcomes:
        label = "guardrail" if outcome.guardrail else "post_hook"
        span = tracer._open(("hook", run.pk, "post", outcome.name), f"{label}.{outcome.name}", "GUARDRAIL" if outcome.guardrail else "CHAIN",
                            _nanos(outcome.started), root, {"agno.run.id": run.pk, "agno.hook.name": outcome.name, "agno.hook.stage": "post"})
        tracer._close(span, _nanos(outcome.ended), {"error": outcome.error}, error=bool(outcome.error))
    tracer._close(root, _nanos(outcomes[-1].ended), {"error": f"failed: {', '.join(failed)}"}, error=bool(failed))
    tracer.finish()


def _nanos(seconds: float) -> int:
    return int(seconds * 1_000_000_000)


def trace_on_run_start(run: Any) -> Any:
    """The run-start observer traces registers with the run pipeline (traces.apps): the run's
    tracer follows its events, or None when the run is not traced."""
    tracer = tracer_for(run)
    return tracer.observe if tracer is not None else None


def _component(run: Any) -> Any:
    """The code component the run is of (its ``tracing`` setting; admin-defined components follow
    the deployment's): a dictionary lookup, no query."""
    entry = code_component(run.run_type, run.component_id)
    return getattr(entry, "template", None) if entry is not None else None
