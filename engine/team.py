"""``Team``: a leader model that delegates to members (agents or teams).

The leader is an ``Agent`` built from the team's configuration whose tools include the delegation
tools; ``TeamRun`` (``team_run.py``) is an ``AgentRun`` of that leader (the one run loop) that runs delegation calls
itself: the members' runs go concurrently, their events are relayed live (``nested_depth`` + 1,
``parent_run_id`` = the team run), and the leader's own events are renamed to AgentOS's team
events (``TeamRunStarted`` ..., ``team_id`` / ``team_name`` instead of ``agent_id`` / ``agent_name``).

Modes (Agno's ``TeamMode``):

* ``route``: ``delegate_task_to_member``; the member's answer is the team's answer (Agno's
  ``respond_directly``: the leader does not speak after it).
* ``coordinate``: ``delegate_task_to_member``; several delegations of one model turn run
  concurrently; the leader composes the answer from their results.
* ``broadcast`` (``collaborate`` is an alias): ``delegate_task_to_members(task)`` sends the task to
  every member concurrently; the leader synthesises.
* ``tasks``: the leader keeps a task list (``create_task``, ``update_task``, ``execute_task``,
  ``list_tasks``, ``mark_all_complete``) and works it, one model turn per iteration, until it says
  the goal is complete or ``max_iterations`` iterations ran (``TeamTask*`` events; the board and
  its loop are in ``team_tasks.py``; ``execute_task`` is a delegation run here).

A member that fails (its run ends in ERROR) or does not finish within ``member_timeout`` seconds
is reported to the leader as a tool result that says so, with ``tool_call_error`` true; its
RunOutput (status ERROR) is in ``member_responses``. A member that pauses for a human pauses the
whole team (``TeamRunPaused``, requirements naming the member); ``Team.continue_run`` resumes
the member from the stored team output alone, then the leader with the member's answer.

Metrics: as Agno, a team run's ``metrics`` are the leader's; each member's are in its own
RunOutput (a session's totals add the member runs, which the caller stores as child rows).
"""
from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Union

from engine.agent import REMOVED_V2_PARAMETERS, Agent, ToolLike
from engine.compression import DEFAULT_LIMIT as DEFAULT_COMPRESSION_LIMIT
from engine.context import RunContext
from engine.errors import InvalidContinuation
from engine.factory import is_tool_factory
from engine.hitl import collect_decisions, is_pending, supplied_decisions
from engine.output import PAUSED, json_copy
from engine.runner import AgentRun
from engine.team_members import agent_shaped, leader_state, member_context, pending_call_ids
from engine.team_run import TeamRun, delegate_task_to_member, delegate_task_to_members
from engine.team_tasks import task_tools
from engine.tools.function import Function
from engine.tools.toolkit import Toolkit

MODES = ("route", "coordinate", "broadcast", "collaborate", "tasks")

Member = Union[Agent, "Team"]


