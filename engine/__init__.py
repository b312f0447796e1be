"""The agent runtime: models, tools and the run loop. Pure Python; imports nothing from Django.

Importing this package imports neither ``openai`` nor ``anthropic``: providers import their SDK
on first use. Storage stays with the caller: history, memories and session state come in through
``RunContext``; memories go out through the ``MemoryStore`` protocol; everything else the caller
persists comes back as dicts (events, the RunOutput, ``run.session_summary``, ``run.memories``).

Public API
==========

Agents and runs::

    agent = Agent(id="assistant", name="Assistant", model="openai:gpt-4o-mini",
                  tools=[CalculatorTools(), my_tool], add_history_to_context=True, ...)
    ctx = RunContext(run_id=..., session_id=..., user_id=..., history=[<RunOutput dicts>],
                     memories=[{memory_id, memory, topics}], session_state={...},
                     session_summary=None, memory_store=None, past_sessions=None, retriever=None,
                     is_cancelled=lambda: False, clock=time.time, sleep=asyncio.sleep,
                     dependencies=None, metadata=None)
    run = agent.start_run(message="hi", ctx=ctx, stream_events=True, images=None, files=None)
    for event in run: ...            # event dicts in AgentOS shape; exactly one terminal event:
                                     # RunCompleted | RunPaused | RunError | RunCancelled
    async for event in run: ...      # the same run loop on the caller's event loop (one loop,
                                     # async; the sync form drives it on the thread's own loop)
    run.output                       # RunOutput dict (AgentOS RunOutput.to_dict() shape)
    run.status                       # "COMPLETED" | "PAUSED" | "ERROR" | "CANCELLED" ("RUNNING" before the end)
    run.session_summary              # {summary, topics, updated_at} when summaries are enabled, else None
    run.memories                     # the user's memories after the memory manager ran, else None
    run.close()                      # stop early (client gone); closes the provider stream
    await run.aclose()               # the same, for an async consumer
    agent.run(message, ctx, **opts) -> dict                       # drain, return run.output
    agent.continue_run(run_output, tools=[ToolExecution dicts], ctx=ctx,
                       requirements=None, stream_events=True) -> AgentRun
        # resumes a PAUSED run from its stored dict (same run_id; starts with RunContinued);
        # raises InvalidContinuation (a ValueError) for unknown tool_call_ids, missing decisions,
        # or a run that is not paused.

``Agent`` parameters (v3 names; removed v2 names raise ``TypeError`` naming the replacement):
``id, name, description, instructions, model, fallback_models, reasoning_model, tools,
add_history_to_context, num_history_runs=3, update_memory_on_run, add_memories_to_context,
search_past_sessions, num_past_sessions_to_search, num_past_session_runs_in_search,
enable_session_summaries, add_session_summary_to_context, session_state,
add_session_state_to_context, output_schema, tool_call_limit, markdown, metadata,
model_retries=1, retry_backoff=0.5, pre_hooks, post_hooks, run_hooks_in_background, token_budget,
compress_tool_results=False, compression_model=None, compress_tool_results_above=2000,
enable_learning=False, learning=None`` (a ``LearningMachine``; learning clears the legacy memory
pair, see engine/learning.py).

Hooks (``hooks.py``, ``guardrails.py``): ``pre_hooks`` run before the model sees the input (a
``Guardrail`` may refuse with ``InputCheckError``), ``post_hooks`` after it answers (may refuse with
``OutputCheckError``); background post-hooks are left in ``run.background_hooks`` for the caller
(``hooks.run_background_hooks``), those of the runs inside it (a team's members, a workflow's
agent and team steps) in ``run.child_background_hooks`` (``hooks.child_hooks``; the caller finds
each member with ``hooks.component_inside``), and ``run.replaced_input`` is the input a pre-hook masked.
``token_budget`` stops a run before a model call once it has spent that many tokens
(``TokenBudgetExceeded``, a ``RunError`` of type ``token_budget_exceeded``).

Compression (``compression.py``) shortens long tool results before the model reads them again.
``tools`` may be one callable, a tool factory called at each run's start; ``factory.py`` has
``AgentFactory``, ``TeamFactory`` and ``WorkflowFactory`` for components built whole per request.

Context protocols (``typing.Protocol``): ``MemoryStore`` (add/update/delete), ``PastSessions``
(recent_runs), ``Retriever`` (search; exposed as the ``search_knowledge_base`` tool).

Models: ``get_model("provider:model_id", **options)`` for ``openai:``, ``anthropic:``,
``offline:`` (see ``engine.models.offline`` for the offline model's grammar), with each
provider's generation options (``models/options.py``); ``Model``
(``id``, ``provider``, ``name``, ``to_dict() -> {name, model, provider}``, ``stream(...)``).
Workflows (``workflow.py``, ``workflow_step.py``, ``workflow_steps.py``, ``workflow_types.py``, ``workflow_review.py``)::

    workflow = Workflow(id=..., name=..., steps=[fn, agent, team, Step(...), Steps(...),
                        Parallel(*steps, name=...), Loop(steps=[...], end_condition=fn, max_iterations=3),
                        Condition(evaluator=fn | bool, steps=[...], else_steps=[...]),
                        Router(selector=fn, choices=[...])],
                        session_state={...}, input_schema=None)   # keyword-only
    run = workflow.start_run(message, ctx, stream_events=True, additional_data=None)  # WorkflowRun
    for event in run: ...            # WorkflowStarted, Step*/Parallel*/Loop*/Condition*/Router*/Steps*
                                     # events, the executors' events (nested_depth + 1), then one of
                                     # WorkflowCompleted | WorkflowPaused | WorkflowError | WorkflowCancelled
    run.output                       # WorkflowRunOutput dict; step_executor_runs = the child RunOutputs
    Step(name, agent=|team=|executor=fn, max_retries=3, skip_on_failure=False,
         human_review=HumanReview(requires_confirmation, confirmation_message, on_reject,
                                  requires_user_input, user_input_message, user_input_schema,
                                  requires_output_review, output_review_message,
                                  requires_iteration_review, iteration_review_message,
                                  on_error, max_retries, timeout, on_timeout))
    workflow.continue_run(stored_output, ctx=ctx, step_requirements=[{..., confirmed | user_input |
                          selected_choices | rejection_feedback | edited_output}],
                          error_requirements=[{decision: "retry" | "skip"}]) -> WorkflowRun
        # a PAUSED run resumes at its paused step (nested ones too, via paused_frames) from the stored dict alone; raises
        # InvalidContinuation for answers that do not fit
    steps_from_config(json_steps, Executors(agent=id->Agent|None, team=id->Team|None,
                      function=name->fn|None)) -> [steps]   # workflow_config.py: a stored graph in
        # Agno's Step.to_dict() shape, every problem raised at once in StepConfigError (path, message);
        # Workflow(..., version=N) records workflow_version in its runs and continues only those

Errors: ``ModelError`` > ``RetryableModelError`` / ``FatalModelError`` > ``MissingCredentialsError``.

Tools: ``@tool`` (bare or with ``name, description, requires_confirmation, requires_user_input,
user_input_fields, external_execution, stop_after_tool_call``), ``Function``, ``Toolkit``
(``id``, ``name``, ``functions()``, ``to_dict()``) and the toolkits ``CalculatorTools``
("calculator"), ``DateTimeTools`` ("datetime"), ``HttpFetchTools`` ("http"), ``Workspace``
("workspace").

Knowledge: ``KnowledgeSource`` (a ``name`` and ``async asearch(query, *, user_id, limit,
filters) -> list[KnowledgeHit]``), ``StaticKnowledge(name, passages)`` (in memory, lexical) and
``CombinedKnowledge(sources)``; pass one (or a list) as ``Agent(knowledge=...)``.

Status constants: ``RUNNING, COMPLETED, PAUSED, CANCELLED, ERROR``.
"""
from __future__ import annotations

