"""``Team``: a leader model that delegates to members (agents or teams), and ``TeamRun``.

The leader is an ``Agent`` built from the team's configuration whose tools include the delegation
tools; ``TeamRun`` is an ``AgentRun`` of that leader (the one run loop) that runs delegation calls
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

import asyncio
import contextlib
import copy
import json
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import aclosing
from typing import Any, Union

from engine.agent import REMOVED_V2_PARAMETERS, Agent, ToolLike
from engine.calls import call_str, parse_arguments
from engine.compression import DEFAULT_LIMIT as DEFAULT_COMPRESSION_LIMIT
from engine.context import RunContext
from engine.errors import InvalidContinuation
from engine.factory import is_tool_factory
from engine.events import ESSENTIAL_EVENTS
from engine.hitl import approval_ids, collect_decisions, is_pending, supplied_decisions
from engine.output import (
    CANCELLED,
    COMPLETED,
    ERROR,
    PAUSED,
    RunState,
    json_copy,
    paused_content,
    requirement,
    tool_execution,
)
from engine.runner import TOOL_LIMIT, AgentRun
from engine.team_tasks import STATE_KEY as TASKS_STATE_KEY
from engine.team_tasks import TaskBoard, task_tools, tasks_loop
from engine.tools.function import Function
from engine.tools.toolkit import Toolkit

MODES = ("route", "coordinate", "broadcast", "collaborate", "tasks")
DELEGATE_ONE = "delegate_task_to_member"
DELEGATE_ALL = "delegate_task_to_members"
DELEGATION_TOOLS = frozenset({DELEGATE_ONE, DELEGATE_ALL})
EXECUTE_TASK = "execute_task"  # tasks mode's delegation (engine/team_tasks.py)
NEEDS_HUMAN = "requires human input before continuing."
# Team events that are not the leader's agent events renamed (tasks mode).
TASK_EVENTS = ("TeamTaskIterationStarted", "TeamTaskIterationCompleted", "TeamTaskStateUpdated", "TeamTaskCreated", "TeamTaskUpdated")
# Requirement keys in Agno's RunRequirement.to_dict order.
_REQUIREMENT_KEYS = (
    "id", "created_at", "confirmation", "confirmation_note", "external_execution_result", "member_agent_id",
    "member_agent_name", "member_run_id", "tool_execution", "user_input_schema", "user_feedback_schema",
)

Member = Union[Agent, "Team"]


def delegate_task_to_member(member_id: str, task: str) -> str:
    """Use this function to delegate a task to the selected team member.
    You must provide a clear and concise description of the task the member should achieve AND the expected output.

    Args:
        member_id: The ID of the member to delegate the task to. Use only the ID of the member, not the ID of the team followed by the ID of the member.
        task: A clear and concise description of the task the member should achieve.
    """
    raise RuntimeError("delegation tools are run by the team run, not called")


def delegate_task_to_members(task: str) -> str:
    """Use this function to delegate a task to all the member agents and return a response.
    You must provide a clear and concise description of the task to send to member agents.

    Args:
        task: A clear and concise description of the task to send to member agents.
    """
    raise RuntimeError("delegation tools are run by the team run, not called")


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
        self._leader = Agent(
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
        )
        self._leader.tool_factory = tool_factory
        leader = self._leader
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
        return self._leader.is_factory

    def with_options(self, **options: Any) -> Team:
        """``Agent.with_options`` for a team: the leader's copy gets them too (it is what runs)."""
        changed = copy.copy(self)
        changed._leader = self._leader.with_options(**options)
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
        state = self._leader.start_run(message, ctx, stream_events=stream_events, images=images, files=files).state
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
        leader_run = self._leader.branch_run(
            data, ctx, keep=keep, fork=fork, input=input, regenerated_from=regenerated_from, stream_events=stream_events
        )
        state = leader_run.state
        kept_calls = {te.get("child_run_id") for te in state.tools}
        members_out = [] if fork else [json_copy(m) for m in run_output.get("member_responses") or [] if m.get("run_id") in kept_calls]
        return TeamRun(self, ctx, state, stream_events=stream_events, decisions={}, member_responses=members_out, branched=True)

    def history_runs(self, ctx: RunContext) -> list[dict[str, Any]]:
        return self._leader.history_runs(ctx)

    def run_functions(self, ctx: RunContext) -> dict[str, Function]:
        return self._leader.run_functions(ctx)

    # Used by TeamRun (the leader's AgentRun reads these from its "agent").
    def __repr__(self) -> str:
        return f"<Team id={self.id!r} mode={self.mode!r} members={[m.id for m in self.members]}>"