class Team:
    """A team's configuration (v3 names). Members are agents or teams, positionally or ``members=``."""

    def __init__(
        self,
        members: Sequence[Member] = (),
        *,
        id: str | None = None,
        name: str | None = None,
        description: str | None = None,
        role: str | None = None,
        instructions: str | Sequence[str] | None = None,
        model: Any = "offline:demo",
        fallback_models: Sequence[Any] = (),
        mode: str = "coordinate",
        tools: Sequence[ToolLike] | Any = (),
        max_iterations: int = 10,
        member_timeout: float | None = None,
        add_history_to_context: bool = False,
        num_history_runs: int = 3,
        update_memory_on_run: bool = False,
        add_memories_to_context: bool | None = None,
        enable_session_summaries: bool = False,
        add_session_summary_to_context: bool | None = None,
        session_state: Mapping[str, Any] | None = None,
        add_session_state_to_context: bool = False,
        markdown: bool = False,
        metadata: Mapping[str, Any] | None = None,
        output_schema: Mapping[str, Any] | type | None = None,
        tool_call_limit: int | None = None,
        model_retries: int = 1,
        retry_backoff: float = 0.5,
        search_past_sessions: bool = False,
        num_past_sessions_to_search: int = 20,
        num_past_session_runs_in_search: int = 3,
        knowledge: Any = None,
        search_knowledge: bool = True,
        add_knowledge_to_context: bool = False,
        knowledge_filters: Mapping[str, Any] | None = None,
        enable_agentic_knowledge_filters: bool = False,
        add_search_knowledge_instructions: bool = True,
        references_format: str = "json",
        num_references: int = 5,
        tracing: bool | None = None,
        pre_hooks: Sequence[Any] = (),
        post_hooks: Sequence[Any] = (),
        run_hooks_in_background: bool = False,
        token_budget: int | None = None,
        compress_tool_results: bool = False,
        compression_model: Any = None,
        compress_tool_results_above: int = DEFAULT_COMPRESSION_LIMIT,
        enable_learning: bool = False,
        learning: Any = None,
        **removed: Any,
    ) -> None:
        # Whether its runs are traced (traces/): None follows the deployment's TRACING.
        self.tracing = tracing
        for key in removed:
            if key in REMOVED_V2_PARAMETERS:
                raise TypeError(REMOVED_V2_PARAMETERS[key])
            raise TypeError(f"Team() got an unexpected keyword argument {key!r}")
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        if max_iterations < 1:
            raise ValueError("max_iterations must be >= 1")
        if member_timeout is not None and member_timeout <= 0:
            raise ValueError("member_timeout must be > 0")
        self.members: list[Member] = list(members)
        if not self.members:
            raise ValueError("A team needs at least one member")
        for member in self.members:
            if not isinstance(member, (Agent, Team)):
                raise TypeError(f"Team members are Agents or Teams, not {type(member).__name__}")
        ids = [m.id for m in self.members]
        if len(set(ids)) != len(ids):
            raise ValueError(f"Two members share an id: {sorted({i for i in ids if ids.count(i) > 1})}")

        self.mode = "broadcast" if mode == "collaborate" else mode
        self.role = role
        self.max_iterations = max_iterations
        self.member_timeout = member_timeout
        # A callable builds each run's tools (factory.py): the leader calls it, beside its team tools.
        tool_factory = tools if is_tool_factory(tools) else None
        self.tools = [] if tool_factory is not None else list(tools)
        leader_tools: list[ToolLike] = [*self.tools, self._team_toolkit()]
        self.leader = Agent(
            id=id, name=name, description=description, instructions=instructions, model=model,
            fallback_models=fallback_models, tools=leader_tools, add_history_to_context=add_history_to_context,
            num_history_runs=num_history_runs, update_memory_on_run=update_memory_on_run,
            add_memories_to_context=add_memories_to_context, search_past_sessions=search_past_sessions,
            num_past_sessions_to_search=num_past_sessions_to_search,
            num_past_session_runs_in_search=num_past_session_runs_in_search,
            enable_session_summaries=enable_session_summaries,
            add_session_summary_to_context=add_session_summary_to_context, session_state=session_state,
            add_session_state_to_context=add_session_state_to_context, output_schema=output_schema,
            tool_call_limit=tool_call_limit, markdown=markdown, metadata=metadata, model_retries=model_retries,
            retry_backoff=retry_backoff, knowledge=knowledge, search_knowledge=search_knowledge,
            add_knowledge_to_context=add_knowledge_to_context, knowledge_filters=knowledge_filters,
            enable_agentic_knowledge_filters=enable_agentic_knowledge_filters,
            add_search_knowledge_instructions=add_search_knowledge_instructions, references_format=references_format,
            num_references=num_references, pre_hooks=pre_hooks, post_hooks=post_hooks,
            run_hooks_in_background=run_hooks_in_background, token_budget=token_budget,
            compress_tool_results=compress_tool_results, compression_model=compression_model,
            compress_tool_results_above=compress_tool_results_above,
            enable_learning=enable_learning, learning=learning,
        )
        self.leader.tool_factory = tool_factory
        leader = self.leader
        # The attributes the services read, with the same meaning as on Agent.
        self.id = leader.id
        self.name = leader.name
        self.description = leader.description
        self.instructions = leader.instructions
        self.model = leader.model
        self.fallback_models = leader.fallback_models
        self.reasoning_model = None
        self.add_history_to_context = leader.add_history_to_context
        self.num_history_runs = leader.num_history_runs
        self.update_memory_on_run = leader.update_memory_on_run
        self.add_memories_to_context = leader.add_memories_to_context
        # The leader learns for the team (engine.learning); learning clears the legacy pair there.
        self.learning = leader.learning
        self.learns_memories = leader.learns_memories
        self.records_memories = leader.records_memories
        self.enable_session_summaries = leader.enable_session_summaries
        self.add_session_summary_to_context = leader.add_session_summary_to_context
        self.search_past_sessions = leader.search_past_sessions
        self.num_past_sessions_to_search = leader.num_past_sessions_to_search
        self.num_past_session_runs_in_search = leader.num_past_session_runs_in_search
        self.session_state = leader.session_state
        self.add_session_state_to_context = leader.add_session_state_to_context
        self.output_schema = leader.output_schema
        self.output_schema_spec = leader.output_schema_spec
        self.tool_call_limit = leader.tool_call_limit
        self.markdown = leader.markdown
        self.metadata = leader.metadata
        self.model_retries = model_retries
        self.retry_backoff = retry_backoff
        # The leader's knowledge (a team's own base, searched by the leader as an agent's).
        self.knowledge = leader.knowledge
        self.search_knowledge = leader.search_knowledge
        self.add_knowledge_to_context = leader.add_knowledge_to_context
        self.knowledge_filters = leader.knowledge_filters
        self.enable_agentic_knowledge_filters = leader.enable_agentic_knowledge_filters
        self.references_format = leader.references_format
        self.functions: dict[str, Function] = leader.functions
        # The leader runs them (engine.hooks): the team's input, the team's answer.
        self.pre_hooks = leader.pre_hooks
        self.post_hooks = leader.post_hooks
        self.run_hooks_in_background = leader.run_hooks_in_background
        self.token_budget = leader.token_budget
        self.compress_tool_results = leader.compress_tool_results

    @property
    def is_factory(self) -> bool:
        """Whether the leader's tools are built per run (``tools=callable``)."""
        return self.leader.is_factory

    def with_options(self, **options: Any) -> Team:
        """``Agent.with_options`` for a team: the leader's copy gets them too (it is what runs)."""
        changed = copy.copy(self)
        changed.leader = self.leader.with_options(**options)
        for name, value in options.items():
            setattr(changed, name, value)
        return changed

    # ---- members ------------------------------------------------------------------------------

    def member_by_id(self, member_id: str) -> Member | None:
        """A member by id (or by name), searched recursively through sub-teams, as Agno's
        ``_find_member_by_id``; ``None`` when there is none."""
        for member in self.members:
            if member.id == member_id:
                return member
        for member in self.members:
            if isinstance(member, Team):
                found = member.member_by_id(member_id)
                if found is not None:
                    return found
        for member in self.all_members():
            if member.name and member.name == member_id:
                return member
        return None

    def all_members(self) -> list[Member]:
        """Every member, depth first: a sub-team, then its members."""
        found: list[Member] = []
        for member in self.members:
            found.append(member)
            if isinstance(member, Team):
                found.extend(member.all_members())
        return found

    def members_block(self) -> str:
        """The ``<team_members>`` section of the leader's system message."""
        lines = []
        for member in self.members:
            line = f"- member_id: {member.id} | name: {member.name or member.id}"
            role = getattr(member, "role", None) or member.description
            if role:
                line += f" | role: {role}"
            lines.append(line)
        return "<team_members>\n" + "\n".join(lines) + "\n</team_members>"

    def _team_toolkit(self) -> Toolkit:
        guidance = {
            "route": "You are a router. Pick the one member best suited to the request and delegate the user's "
            "request to it with delegate_task_to_member; its answer goes to the user as it is.",
            "coordinate": "You lead the team. Delegate tasks to members with delegate_task_to_member (several "
            "delegations in one turn run at the same time), then compose the final answer from their results.",
            "broadcast": "You lead the team. Send the task to every member at once with delegate_task_to_members, "
            "then synthesise their answers into one response.",
            "tasks": "You lead the team in autonomous task mode. Break the goal into tasks with create_task, run "
            "them through members with execute_task (several in one turn run at the same time), record tasks "
            "you handle yourself with update_task, see the board with list_tasks, and call mark_all_complete "
            "with a summary when the goal is done. A request that needs no tasks is answered directly.",
        }[self.mode]
        if self.mode == "broadcast":
            tools: list[Any] = [delegate_task_to_members]
        elif self.mode == "tasks":
            tools = task_tools()
        else:
            tools = [delegate_task_to_member]
        return Toolkit(id="team", name="team", tools=tools, instructions=f"{self.members_block()}\n\n{guidance}")

    # ---- public entry points (the same as Agent's) --------------------------------------------

    def start_run(
        self,
        message: str,
        ctx: RunContext,
        *,
        stream_events: bool = True,
        images: Sequence[Mapping[str, Any]] | None = None,
        files: Sequence[Mapping[str, Any]] | None = None,
    ) -> TeamRun:
        """Prepare a team run; iterating the returned ``TeamRun`` executes it and yields events."""
        # Agent.start_run builds the leader's state (input, system message, session state); the
        # AgentRun it returns is never started.
        state = self.leader.start_run(message, ctx, stream_events=stream_events, images=images, files=files).state
        return TeamRun(self, ctx, state, stream_events=stream_events)

    def run(self, message: str, ctx: RunContext, **options: Any) -> dict[str, Any]:
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
    ) -> TeamRun:
        """Resume a PAUSED team run from its stored TeamRunOutput dict.

        Decisions (ToolExecution dicts in ``tools`` or RunRequirement dicts in ``requirements``)
        go to whoever paused: a member's go to that member's run (continued under its own
        run_id, from the copy in ``member_responses``), the leader's to the leader. Bad decisions
        raise ``InvalidContinuation`` before anything runs.
        """
        if ctx is None:
            raise TypeError("continue_run() needs ctx")
        data = dict(run_output)
        state = leader_state(data)
        if state.agent_id and state.agent_id != self.id:
            raise InvalidContinuation(f"Run {state.run_id} belongs to team {state.agent_id}, not {self.id}")
        if state.status != PAUSED:
            raise InvalidContinuation(f"Run {state.run_id} is not paused (status {state.status})")
        supplied = supplied_decisions(tools, requirements)
        members_out = [json_copy(m) for m in data.get("member_responses") or []]
        owners: dict[str, int] = {}
        for slot, out in enumerate(members_out):
            if out.get("status") == PAUSED:
                for call_id in pending_call_ids(out):
                    owners[call_id] = slot
        leader_ids = {te["tool_call_id"] for te in state.tools if is_pending(te)}
        if not owners and not leader_ids:
            raise InvalidContinuation(f"Run {state.run_id} has no paused tool calls")
        unknown = sorted(set(supplied) - set(owners) - leader_ids)
        if unknown:
            raise InvalidContinuation(f"Unknown tool_call_id {', '.join(unknown)}: not a paused tool call of run {state.run_id}")

        continuations: list[tuple[int, Member, AgentRun]] = []
        for slot in sorted(set(owners.values())):
            out = members_out[slot]
            member_id = out.get("team_id") or out.get("agent_id") or ""
            member = self.member_by_id(member_id)
            if member is None:
                raise InvalidContinuation(f"Member {member_id} of run {state.run_id} is not in team {self.id}")
            items = [supplied[c] for c in pending_call_ids(out) if c in supplied]
            member_ctx = member_context(ctx, out["run_id"], state.session_state, member)
            member_run = member.continue_run(out, items, ctx=member_ctx, stream_events=stream_events)
            member_run.state.parent_run_id = state.run_id
            continuations.append((slot, member, member_run))
        decisions = {}
        if leader_ids:
            leader_items = [supplied[c] for c in leader_ids if c in supplied]
            decisions = collect_decisions(state, self.run_functions(ctx), tools=leader_items)
        if ctx.session_state is not None:
            state.session_state = {**state.session_state, **json_copy(ctx.session_state)}
        return TeamRun(
            self, ctx, state, stream_events=stream_events, decisions=decisions, member_responses=members_out,
            continuations=continuations,
        )

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
    ) -> TeamRun:
        """``Agent.branch_run`` on the leader's transcript. A fork starts with no member responses;
        a retry keeps those whose delegation survives the cut."""
        data = agent_shaped(run_output)
        leader_run = self.leader.branch_run(
            data, ctx, keep=keep, fork=fork, input=input, regenerated_from=regenerated_from, stream_events=stream_events
        )
        state = leader_run.state
        kept_calls = {te.get("child_run_id") for te in state.tools}
        members_out = [] if fork else [json_copy(m) for m in run_output.get("member_responses") or [] if m.get("run_id") in kept_calls]
        return TeamRun(self, ctx, state, stream_events=stream_events, decisions={}, member_responses=members_out)

    def history_runs(self, ctx: RunContext) -> list[dict[str, Any]]:
        return self.leader.history_runs(ctx)

    def run_functions(self, ctx: RunContext) -> dict[str, Function]:
        return self.leader.run_functions(ctx)

    def __repr__(self) -> str:
        return f"<Team id={self.id!r} mode={self.mode!r} members={[m.id for m in self.members]}>"
