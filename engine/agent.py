"""``Agent``: the configuration of an agent, and the entry points that run it."""
from __future__ import annotations

import copy
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from engine.builtin_tools import knowledge_search_tool, past_sessions_tool, search_knowledge_tool
from engine.checkpoints import safe_boundary, truncate
from engine.compression import DEFAULT_LIMIT as DEFAULT_COMPRESSION_LIMIT
from engine.context import RunContext
from engine.errors import InvalidContinuation
from engine.factory import factory_tools, is_tool_factory
from engine.hitl import collect_decisions, is_pending
from engine.hooks import Hook, check_hooks
from engine.ids import new_id
from engine.knowledge import KnowledgeSource
from engine.learning import DEFAULT_MACHINE, LearningMachine
from engine.learning_tools import learning_context, learning_tools, run_records
from engine.knowledge_search import REFERENCES_FORMATS, effective_filters, knowledge_source
from engine.models import Model, ModelChain, get_model
from engine.output import RUNNING, RunMetrics, RunState, json_copy, new_message
from engine.prompt import knowledge_instructions, system_message
from engine.runner import AgentRun
from engine.structured import OutputSchema
from engine.tools.function import Function
from engine.tools.toolkit import Toolkit

# v2 names removed in v3, with what replaces them.
REMOVED_V2_PARAMETERS = {
    "enable_user_memories": "enable_user_memories was removed in v3; use update_memory_on_run",
    "search_session_history": "search_session_history was removed in v3; use search_past_sessions",
    "num_history_sessions": "num_history_sessions was removed in v3; use num_past_sessions_to_search",
    "num_past_session_runs": "num_past_session_runs was removed in v3; use num_past_session_runs_in_search",
    "reasoning": "reasoning=True was removed in v3; set reasoning_model=<model>",
}

ToolLike = Callable[..., Any] | Function | Toolkit