from engine.agent import REMOVED_V2_PARAMETERS, Agent
from engine.context import MemoryStore, PastSessions, Retriever, RunContext
from engine.errors import (
    FatalModelError,
    InvalidContinuation,
    MissingCredentialsError,
    ModelError,
    OutputSchemaError,
    RetryableModelError,
)
from engine.events import TERMINAL_EVENTS
from engine.knowledge import KnowledgeHit, KnowledgeSource
from engine.learning import LearningMachine
from engine.knowledge_search import CombinedKnowledge, StaticKnowledge
from engine.models import Model, get_model
from engine.output import CANCELLED, COMPLETED, ERROR, PAUSED, RUNNING
from engine.runner import AgentRun
from engine.team import Team, TeamRun
from engine.workflow import Workflow, WorkflowRun
from engine.workflow_review import HumanReview
from engine.workflow_step import Step
from engine.workflow_steps import Condition, Loop, Parallel, Router, Steps
from engine.workflow_types import StepInput, StepOutput
from engine.tools import (
    CalculatorTools,
    DateTimeTools,
    FetchRefused,
    Function,
    HttpFetchTools,
    Toolkit,
    Workspace,
    approval,
    tool,
)

__all__ = [
    "LearningMachine",
    "WorkflowRun",
    "Workflow",
    "Steps",
    "StepOutput",
    "StepInput",
    "Step",
    "Router",
    "Parallel",
    "Loop",
    "HumanReview",
    "Condition",
    "CANCELLED",
    "COMPLETED",
    "ERROR",
    "PAUSED",
    "REMOVED_V2_PARAMETERS",
    "RUNNING",
    "TERMINAL_EVENTS",
    "Agent",
    "AgentRun",
    "CalculatorTools",
    "DateTimeTools",
    "FatalModelError",
    "FetchRefused",
    "Function",
    "HttpFetchTools",
    "InvalidContinuation",
    "CombinedKnowledge",
    "KnowledgeHit",
    "KnowledgeSource",
    "StaticKnowledge",
    "MemoryStore",
    "MissingCredentialsError",
    "Model",
    "ModelError",
    "OutputSchemaError",
    "PastSessions",
    "Retriever",
    "RetryableModelError",
    "RunContext",
    "Team",
    "TeamRun",
    "Toolkit",
    "Workspace",
    "approval",
    "get_model",
    "tool",
]