class TeamRun(AgentRun):
    """One execution (or continuation) of a team: the leader's run loop, with delegations run
    here. Same protocol as ``AgentRun``; ``output`` is a TeamRunOutput dict."""

    def __init__(
        self,
        team: Team,
        ctx: RunContext,
        state: RunState,
        *,
        stream_events: bool = True,
        decisions: dict[str, Any] | None = None,
        member_responses: Sequence[dict[str, Any]] = (),
        continuations: Sequence[tuple[int, Member, AgentRun]] = (),
        branched: bool = False,
    ) -> None:
        self.team = team
        # One slot per member run, in delegation order (None while it has not finished).
        self.member_responses: list[dict[str, Any] | None] = list(member_responses)
        self._continuations = list(continuations)
        self._new_requirements: list[dict[str, Any]] = []
        self._repause = False
        self._branched = branched
        self._tasks: Any = None
        super().__init__(team._leader, ctx, state, stream_events=stream_events, decisions=decisions)
        if team.mode == "tasks":
            self._tasks = TaskBoard.from_state(state)

    # ---- what the caller reads ----------------------------------------------------------------

    @property
    def output(self) -> dict[str, Any]:
        return team_output(self.state.to_dict(), [m for m in self.member_responses if m is not None], self._tasks)

    # ---- events -------------------------------------------------------------------------------

    def _emit(self, event: dict[str, Any]) -> tuple[dict[str, Any], ...]:
        if not (self.stream_events or event["event"] in ESSENTIAL_EVENTS):
            return ()
        return (self._team_event(event),)

    def _team_event(self, event: dict[str, Any]) -> dict[str, Any]:
        """The leader's agent event as AgentOS's team event."""
        out: dict[str, Any] = {}
        for key, value in event.items():
            if key == "event":
                out[key] = value if value.startswith("Team") else f"Team{value}"
            elif key == "agent_id":
                out["team_id"] = value
            elif key == "agent_name":
                out["team_name"] = value
            elif key == "workflow_agent":
                continue
            else:
                out[key] = value
        if out["event"] == "TeamRunCompleted":
            members = [json_copy(m) for m in self.member_responses if m is not None]
            if members:
                out["member_responses"] = members
        return out

    def _task_event(self, name: str, **fields: Any) -> tuple[dict[str, Any], ...]:
        if not self.stream_events:
            return ()
        return (self._team_event(self._events.make(name, **fields)),)

    # ---- the loop's steps, for a team ---------------------------------------------------------

    async def _loop(self) -> AsyncIterator[dict[str, Any]]:
        if self._repause:
            async with aclosing(self._pause([])) as steps:
                async for event in steps:
                    yield event
            return
        if self._stop_content:
            # route: the member answered the user directly (after a member's HITL continue)
            async with aclosing(self._complete()) as steps:
                async for event in steps:
                    yield event
            return
        if self._tasks is not None:
            async with aclosing(tasks_loop(self)) as steps:
                async for event in steps:
                    yield event
            return
        async with aclosing(super()._loop()) as steps:
            async for event in steps:
                yield event

    async def _tool_calls_turn(self, calls: list[Any]) -> AsyncIterator[dict[str, Any]]:
        team_calls = [c for c in calls if self._is_team_tool(c.name)]
        others = [c for c in calls if not self._is_team_tool(c.name)]
        paused: list[dict[str, Any]] = []
        if others:
            async with aclosing(super()._tool_calls_turn(others)) as steps:
                async for event in steps:
                    yield event
            paused = list(self._paused_calls)
        if team_calls:
            self._new_requirements = []
            async with aclosing(self._team_calls(team_calls)) as steps:
                async for event in steps:
                    yield event
            limit = self.agent.tool_call_limit
            if limit is not None and self._tool_calls >= limit:
                self._limit_reached = True
        self._paused_calls = paused
        if self._new_requirements:
            self._repause = True
            # _loop pauses on a non-empty list; member requirements are added in _pause
            self._paused_calls = paused or [_MEMBER_PAUSE]

    def _is_team_tool(self, name: str) -> bool:
        if name in DELEGATION_TOOLS:
            return name in self._functions
        return self._tasks is not None and self._tasks.handles(name)

    async def _team_calls(self, calls: list[Any]) -> AsyncIterator[dict[str, Any]]:
        """Delegation calls of one model turn: every member run starts at once, their events
        are relayed as they come, then each call's result goes back to the leader."""
        limit = self.agent.tool_call_limit
        jobs: list[tuple[dict[str, Any], list[tuple[int, Member]]]] = []
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        tasks: list[asyncio.Task[None]] = []
        try:
            for call in calls:
                await self._check_cancelled()
                self._tool_calls += 1
                args, parse_error = parse_arguments(call.arguments)
                if limit is not None and self._tool_calls > limit:
                    self._tool_message(call.id, call.name, args, TOOL_LIMIT.format(name=call.name), error=True)
                    continue
                if parse_error is not None:
                    self._tool_message(call.id, call.name, args, parse_error, error=True)
                    continue
                te = tool_execution(call.id, call.name, args, int(self.ctx.clock()))
                te["metrics"] = {"start_time": float(self.ctx.clock())}
                self.state.tools.append(te)
                for event in self._emit(self._events.tool_call("ToolCallStarted", te)):
                    yield event
                if self._tasks is not None and call.name != EXECUTE_TASK:
                    async with aclosing(self._tasks.run_tool(self, te)) as steps:
                        async for event in steps:
                            yield event
                    continue
                targets, problem = self._targets(call.name, args, te)
                if problem is not None:
                    self._finish_call(te, problem, error=False)
                    for event in self._call_done(te):
                        yield event
                    continue
                assigned: list[tuple[int, Member]] = []
                for member, task in targets:
                    if call.name == EXECUTE_TASK:
                        for event in self._tasks.started(self, te, member):
                            yield event
                    slot = len(self.member_responses)
                    self.member_responses.append(None)
                    member_ctx = member_context(self.ctx, str(uuid.uuid4()), self.state.session_state, member)
                    member_run = member.start_run(task, member_ctx, stream_events=self.stream_events)
                    member_run.state.parent_run_id = self.state.run_id
                    if call.name in (DELEGATE_ONE, EXECUTE_TASK):
                        te["child_run_id"] = member_run.run_id
                    tasks.append(asyncio.ensure_future(self._member(member_run, slot, queue)))
                    assigned.append((slot, member))
                jobs.append((te, assigned))
        except BaseException:
            await _cancel_all(tasks)
            raise
        async with aclosing(_relayed(tasks, queue)) as relayed:
            async for event in relayed:
                yield event
        for te, assigned in jobs:
            if te["tool_name"] == EXECUTE_TASK:
                for event in self._task_result(te, assigned):
                    yield event
            else:
                self._delegation_result(te, assigned)
            for event in self._call_done(te):
                yield event
        await self._check_cancelled()

    def _targets(self, name: str, args: dict[str, Any], te: dict[str, Any]) -> tuple[list[tuple[Member, str]], str | None]:
        if name == EXECUTE_TASK:
            return self._tasks.targets(self, args)
        task = args.get("task")
        if not isinstance(task, str) or not task.strip():
            return [], "Error: the task to delegate is missing. Give a clear description of the task."
        if name == DELEGATE_ALL:
            return [(m, task) for m in self.team.members], None
        member_id = str(args.get("member_id") or "")
        member = self.team.member_by_id(member_id)
        if member is None:
            return [], (
                f"Member with ID {member_id} not found in the team or any subteams. Please choose the correct member "
                f"from the list of members:\n\n{self.team.members_block()}"
            )
        return [(member, task)], None

    async def _member(self, run: AgentRun, slot: int, queue: asyncio.Queue[dict[str, Any]]) -> None:
        """Drive one member run, relaying its events; a timeout ends it as ERROR."""
        timeout = self.team.member_timeout
        try:
            async with asyncio.timeout(timeout):
                async with aclosing(run._agen) as events:
                    async for event in events:
                        await queue.put(_nested(event))
        except TimeoutError:
            message = f"Member {run.agent.name or run.agent.id} did not finish within {timeout:g} seconds"
            run.state.status = ERROR
            run.state.content = message
            with contextlib.suppress(Exception):
                run._close_timing()
            event = run._events.run_error(message, "timeout")
            if isinstance(run, TeamRun):
                event = run._team_event(event)
            await queue.put(_nested(event))
        finally:
            self.member_responses[slot] = run.output
            self._merge_session_state(run.state.session_state)

    def _merge_session_state(self, changed: Mapping[str, Any]) -> None:
        deep_merge(self.state.session_state, json_copy(dict(changed)))

    def _delegation_result(self, te: dict[str, Any], assigned: list[tuple[int, Member]]) -> None:
        parts: list[str] = []
        error = False
        for slot, member in assigned:
            out = self.member_responses[slot] or {}
            label = member.name or member.id
            text, failed = member_result(out, label)
            if out.get("status") == PAUSED:
                self._propagate_pause(member, out)
            error = error or failed
            parts.append(text if te["tool_name"] != DELEGATE_ALL else f"Agent {label}: {text}")
        result = "\n".join(parts)
        self._finish_call(te, result, error=error)
        if self.team.mode == "route" and assigned and not error:
            out = self.member_responses[assigned[0][0]] or {}
            if out.get("status") == COMPLETED:
                te["stop_after_tool_call"] = True
                self._stop_content.append(result)
                self.state.messages[-1]["stop_after_tool_call"] = True

    def _task_result(self, te: dict[str, Any], assigned: list[tuple[int, Member]]) -> Iterator[dict[str, Any]]:
        """execute_task's member ran: the task board records its answer and words the result."""
        slot, member = assigned[0]
        out = self.member_responses[slot] or {}
        text, failed = member_result(out, member.name or member.id)
        if out.get("status") == PAUSED:
            self._propagate_pause(member, out)
        result, events = self._tasks.finished(self, te, out, text, failed)
        yield from events
        self._finish_call(te, result, error=failed)

    def _finish_call(self, te: dict[str, Any], result: str, *, error: bool) -> None:
        start = (te.get("metrics") or {}).get("start_time", float(self.ctx.clock()))
        end = float(self.ctx.clock())
        te.update(result=result, tool_call_error=error, metrics={"start_time": start, "end_time": end, "duration": end - start})
        self._tool_message(te["tool_call_id"], te["tool_name"], te["tool_args"], result, error=error)

    def _call_done(self, te: dict[str, Any]) -> Iterator[dict[str, Any]]:
        duration = te["metrics"]["duration"]
        summary = f"{call_str(te['tool_name'], te['tool_args'])} completed in {duration:.4f}s. "
        yield from self._emit(self._events.tool_call("ToolCallCompleted", te, content=summary))
        if te["tool_call_error"]:
            yield from self._emit(self._events.tool_call("ToolCallError", te, error=te["result"]))

    def _propagate_pause(self, member: Member, out: dict[str, Any]) -> None:
        """A paused member's open requirements become the team's, naming the member (Agno's
        ``_propagate_member_pause``; a sub-team's already name the agent that paused)."""
        for req in out.get("requirements") or []:
            if not is_pending(req.get("tool_execution") or {}):
                continue
            values = json_copy(req)
            values.setdefault("member_agent_id", member.id)
            values.setdefault("member_agent_name", member.name)
            values.setdefault("member_run_id", out["run_id"])
            ordered = {k: values[k] for k in _REQUIREMENT_KEYS if values.get(k) is not None}
            ordered.update({k: v for k, v in values.items() if k not in ordered and v is not None})
            self._new_requirements.append(ordered)

    async def _pause(self, paused: list[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
        own = [te for te in paused if te is not _MEMBER_PAUSE]
        approval_ids(own)
        requirements = [requirement(te, self.ctx.clock()) for te in own] + self._new_requirements
        self.state.requirements = (self.state.requirements or []) + requirements
        tools = own + [json_copy(r["tool_execution"]) for r in self._new_requirements]
        self.state.status = PAUSED
        self.state.content = paused_content(tools)
        self._close_timing()
        # No TeamRunContentCompleted before the pause: AgentOS's team stream goes from the last
        # tool call (or model request) straight to TeamRunPaused.
        for event in self._emit(self._events.run_paused(tools, requirements)):
            yield event

    async def _apply_decisions(self, decisions: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """Members first (each continues under its own run_id), then the leader's own tools."""
        if self._continuations:
            self._new_requirements = []
            queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
            tasks = [asyncio.ensure_future(self._member(run, slot, queue)) for slot, _, run in self._continuations]
            async with aclosing(_relayed(tasks, queue)) as relayed:
                async for event in relayed:
                    yield event
            for slot, member, run in self._continuations:
                self._resumed_member(slot, member)
            if self._new_requirements:
                self._repause = True
        async with aclosing(super()._apply_decisions(decisions)) as steps:
            async for event in steps:
                yield event
        await self._check_cancelled()

    def _resumed_member(self, slot: int, member: Member) -> None:
        """Put a continued member's answer where its delegation's result said it needed a human."""
        out = self.member_responses[slot] or {}
        run_id = out.get("run_id")
        label = member.name or member.id
        # The member's requirements were handed to it and are answered in its own run (in
        # member_responses): the team keeps only its own and any the member raises again, as Agno.
        # A sub-team's name the run that paused inside it.
        handed = _run_ids(out)
        self.state.requirements = [req for req in self.state.requirements or [] if req.get("member_run_id") not in handed]
        if out.get("status") == PAUSED:
            self._propagate_pause(member, out)
            return
        text, failed = member_result(out, label)
        for te in self.state.tools:
            if te["tool_name"] == DELEGATE_ONE and te.get("child_run_id") == run_id:
                new = text
            elif te["tool_name"] == DELEGATE_ALL and f"Agent {label}: {_paused_text(label)}" in (te.get("result") or ""):
                new = te["result"].replace(f"Agent {label}: {_paused_text(label)}", f"Agent {label}: {text}")
            elif te["tool_name"] == EXECUTE_TASK and te.get("child_run_id") == run_id:
                new = self._tasks.member_resumed(te, text, failed)
            else:
                continue
            te.update(result=new, tool_call_error=failed)
            for message in self.state.messages:
                if message.get("role") == "tool" and message.get("tool_call_id") == te["tool_call_id"]:
                    message["content"] = new
                    message["tool_call_error"] = failed
            if self.team.mode == "route" and not failed and out.get("status") == COMPLETED:
                te["stop_after_tool_call"] = True
                self._stop_content.append(new)


_MEMBER_PAUSE: dict[str, Any] = {"tool_call_id": "", "member_pause": True}


def _paused_text(label: str) -> str:
    return f"Member '{label}' {NEEDS_HUMAN}"


def member_result(out: Mapping[str, Any], label: str) -> tuple[str, bool]:
    """What the leader is told of a member's run, and whether that is a failure."""
    status = out.get("status")
    if status == PAUSED:
        return _paused_text(label), False
    if status == ERROR:
        return f"Member {label} failed: {out.get('content') or 'unknown error'}", True
    if status == CANCELLED:
        return f"Member {label} was cancelled.", True
    content = out.get("content")
    if content is None and not out.get("tools"):
        return "No response from the member agent.", False
    if isinstance(content, str):
        if content.strip():
            return content.strip(), False
        return ",".join(str(t.get("result")) for t in out.get("tools") or [] if t.get("result")), False
    return json.dumps(content, indent=2, ensure_ascii=False, default=str), False


def member_context(ctx: RunContext, run_id: str, session_state: Mapping[str, Any], member: Member) -> RunContext:
    """A member's run context: the team's session, user, cancellation, clock and stores, a copy
    of the team's session state, and the member's own earlier runs of this session as history."""
    return RunContext(
        run_id=run_id,
        session_id=ctx.session_id,
        user_id=ctx.user_id,
        history=member_history(ctx.history, member.id),
        memories=list(ctx.memories),
        # The leader's task board is not the member's (a sub-team in tasks mode keeps its own).
        session_state={k: json_copy(v) for k, v in session_state.items() if k != TASKS_STATE_KEY},
        session_summary=None,
        memory_store=ctx.memory_store,
        past_sessions=ctx.past_sessions,
        retriever=ctx.retriever,
        knowledge_filters=ctx.knowledge_filters,
        is_cancelled=ctx.is_cancelled,
        clock=ctx.clock,
        sleep=ctx.sleep,
        dependencies=ctx.dependencies,
        metadata=ctx.metadata,
        incremental=ctx.incremental,
        principal=ctx.principal,
    )


def member_history(history: Sequence[Mapping[str, Any]], member_id: str) -> list[dict[str, Any]]:
    """A member's runs inside earlier team runs (``member_responses``, recursively), oldest first."""
    found: list[dict[str, Any]] = []

    def walk(runs: Sequence[Mapping[str, Any]]) -> None:
        for run in runs:
            if (run.get("agent_id") or run.get("team_id")) == member_id and run.get("status") == COMPLETED:
                found.append(dict(run))
            walk(run.get("member_responses") or [])

    for team_run in history:
        walk(team_run.get("member_responses") or [])
    return found


def pending_call_ids(out: Mapping[str, Any]) -> list[str]:
    """The tool_call_ids a paused run (agent or team) waits on, from its requirements."""
    ids = []
    for req in out.get("requirements") or []:
        te = req.get("tool_execution") or {}
        if is_pending(te) and te.get("tool_call_id"):
            ids.append(te["tool_call_id"])
    if not ids:
        ids = [te["tool_call_id"] for te in out.get("tools") or [] if is_pending(te)]
    return ids


def agent_shaped(output: Mapping[str, Any]) -> dict[str, Any]:
    data = {("agent_id" if k == "team_id" else "agent_name" if k == "team_name" else k): v for k, v in output.items()}
    data.pop("member_responses", None)
    data.pop("tasks", None)
    return data


def leader_state(output: Mapping[str, Any]) -> RunState:
    return RunState.from_dict(agent_shaped(output))


def team_output(leader: dict[str, Any], members: list[dict[str, Any]], tasks: Any = None) -> dict[str, Any]:
    """The TeamRunOutput dict: the leader's RunOutput with team_id/team_name, plus members."""
    out: dict[str, Any] = {}
    for key, value in leader.items():
        if key == "agent_id":
            out["team_id"] = value
        elif key == "agent_name":
            out["team_name"] = value
        else:
            out[key] = value
        if key == "messages" and members:
            out["member_responses"] = json_copy(members)
    if members and "member_responses" not in out:
        out["member_responses"] = json_copy(members)
    if tasks is not None and tasks.tasks:
        out["tasks"] = tasks.to_list()
    return out


def _nested(event: dict[str, Any]) -> dict[str, Any]:
    return {**event, "nested_depth": int(event.get("nested_depth") or 0) + 1}


def deep_merge(into: dict[str, Any], changed: Mapping[str, Any]) -> None:
    for key, value in changed.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            deep_merge(into[key], value)
        else:
            into[key] = value


async def _merged(tasks: list[asyncio.Task[None]], queue: asyncio.Queue[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    """Events from the queue until every task is done and the queue is empty."""
    pending = {t for t in tasks if not t.done()}
    while pending or not queue.empty():
        if not queue.empty():
            yield queue.get_nowait()
            continue
        getter = asyncio.ensure_future(queue.get())
        try:
            done, _ = await asyncio.wait(pending | {getter}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            getter.cancel()
            raise
        # Only member tasks stay pending: a getter left in the set would be "done" for ever
        # once cancelled, and the loop would spin.
        pending -= done
        if getter in done:
            yield getter.result()
        else:
            # A cancelled Queue.get leaves its item in the queue for the next turn.
            getter.cancel()


async def _relayed(tasks: list[asyncio.Task[None]], queue: asyncio.Queue[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    """The member runs' events as they come, until all have ended; the members still going are
    stopped if the team run is closed or fails meanwhile. A member run that raised (a bug in it,
    never a provider failure: those end the member's run as ERROR) raises here."""
    try:
        async with aclosing(_merged(tasks, queue)) as relayed:
            async for event in relayed:
                yield event
    finally:
        await _cancel_all(tasks)
    for task in tasks:
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()


async def _cancel_all(tasks: list[asyncio.Task[None]]) -> None:
    """Stop member runs still going (the team run was closed or failed): each closes its stream."""
    for task in tasks:
        if not task.done():
            task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


def _run_ids(out: Mapping[str, Any]) -> set[str]:
    """The run ids of a member's output and of the runs inside it (a sub-team's members)."""
    ids = {out["run_id"]} if out.get("run_id") else set()
    for inner in out.get("member_responses") or []:
        ids |= _run_ids(inner)
    return ids
