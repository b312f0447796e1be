"""The optional steps of an agent run, each taken when the agent asks for it: the reasoning model's
turn before the first model turn (``reasoning_model``), the knowledge references added to the
user's message (``add_knowledge_to_context``), and the session summary after the answer
(``enable_session_summaries``). Each takes the ``AgentRun`` and works on its state and its event
stream, as ``engine.hooks``' steps do. The memory update stays in ``runner.py``: it runs beside
the answer, as a task the run cancels when it does not complete.
"""
from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from engine.errors import ModelError
from engine.history import history_messages, input_text
from engine.knowledge_search import REFERENCES_INTRO, documents_text, references_entry
from engine.models.base import ReasoningDelta, TextDelta, Usage
from engine.output import new_message
from engine.summary import create_session_summary

if TYPE_CHECKING:
    from engine.runner import AgentRun

logger = logging.getLogger(__name__)


async def reasoning_steps(run: AgentRun) -> AsyncIterator[dict[str, Any]]:
    events, chain = run.event_factory, run.agent.reasoning_chain(run.ctx.sleep)
    for event in run.emit(events.make("ReasoningStarted")):
        yield event
    # The reasoning model's call is a model request as the main model's are (its own events,
    # so traces show it as an LLM span inside the reasoning).
    for event in run.emit(events.model_request_started(chain.primary.id, chain.primary.provider)):
        yield event
    parts: list[str] = []
    usage = Usage()
    started, ttft, failed = run.ctx.clock(), None, False
    stream = chain.astream(run.model_messages(), task="reasoning", incremental=run.ctx.incremental)
    try:
        async for chunk in stream:
            await run.check_cancelled()
            if isinstance(chunk, (ReasoningDelta, TextDelta)) and chunk.text:
                if ttft is None:
                    ttft = run.ctx.clock() - started
                parts.append(chunk.text)
                for event in run.emit(events.make("ReasoningContentDelta", reasoning_content=chunk.text)):
                    yield event
            elif isinstance(chunk, Usage):
                usage = usage + chunk
                run.state.metrics.add("reasoning_model", chain.active, chunk)
    except ModelError as exc:
        # As in Agno: a failed reasoning step does not fail the run, the agent answers without it.
        failed = True
        logger.warning("reasoning model failed", extra={"provider": exc.provider, "error": type(exc).__name__})
    finally:
        await stream.aclose()
    if not failed:
        for event in run.emit(events.model_request_completed(chain.active.id, chain.active.provider, usage, ttft)):
            yield event
    reasoning = "".join(parts).strip()
    if reasoning:
        step = {"result": reasoning}
        run.state.reasoning_content = reasoning
        run.state.reasoning_steps = [step]
        run.state.messages.append(
            new_message("assistant", f"<thinking>\n{reasoning}\n</thinking>", int(run.ctx.clock()), reasoning_content=reasoning)
        )
        for event in run.emit(events.make("ReasoningStep", content=step, content_type="ReasoningStep", reasoning_content=reasoning)):
            yield event
    for event in run.emit(
        events.make("ReasoningCompleted", content={"reasoning_steps": run.state.reasoning_steps or []}, content_type="ReasoningSteps")
    ):
        yield event


async def add_references(run: AgentRun) -> None:
    """``add_knowledge_to_context``: the best passages for the user's message are added to
    it before the first model call, as Agno's user message does. A failing source leaves
    the message as it was (Agno logs and goes on)."""
    agent, clock, state = run.agent, run.ctx.clock, run.state
    assert agent.knowledge is not None
    query = input_text(state.input)
    started = clock()
    try:
        hits = await agent.knowledge.asearch(
            query, user_id=run.ctx.user_id, limit=agent.num_references, filters=agent.run_knowledge_filters(run.ctx)
        )
    except Exception as exc:
        logger.warning("knowledge search failed", extra={"knowledge": agent.knowledge.name, "error": type(exc).__name__})
        return
    if not hits:
        return
    run.record_references(references_entry(query, hits, clock() - started))
    message = next((m for m in reversed(state.messages) if m.get("role") == "user"), None)
    if message is None or not isinstance(message.get("content"), str):
        return
    message["content"] += f"{REFERENCES_INTRO}{documents_text(hits, agent.references_format)}\n</references>"


async def summary_steps(run: AgentRun) -> AsyncIterator[dict[str, Any]]:
    for event in run.emit(run.event_factory.make("SessionSummaryStarted")):
        yield event
    conversation = history_messages(run.agent.history_runs(run.ctx)) + [
        m for m in run.state.messages if m.get("role") in ("user", "assistant")
    ]
    try:
        run.session_summary = await create_session_summary(
            run.agent.model_chain(run.ctx.sleep),
            conversation,
            previous=run.ctx.session_summary,
            clock=run.ctx.clock,
            book_usage=lambda model, usage: run.state.metrics.add("session_summary_model", model, usage),
        )
    except ModelError as exc:
        logger.warning("session summary failed", extra={"provider": exc.provider, "error": type(exc).__name__})
    for event in run.emit(run.event_factory.make("SessionSummaryCompleted", session_summary=run.session_summary)):
        yield event