class Agent:
    """An agent's configuration (v3 parameter names only). Cheap to build; runs share nothing.

    ``model``, ``fallback_models`` and ``reasoning_model`` take a ``Model`` or a
    ``"provider:model_id"`` string. ``model_retries`` / ``retry_backoff`` tune the retries of a
    model before moving to the next fallback.

    ``knowledge`` is a ``KnowledgeSource`` (or a list of them, searched as one). As in Agno,
    ``search_knowledge`` gives the model a ``search_knowledge_base`` tool and
    ``add_knowledge_to_context`` adds the best passages for the user's message to it before the
    first model call; both search on behalf of the run's user, with ``knowledge_filters``
    (the agent's, updated with the run's). ``enable_agentic_knowledge_filters`` lets the model
    pass filters of its own. What was found is the run's ``references``.
    """

    def __init__(
        self,
        *,
        id: str | None = None,
        name: str | None = None,
        description: str | None = None,
        role: str | None = None,
        instructions: str | Sequence[str] | None = None,
        model: Model | str = "offline:demo",
        fallback_models: Sequence[Model | str] = (),
        reasoning_model: Model | str | None = None,
        tools: Sequence[ToolLike] | Callable[..., Sequence[ToolLike]] = (),
        add_history_to_context: bool = False,
        num_history_runs: int = 3,
        update_memory_on_run: bool = False,
        add_memories_to_context: bool | None = None,
        search_past_sessions: bool = False,
        num_past_sessions_to_search: int = 20,
        num_past_session_runs_in_search: int = 3,
        enable_session_summaries: bool = False,
        add_session_summary_to_context: bool | None = None,
        session_state: Mapping[str, Any] | None = None,
        add_session_state_to_context: bool = False,
        output_schema: Mapping[str, Any] | type | None = None,
        tool_call_limit: int | None = None,
        markdown: bool = False,
        metadata: Mapping[str, Any] | None = None,
        model_retries: int = 1,
        retry_backoff: float = 0.5,
        knowledge: KnowledgeSource | Sequence[KnowledgeSource] | None = None,
        search_knowledge: bool = True,
        add_knowledge_to_context: bool = False,
        knowledge_filters: Mapping[str, Any] | None = None,
        enable_agentic_knowledge_filters: bool = False,
        add_search_knowledge_instructions: bool = True,
        references_format: str = "json",
        num_references: int = 5,
        tracing: bool | None = None,
        pre_hooks: Sequence[Hook] = (),
        post_hooks: Sequence[Hook] = (),
        run_hooks_in_background: bool = False,
        token_budget: int | None = None,
        compress_tool_results: bool = False,
        compression_model: Model | str | None = None,
        compress_tool_results_above: int = DEFAULT_COMPRESSION_LIMIT,
        enable_learning: bool = False,
        learning: LearningMachine | None = None,
        **removed: Any,
    ) -> None:
        for key in removed:
            if key in REMOVED_V2_PARAMETERS:
                raise TypeError(REMOVED_V2_PARAMETERS[key])
            raise TypeError(f"Agent() got an unexpected keyword argument {key!r}")
        if tool_call_limit is not None and tool_call_limit < 0:
            raise ValueError("tool_call_limit must be >= 0")
        if token_budget is not None and token_budget < 1:
            raise ValueError("token_budget must be >= 1")
        if num_history_runs < 0:
            raise ValueError("num_history_runs must be >= 0")
        if references_format not in REFERENCES_FORMATS:
            raise ValueError(f"references_format must be one of {', '.join(REFERENCES_FORMATS)}, not {references_format!r}")
        if num_references < 1:
            raise ValueError("num_references must be >= 1")
        if knowledge_filters is not None and not isinstance(knowledge_filters, Mapping):
            raise TypeError("knowledge_filters must be a dict of metadata keys to values")

        self.name = name
        self.id = id or _slug(name) or new_id()
        self.description = description
        self.role = role  # what a team leader is told this agent does, as a member
        self.instructions = instructions
        self.model = get_model(model)
        self.fallback_models = [get_model(m) for m in fallback_models]
        self.reasoning_model = get_model(reasoning_model) if reasoning_model is not None else None
        # A callable builds each run's tools from its context (factory.py): a tool factory.
        self.tool_factory = tools if is_tool_factory(tools) else None
        self.tools = [] if self.tool_factory is not None else list(tools)  # type: ignore[arg-type]
        self.add_history_to_context = add_history_to_context
        self.num_history_runs = num_history_runs
        self.update_memory_on_run = update_memory_on_run
        self.add_memories_to_context = update_memory_on_run if add_memories_to_context is None else add_memories_to_context
        # The LearningMachine (engine.learning): a machine, or enable_learning's default one.
        # Learning replaces the legacy memory pair (both offer the model the user's memory; the
        # legacy one shadowed the store's), so turning it on clears that pair.
        self.learning = learning or (DEFAULT_MACHINE if enable_learning else None)
        if self.learning is not None:
            self.update_memory_on_run = False
            self.add_memories_to_context = False
        self.search_past_sessions = search_past_sessions
        self.num_past_sessions_to_search = num_past_sessions_to_search
        self.num_past_session_runs_in_search = num_past_session_runs_in_search
        self.enable_session_summaries = enable_session_summaries
        self.add_session_summary_to_context = (
            enable_session_summaries if add_session_summary_to_context is None else add_session_summary_to_context
        )
        self.session_state = dict(session_state or {})
        self.add_session_state_to_context = add_session_state_to_context
        self.output_schema = output_schema
        self.output_schema_spec = OutputSchema.of(output_schema)
        self.tool_call_limit = tool_call_limit
        self.markdown = markdown
        self.metadata = dict(metadata or {})
        self.model_retries = model_retries
        self.retry_backoff = retry_backoff
        self.knowledge = knowledge_source(knowledge)
        self.search_knowledge = search_knowledge
        self.add_knowledge_to_context = add_knowledge_to_context
        self.knowledge_filters = dict(knowledge_filters) if knowledge_filters else None
        self.enable_agentic_knowledge_filters = enable_agentic_knowledge_filters
        # Whether its runs are traced (traces/): None follows the deployment's TRACING.
        self.tracing = tracing
        self.add_search_knowledge_instructions = add_search_knowledge_instructions
        self.references_format = references_format
        self.num_references = num_references
        if compress_tool_results_above < 200:
            raise ValueError("compress_tool_results_above must be >= 200 characters")
        # Long tool results are shortened before they re-enter the context (compression.py).
        self.compress_tool_results = compress_tool_results
        self.compression_model = get_model(compression_model) if compression_model is not None else None
        self.compress_tool_results_above = compress_tool_results_above
        self.functions = self._collect_functions(self.tools)
        # Hooks and guardrails (engine.hooks); the token budget stops a run that would
        # call the model again once it has spent that many tokens (engine.runner).
        self.pre_hooks = check_hooks(pre_hooks, what="pre_hooks")
        self.post_hooks = check_hooks(post_hooks, what="post_hooks")
        self.run_hooks_in_background = run_hooks_in_background
        self.token_budget = token_budget

    @property
    def learns_memories(self) -> bool:
        """Whether its runs read and record the user's learned memories (``user_memory``)."""
        return self.learning is not None and self.learning.user_memory

    @property
    def records_memories(self) -> bool:
        """Whether the memory model runs beside the answer (legacy memory or learning)."""
        return self.update_memory_on_run or self.learns_memories

    @property
    def is_factory(self) -> bool:
        """Whether its tools are built per run (``tools=callable``)."""
        return self.tool_factory is not None

    def with_options(self, **options: Any) -> Agent:
        """A shallow copy with some attributes changed (a request's output schema, say), so a
        shared agent never sees one request's options."""
        changed = copy.copy(self)
        for name, value in options.items():
            setattr(changed, name, value)
        return changed

    # ---- public entry points ------------------------------------------------------------------

    def start_run(
        self,
        message: str,
        ctx: RunContext,
        *,
        stream_events: bool = True,
        images: Sequence[Mapping[str, Any]] | None = None,
        files: Sequence[Mapping[str, Any]] | None = None,
    ) -> AgentRun:
        """Prepare a run; iterating the returned ``AgentRun`` executes it and yields events."""
        created_at = int(ctx.clock())
        run_input: dict[str, Any] = {"input_content": message}
        if images:
            run_input["images"] = [dict(i) for i in images]
        if files:
            run_input["files"] = [dict(f) for f in files]
        metadata = {**self.metadata, **dict(ctx.metadata or {})}
        state = RunState(
            run_id=ctx.run_id,
            agent_id=self.id,
            agent_name=self.name,
            session_id=ctx.session_id,
            user_id=ctx.user_id,
            input=run_input,
            model=self.model.id,
            model_provider=self.model.provider,
            created_at=created_at,
            session_state={**json_copy(self.session_state), **json_copy(ctx.session_state or {})},
            metadata=metadata or None,
        )
        records = run_records(self.learning, ctx.memory_store)
        learned = learning_context(self.learning, records) if self.learning is not None and records is not None else []
        system = system_message(
            description=self.description,
            instructions=self.instructions,
            markdown=self.markdown,
            memories=ctx.memories if self.add_memories_to_context or self.learns_memories else None,
            user_profile=ctx.learned_profile if self.learning is not None and self.learning.user_profile else None,
            session_summary=ctx.session_summary if self.add_session_summary_to_context else None,
            session_state=state.session_state if self.add_session_state_to_context else None,
            output_schema=self.output_schema_spec,
            tool_instructions=[*(t.instructions for t in self.tools if isinstance(t, Toolkit) and t.instructions), *learned],
            knowledge_instructions=self._knowledge_instructions(),
        )
        if system:
            state.messages.append(new_message("system", system, created_at))
        text = message if isinstance(message, str) else json.dumps(message, ensure_ascii=False, default=str)
        state.messages.append(new_message("user", text, created_at, images=run_input.get("images"), files=run_input.get("files")))
        return AgentRun(self, ctx, state, stream_events=stream_events)

    def run(self, message: str, ctx: RunContext, **options: Any) -> dict[str, Any]:
        """Run to the end and return the RunOutput dict."""
        run = self.start_run(message, ctx, **options)
        for _ in run:
            pass
        return run.output

    def continue_run(
        self,
        run_output: Mapping[str, Any],
        tools: Sequence[Mapping[str, Any]] | None = None,
        ctx: RunContext | None = None,
        *,
        requirements: Sequence[Mapping[str, Any]] | None = None,
        stream_events: bool = True,
    ) -> AgentRun:
        """Resume a PAUSED run from its stored RunOutput dict, with decisions for its paused tools.

        ``tools`` are ToolExecution dicts (``confirmed``/``confirmation_note``, filled
        ``user_input_schema`` values, or ``result`` for external execution); ``requirements`` are
        RunRequirement dicts, as an alternative. Bad decisions raise ``InvalidContinuation``
        before anything runs.
        """
        if ctx is None:
            raise TypeError("continue_run() needs ctx")
        state = RunState.from_dict(dict(run_output))
        if state.agent_id and state.agent_id != self.id:
            raise InvalidContinuation(f"Run {state.run_id} belongs to agent {state.agent_id}, not {self.id}")
        decisions = collect_decisions(state, self.run_functions(ctx), tools=tools, requirements=requirements)
        if ctx.session_state is not None:
            state.session_state = {**state.session_state, **json_copy(ctx.session_state)}
        return AgentRun(self, ctx, state, stream_events=stream_events, decisions=decisions)

    def branch_run(
        self,
        run_output: Mapping[str, Any],
        ctx: RunContext,
        *,
        keep: int,
        fork: bool,
        input: str | None = None,
        regenerated_from: str | None = None,
        stream_events: bool = True,
    ) -> AgentRun:
        """Run the model loop again on a stored run's transcript, cut after ``keep`` messages
        (snapped down so no tool call loses its result), with ``input`` as a new user message.

        ``fork``: the result is a new run (``ctx.run_id``) beside the original, which is left as
        it is, with ``forked_from_run_id`` and a metrics and clock of its own; otherwise the run
        continues under its own id (a failed run, retried). Streams ``RunContinued`` first.
        """
        state = RunState.from_dict(dict(run_output))
        if state.agent_id and state.agent_id != self.id:
            raise InvalidContinuation(f"Run {state.run_id} belongs to agent {state.agent_id}, not {self.id}")
        keep = safe_boundary(state.messages, keep)
        if fork:
            state.forked_from_run_id, state.run_id = state.run_id, ctx.run_id
            state.forked_from_message_index = keep
            state.metrics = RunMetrics()
            state.created_at = int(ctx.clock())
        truncate(state, keep)
        if regenerated_from is not None:
            state.regenerated_from = regenerated_from
        if input:
            state.messages.append(new_message("user", input, int(ctx.clock())))
        if any(is_pending(te) for te in state.tools):
            raise InvalidContinuation("Run has unresolved HITL requirements. Provide the `tools` parameter.")
        if ctx.session_state is not None:
            state.session_state = {**state.session_state, **json_copy(ctx.session_state)}
        state.status, state.cancellation_stage = RUNNING, None
        return AgentRun(self, ctx, state, stream_events=stream_events, decisions={})

    # ---- used by the run loop -----------------------------------------------------------------

    def run_functions(self, ctx: RunContext, *, record_references: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Function]:
        """The agent's tools plus those its knowledge and the run's context provide, by name.
        ``record_references`` receives what each knowledge search found."""
        functions = dict(self.functions)
        if self.tool_factory is not None:
            built = self._collect_functions(factory_tools(self.tool_factory, self, ctx))
            taken = sorted(set(built) & set(functions))
            if taken:
                raise ValueError(f"The tool factory built tools named as the agent's own: {', '.join(taken)}")
            functions.update(built)
        extra = []
        if self.knowledge is not None and self.search_knowledge:
            extra.append(
                search_knowledge_tool(
                    self.knowledge, user_id=ctx.user_id, filters=self.run_knowledge_filters(ctx),
                    agentic=self.enable_agentic_knowledge_filters, references_format=self.references_format,
                    clock=ctx.clock, record=record_references, limit=self.num_references,
                )
            )
        if ctx.retriever is not None:
            extra.append(knowledge_search_tool(ctx.retriever))
        if self.search_past_sessions and ctx.past_sessions is not None:
            extra.append(
                past_sessions_tool(ctx.past_sessions, self.num_past_sessions_to_search, self.num_past_session_runs_in_search)
            )
        records = run_records(self.learning, ctx.memory_store)
        if self.learning is not None and records is not None:
            extra += learning_tools(self.learning, records, agent_id=self.id, team_id=None, session_id=ctx.session_id)
        for function in extra:
            functions.setdefault(function.name, function)
        return functions

    def run_knowledge_filters(self, ctx: RunContext) -> dict[str, Any] | None:
        return effective_filters(self.knowledge_filters, ctx.knowledge_filters)

    def _knowledge_instructions(self) -> str | None:
        if self.knowledge is None or not self.search_knowledge or not self.add_search_knowledge_instructions:
            return None
        keys = getattr(self.knowledge, "filter_keys", None) if self.enable_agentic_knowledge_filters else None
        return knowledge_instructions(sorted(keys) if keys else None)

    def history_runs(self, ctx: RunContext) -> list[dict[str, Any]]:
        if self.num_history_runs == 0:
            return []
        return list(ctx.history)[-self.num_history_runs :]

    def model_chain(self, sleep: Callable[[float], Awaitable[None] | None]) -> ModelChain:
        return ModelChain([self.model, *self.fallback_models], retries=self.model_retries, backoff=self.retry_backoff, sleep=sleep)

    def reasoning_chain(self, sleep: Callable[[float], Awaitable[None] | None]) -> ModelChain:
        assert self.reasoning_model is not None
        return ModelChain([self.reasoning_model], retries=self.model_retries, backoff=self.retry_backoff, sleep=sleep)

    @staticmethod
    def _collect_functions(tools: Sequence[ToolLike]) -> dict[str, Function]:
        functions: dict[str, Function] = {}
        for item in tools:
            found = item.functions() if isinstance(item, Toolkit) else [Function.from_callable(item)]
            for function in found:
                if function.name in functions:
                    raise ValueError(f"Two tools are named {function.name!r}")
                functions[function.name] = function
        return functions

    def __repr__(self) -> str:
        return f"<Agent id={self.id!r} model={self.model!r}>"


def _slug(name: str | None) -> str:
    return re.sub(r"[^a-z0-9]+", "-", (name or "").lower()).strip("-")
