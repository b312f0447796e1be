"""The run loop: model turns, tool calls, pauses, and the steps after the answer.

The loop is one async generator of event dicts (its steps are async generators too, each closed
with ``aclosing``: unlike ``yield from``, ``async for`` does not pass a close on to the step, and
closing the run must close the provider stream at once). ``AgentRun`` is iterable both ways: ``async for``
on the caller's event loop, or plainly from a sync caller (``run_iteration.RunIteration``). Once it is
exhausted, ``output`` is the final RunOutput dict. Provider failures end the run with a
``RunError`` event; they never escape the iteration. The optional steps (reasoning, knowledge
references, the session summary) are in ``optional_steps.py``.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from engine.aio import in_tool_thread, maybe_await
from engine.calls import as_text, call_str, parse_arguments
from engine.compression import model_view, run_compressor
from engine.errors import FatalModelError, InputCheckError, ModelError, OutputSchemaError, TokenBudgetExceeded
from engine.events import ESSENTIAL_EVENTS, EventFactory
from engine.hitl import REJECTED, Decision, approval_ids, is_pending
from engine.history import history_messages, input_text, with_file_text
from engine.hooks import post_hook_steps, pre_hook_steps
from engine.memory import MemoryManager
from engine.models.base import ProviderData, ReasoningDelta, TextDelta, ToolCall, Usage
from engine.optional_steps import add_references, reasoning_steps, summary_steps
from engine.output import (
    CANCELLED,
    COMPLETED,
    ERROR,
    PAUSED,
    RUNNING,
    RunState,
    message_metrics,
    new_message,
    paused_content,
    requirement,
    tool_execution,
)
from engine.run_iteration import RunIteration
from engine.tools.function import Function

if TYPE_CHECKING:
    from engine.agent import Agent
    from engine.context import RunContext

logger = logging.getLogger(__name__)

# A model that never stops calling tools is made to answer after this many turns.
MAX_MODEL_TURNS = 32
TOOL_NOT_FOUND = "Error: The requested tool {name!r} does not exist or is not available."
TOOL_LIMIT = "Tool call limit reached. Tool call {name} not executed. Don't try to execute it again."


class _Cancelled(Exception):
    def __init__(self, partial_turn: str = "") -> None:
        super().__init__("cancelled")
        self.partial_turn = partial_turn


class AgentRun(RunIteration):
    """One execution (or continuation) of an agent. Iterate for events, then read ``output``.

    ``session_summary`` (``{summary, topics, updated_at}``) and ``memories`` (the user's memories
    after the memory manager ran) are set when those steps ran, for the caller to persist.
    """

    def __init__(
        self,
        agent: Agent,
        ctx: RunContext,
        state: RunState,
        *,
        stream_events: bool = True,
        decisions: dict[str, Decision] | None = None,
    ) -> None:
        self.agent = agent
        self.ctx = ctx
        self.state = state
        self.stream_events = stream_events
        self.session_summary: dict[str, Any] | None = None
        self.memories: list[dict[str, Any]] | None = None
        # Post-hooks left for the caller to run once the run is stored (engine.hooks).
        self.background_hooks: list[str] = []
        # The same of the runs made inside this one (a team's members; engine.hooks.child_hooks).
        self.child_background_hooks: list[dict[str, Any]] = []
        # The input as pre-hooks changed it (masked), for the caller to store instead of what was sent.
        self.replaced_input: dict[str, Any] | None = None
        self.event_factory = EventFactory(state, ctx.clock)
        self._functions: dict[str, Function] = agent.run_functions(ctx, record_references=self.record_references)
        self._chain = agent.model_chain(ctx.sleep)
        self._history = history_messages(agent.history_runs(ctx)) if agent.add_history_to_context else []
        self._tool_calls = sum(1 for m in state.messages if m.get("role") == "tool")
        self.limit_reached = agent.tool_call_limit is not None and self._tool_calls >= agent.tool_call_limit
        self._turns = 0
        self.content_chunks: list[str] = []
        self.last_text = ""
        self.stop_content: list[str] = []
        # What the last model turn asked for, and the tool calls that pause the run (the steps
        # are async generators, which cannot return values).
        self.turn_calls: list[ToolCall] = []
        self.paused_calls: list[dict[str, Any]] = []
        self._memory: MemoryManager | None = None
        self._memory_task: asyncio.Task[None] | None = None
        self._compressor = run_compressor(agent, ctx.sleep, lambda model, usage: state.metrics.add("compression_model", model, usage))
        self.agen = self._execute(decisions)
        self._sync: Iterator[dict[str, Any]] | None = None


    # ---- the run ------------------------------------------------------------------------------

    async def _execute(self, decisions: dict[str, Decision] | None) -> AsyncIterator[dict[str, Any]]:
        clock = self.ctx.clock
        self._start = clock()
        self._previous_duration = self.state.metrics.duration or 0.0
        self.state.status = RUNNING
        try:
            self._start_memory()
            if decisions is None:
                for event in self.emit(self.event_factory.run_started()):
                    yield event
                await self.check_cancelled()
                if self.agent.pre_hooks:
                    async with aclosing(pre_hook_steps(self)) as steps:
                        async for event in steps:
                            yield event
                    await self.check_cancelled()
                if self.agent.add_knowledge_to_context and self.agent.knowledge is not None:
                    await add_references(self)
                    await self.check_cancelled()
                if self.agent.reasoning_model is not None:
                    async with aclosing(reasoning_steps(self)) as steps:
                        async for event in steps:
                            yield event
            else:
                for event in self.emit(self.event_factory.make("RunContinued")):
                    yield event
                self.state.content = None
                async with aclosing(self._apply_decisions(decisions)) as steps:
                    async for event in steps:
                        yield event
            async with aclosing(self._loop()) as steps:
                async for event in steps:
                    yield event
        except _Cancelled as cancelled:
            if cancelled.partial_turn:
                self.state.messages.append(new_message("assistant", cancelled.partial_turn, int(clock())))
            partial = "".join(self.content_chunks)
            self.state.content = partial
            self.state.status = CANCELLED
            self.state.cancellation_stage = "EXECUTING"
            self.close_timing()
            for event in self.emit(self.event_factory.run_cancelled(partial)):
                yield event
            # AgentOS 3.1.10 ends a cancelled run with a RunCompleted too (content type, metrics
            # with the duration, session state); its clients read the last event for those.
            for event in self.emit(self.event_factory.run_completed()):
                yield event
        except (ModelError, OutputSchemaError, InputCheckError, TokenBudgetExceeded) as exc:
            # A refusal (a guardrail's, the token budget's) ends the run as a provider failure
            # does: its reason recorded as the content, and a RunError the caller shows.
            message = getattr(exc, "message", None) or str(exc)
            self.state.content = message
            self.state.status = ERROR
            self.close_timing()
            error = self.event_factory.run_error(
                message, exc.error_type, error_id=getattr(exc, "check_trigger", None), additional_data=getattr(exc, "additional_data", None)
            )
            for event in self.emit(error):
                yield event
        finally:
            # A run that did not complete (paused, cancelled, failed, abandoned) keeps no memories.
            if self._memory_task is not None and not self._memory_task.done():
                self._memory_task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._memory_task

    async def _loop(self) -> AsyncIterator[dict[str, Any]]:
        while True:
            await self.check_cancelled()
            async with aclosing(self.model_turn()) as steps:
                async for event in steps:
                    yield event
            calls = self.turn_calls
            if not calls:
                break
            if self._turns > MAX_MODEL_TURNS:
                # It was told to stop calling tools (tool_choice "none") and did not.
                raise FatalModelError(f"The model kept calling tools after {MAX_MODEL_TURNS} turns", provider=self._chain.active.provider)
            async with aclosing(self.tool_calls_turn(calls)) as steps:
                async for event in steps:
                    yield event
            paused = self.paused_calls
            if paused:
                async with aclosing(self.pause_for(paused)) as steps:
                    async for event in steps:
                        yield event
                return
            if self.stop_content:
                break
        async with aclosing(self.complete_run()) as steps:
            async for event in steps:
                yield event

    async def model_turn(self) -> AsyncIterator[dict[str, Any]]:
        clock, events, state = self.ctx.clock, self.event_factory, self.state
        self._check_budget()
        compressor = self._compressor
        if compressor is not None and (pending := compressor.pending(state.messages)):
            for event in self.emit(events.make("CompressionStarted")):
                yield event
            done = await compressor.compress(pending)
            compressed = {"tool_results_compressed": done.count, "original_size": done.original_size, "compressed_size": done.compressed_size}
            for event in self.emit(events.make("CompressionCompleted", **compressed)):
                yield event
        self._turns += 1
        if self._turns >= MAX_MODEL_TURNS:
            self.limit_reached = True
        specs = [f.spec() for f in self._functions.values()]
        schema = self.agent.output_schema_spec
        primary = self._chain.primary
        for event in self.emit(events.model_request_started(primary.id, primary.provider)):
            yield event

        started = clock()
        text: list[str] = []
        reasoning: list[str] = []
        calls: list[ToolCall] = []
        usage = Usage()
        provider_data: dict[str, Any] | None = None
        first_sent = False
        ttft: float | None = None
        stream = self._chain.astream(
            self.model_messages(),
            tools=specs,
            tool_choice="none" if self.limit_reached and specs else "auto",
            output_schema=schema.schema if schema is not None else None,
            incremental=self.ctx.incremental,
        )
        try:
            async for chunk in stream:
                if await maybe_await(self.ctx.is_cancelled()):
                    raise _Cancelled("".join(text))
                if isinstance(chunk, Usage):
                    usage = usage + chunk
                    continue
                if isinstance(chunk, ProviderData):
                    provider_data = state.model_provider_data = dict(chunk.data)
                elif ttft is None:
                    ttft = clock() - started
                    if state.metrics.time_to_first_token is None:
                        state.metrics.time_to_first_token = clock() - self._start
                if not first_sent:
                    first_sent = True
                    for event in self.emit(events.run_content("", reasoning_content="", model_provider_data=provider_data)):
                        yield event
                if isinstance(chunk, TextDelta):
                    text.append(chunk.text)
                    if schema is None:
                        self.content_chunks.append(chunk.text)
                        for event in self.emit(events.run_content(chunk.text, model_provider_data=provider_data)):
                            yield event
                elif isinstance(chunk, ReasoningDelta):
                    reasoning.append(chunk.text)
                    for event in self.emit(events.run_content(reasoning_content=chunk.text, model_provider_data=provider_data)):
                        yield event
                elif isinstance(chunk, ToolCall):
                    calls.append(chunk)
        finally:
            await stream.aclose()
        if not first_sent:
            for event in self.emit(events.run_content("", reasoning_content="", model_provider_data=provider_data)):
                yield event

        model = self._chain.active
        state.metrics.add("model", model, usage)
        self.last_text = "".join(text)
        if reasoning:
            state.reasoning_content = (state.reasoning_content or "") + "".join(reasoning)
        state.messages.append(
            new_message(
                "assistant",
                self.last_text or None,
                int(clock()),
                reasoning_content="".join(reasoning) or None,
                tool_calls=[
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls
                ],
                provider_data=provider_data,
                metrics=message_metrics(usage, clock() - started, ttft),
            )
        )
        for event in self.emit(events.model_request_completed(model.id, model.provider, usage, ttft)):
            yield event
        self.turn_calls = calls

    async def tool_calls_turn(self, calls: list[ToolCall]) -> AsyncIterator[dict[str, Any]]:
        """Run one turn's tool calls; returns the ToolExecutions that pause the run."""
        limit = self.agent.tool_call_limit
        paused: list[dict[str, Any]] = []
        for call in calls:
            await self.check_cancelled()
            self._tool_calls += 1
            function = self._functions.get(call.name)
            args, parse_error = parse_arguments(call.arguments)
            refusal = (
                TOOL_LIMIT.format(name=call.name) if limit is not None and self._tool_calls > limit
                else TOOL_NOT_FOUND.format(name=call.name) if function is None
                else parse_error
            )
            if refusal is not None:
                self.tool_message(call.id, call.name, args, refusal, error=True)
                # Never run, so not one of the run's tools (as in Agno); its ToolCallError tells the
                # stream and the trace that the call failed, which they would not see otherwise.
                te = tool_execution(call.id, call.name, args, int(self.ctx.clock()), result=refusal, tool_call_error=True)
                for event in self.emit(self.event_factory.tool_call("ToolCallError", te, error=refusal)):
                    yield event
            elif function.pauses:
                te = self._paused_execution(call.id, function, args)
                self.state.tools.append(te)
                paused.append(te)
            else:
                te = tool_execution(call.id, call.name, args, int(self.ctx.clock()))
                self.state.tools.append(te)
                async with aclosing(self._run_tool(function, te)) as steps:
                    async for event in steps:
                        yield event
        if limit is not None and self._tool_calls >= limit:
            # The model is asked to answer now; further calls would not run anyway.
            self.limit_reached = True
        self.paused_calls = paused

    def _paused_execution(self, call_id: str, function: Function, args: dict[str, Any]) -> dict[str, Any]:
        values: dict[str, Any] = {}
        if function.requires_confirmation:
            values["requires_confirmation"] = True
        if function.requires_user_input:
            values["requires_user_input"] = True
            values["user_input_schema"] = function.user_input_schema(args)
        if function.external_execution:
            values["external_execution_required"] = True
        if function.approval_type:
            values["approval_type"] = function.approval_type
        return tool_execution(call_id, function.name, args, int(self.ctx.clock()), **values)

    async def _run_tool(self, function: Function, te: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        clock = self.ctx.clock
        for event in self.emit(self.event_factory.tool_call("ToolCallStarted", te)):
            yield event
        start = float(clock())
        try:
            args, options = te["tool_args"] or {}, {"session_state": self.state.session_state, "dependencies": self.ctx.dependencies, "run_context": self.ctx}
            if function.is_async:
                value = await function.aexecute(args, **options)
            else:
                # A sync tool may block (files, HTTP, a database): never on the loop's thread.
                value = await in_tool_thread(function.execute, args, **options)
            result, error = as_text(value), False
        except Exception as exc:  # a failing tool is the model's problem to handle, not the run's
            logger.warning("tool raised", extra={"tool": function.name, "error": type(exc).__name__})
            result, error = str(exc) or type(exc).__name__, True
        end = float(clock())
        te.update(result=result, tool_call_error=error, metrics={"start_time": start, "end_time": end, "duration": end - start})
        if function.stop_after_tool_call:
            te["stop_after_tool_call"] = True
            self.stop_content.append(result)
        self.tool_message(te["tool_call_id"], te["tool_name"], te["tool_args"], result, error=error, stop=function.stop_after_tool_call)
        summary = f"{call_str(te['tool_name'], te['tool_args'])} completed in {end - start:.4f}s. "
        for event in self.emit(self.event_factory.tool_call("ToolCallCompleted", te, content=summary)):
            yield event
        if error:
            for event in self.emit(self.event_factory.tool_call("ToolCallError", te, error=result)):
                yield event

    def tool_message(self, call_id: str, name: str, args: dict[str, Any], content: str, *, error: bool, stop: bool = False) -> None:
        self.state.messages.append(
            new_message(
                "tool", content, int(self.ctx.clock()), tool_call_id=call_id, tool_name=name, tool_args=args,
                tool_call_error=error, stop_after_tool_call=stop,
            )
        )

    async def pause_for(self, paused: list[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
        approval_ids(paused)
        requirements = [requirement(te, self.ctx.clock()) for te in paused]
        self.state.requirements = (self.state.requirements or []) + requirements
        self.state.status = PAUSED
        self.state.content = paused_content(paused)
        self.close_timing()
        for event in self.emit(self.event_factory.make("RunContentCompleted")):
            yield event
        for event in self.emit(self.event_factory.run_paused(paused, requirements)):
            yield event

    async def _apply_decisions(self, decisions: dict[str, Decision]) -> AsyncIterator[dict[str, Any]]:
        for te in self.state.tools:
            decision = decisions.get(te["tool_call_id"])
            if decision is None or not is_pending(te):
                continue
            if decision.confirmed is False:
                te.update(confirmed=False, confirmation_note=decision.note or "Tool call was rejected", tool_call_error=True)
                te.update(requires_confirmation=False)
                te.update({flag: False for flag in ("requires_user_input", "external_execution_required") if te.get(flag)})
                content = f"{REJECTED}: {decision.note}" if decision.note else REJECTED
                self.tool_message(te["tool_call_id"], te["tool_name"], te["tool_args"], content, error=True)
            else:
                if decision.confirmed:
                    te.update(confirmed=True, requires_confirmation=False)
                if te.get("requires_user_input"):
                    te["tool_args"] = {**(te.get("tool_args") or {}), **decision.values}
                    te.update(user_input_schema=decision.user_input_schema, requires_user_input=False, answered=True)
                if te.get("external_execution_required"):
                    te.update(result=decision.result, tool_call_error=decision.result_error, external_execution_required=False)
                    self.tool_message(te["tool_call_id"], te["tool_name"], te["tool_args"], decision.result or "", error=decision.result_error)
                else:
                    function = self._functions.get(te["tool_name"])
                    if function is None:
                        te.update(result=TOOL_NOT_FOUND.format(name=te["tool_name"]), tool_call_error=True)
                        self.tool_message(te["tool_call_id"], te["tool_name"], te["tool_args"], te["result"], error=True)
                    else:
                        async with aclosing(self._run_tool(function, te)) as steps:
                            async for event in steps:
                                yield event
            self._resolve_requirement(te, decision)

    def _resolve_requirement(self, te: dict[str, Any], decision: Decision) -> None:
        for req in self.state.requirements or []:
            if req.get("tool_execution", {}).get("tool_call_id") != te["tool_call_id"]:
                continue
            req["tool_execution"] = json.loads(json.dumps(te))
            if decision.confirmed is not None:
                req["confirmation"] = decision.confirmed
            if decision.note:
                req["confirmation_note"] = decision.note
            if decision.result is not None:
                req["external_execution_result"] = decision.result
            if decision.user_input_schema is not None:
                req["user_input_schema"] = json.loads(json.dumps(decision.user_input_schema))

    async def complete_run(self) -> AsyncIterator[dict[str, Any]]:
        state, schema = self.state, self.agent.output_schema_spec
        if schema is not None and not self.stop_content:
            state.content = schema.parse(self.last_text)
            state.content_type = schema.title
            for event in self.emit(self.event_factory.run_content(state.content, content_type=schema.title)):
                yield event
        elif self.stop_content:
            state.content = "\n".join(self.stop_content)
        else:
            state.content = "".join(self.content_chunks)
        for event in self.emit(self.event_factory.make("RunContentCompleted")):
            yield event
        if self.agent.post_hooks:
            async with aclosing(post_hook_steps(self)) as steps:
                async for event in steps:
                    yield event
        if self._memory_task is not None:
            async with aclosing(self._update_memories()) as steps:
                async for event in steps:
                    yield event
        if self.agent.enable_session_summaries:
            async with aclosing(summary_steps(self)) as steps:
                async for event in steps:
                    yield event
        state.status = COMPLETED
        self.close_timing()
        for event in self.emit(self.event_factory.run_completed()):
            yield event

    # ---- references and memories ----------------------------------------------------------------

    def record_references(self, entry: dict[str, Any]) -> None:
        """Keep a knowledge search's references in the run's output (the search tool's, ``add_references``')."""
        self.state.references = [*(self.state.references or []), entry]

    def _start_memory(self) -> None:
        """The memory update reads the user's input alone, so it runs beside the answer, as
        Agno's does (``_start_memory_future``); ``_update_memories`` awaits it before RunCompleted."""
        # Agents and teams say whether they record memories (legacy or learning); others do not.
        records = getattr(self.agent, "records_memories", self.agent.update_memory_on_run)
        if not (records and self.ctx.memory_store is not None):
            return
        self._memory = MemoryManager(self.agent.model_chain(self.ctx.sleep), self.ctx.memory_store, self.ctx.memories)
        self._memory_task = asyncio.ensure_future(self._memory.update(input_text(self.state.input)))

    async def _update_memories(self) -> AsyncIterator[dict[str, Any]]:
        for event in self.emit(self.event_factory.make("MemoryUpdateStarted")):
            yield event
        assert self._memory is not None and self._memory_task is not None
        try:
            await self._memory_task
        except ModelError as exc:
            logger.warning("memory update failed", extra={"provider": exc.provider, "error": type(exc).__name__})
        self.memories = self._memory.apply(lambda model, usage: self.state.metrics.add("memory_model", model, usage))
        for event in self.emit(self.event_factory.make("MemoryUpdateCompleted", memories=self.memories)):
            yield event

    # ---- helpers ------------------------------------------------------------------------------

    def emit(self, event: dict[str, Any]) -> tuple[dict[str, Any], ...]:
        return (event,) if self.stream_events or event["event"] in ESSENTIAL_EVENTS else ()

    def _check_budget(self) -> None:
        """Before each model call: a run that has spent its token budget (all its model calls so
        far, a continued run's included) is stopped rather than let it spend more."""
        budget = self.agent.token_budget
        spent = self.state.metrics.tokens["total_tokens"]
        if budget is not None and spent >= budget:
            raise TokenBudgetExceeded(budget, spent)

    async def check_cancelled(self) -> None:
        if await maybe_await(self.ctx.is_cancelled()):
            raise _Cancelled()

    def close_timing(self) -> None:
        self.state.metrics.duration = self._previous_duration + (self.ctx.clock() - self._start)

    def model_messages(self) -> list[dict[str, Any]]:
        """What the model sees: system message, history, then this run's messages."""
        messages = [with_file_text(model_view(m)) for m in self.state.messages]
        if messages and messages[0].get("role") == "system":
            return [messages[0], *map(model_view, self._history), *messages[1:]]
        return [*map(model_view, self._history), *messages]
