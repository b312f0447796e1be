"""``TeamRun``: one execution (or continuation) of a team, and the delegation tools it carries out.

A ``TeamRun`` is an ``AgentRun`` of the team's leader (the one run loop) that runs the leader's
delegation calls itself: the members' runs go concurrently, their events are relayed live
(``nested_depth`` + 1, ``parent_run_id`` = the team run), and the leader's own events are renamed
to AgentOS's team events (``TeamRunStarted`` ..., ``team_id`` / ``team_name`` instead of
``agent_id`` / ``agent_name``). The modes, and what a member's failure, timeout or pause does,
are described in ``engine/team.py``.
"""
from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from engine.ids import new_id
from engine.calls import call_str, parse_arguments
from engine.child_runs import cancel_all, concurrent_events, deep_merge
from engine.context import RunContext
from engine.events import ESSENTIAL_EVENTS
from engine.hitl import approval_ids, is_pending
from engine.hooks import child_hooks
from engine.output import COMPLETED, ERROR, PAUSED, RunState, json_copy, paused_content, requirement, tool_execution
from engine.runner import TOOL_LIMIT, AgentRun
from engine.team_members import member_context, member_result, paused_member_text, team_output
from engine.team_tasks import TaskBoard, tasks_loop

if TYPE_CHECKING:
    from engine.team import Member, Team

DELEGATE_ONE = "delegate_task_to_member"
DELEGATE_ALL = "delegate_task_to_members"
DELEGATION_TOOLS = frozenset({DELEGATE_ONE, DELEGATE_ALL})
EXECUTE_TASK = "execute_task"  # tasks mode's delegation (engine/team_tasks.py)
# Requirement keys in Agno's RunRequirement.to_dict order.
_REQUIREMENT_KEYS = (
    "id", "created_at", "confirmation", "confirmation_note", "external_execution_result", "member_agent_id",
    "member_agent_name", "member_run_id", "tool_execution", "user_input_schema", "user_feedback_schema",
)


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
    ) -> None:
        self.team = team
        # One slot per member run, in delegation order (None while it has not finished).
        self.member_responses: list[dict[str, Any] | None] = list(member_responses)
        self._continuations = list(continuations)
        self._new_requirements: list[dict[str, Any]] = []
        self._repause = False
        self.member_tasks: Any = None
        super().__init__(team.leader, ctx, state, stream_events=stream_events, decisions=decisions)
        if team.mode == "tasks":
            self.member_tasks = TaskBoard.from_state(state)

    # ---- what the caller reads ----------------------------------------------------------------

    @property
    def output(self) -> dict[str, Any]:
        return team_output(self.state.to_dict(), [m for m in self.member_responses if m is not None], self.member_tasks)

    # ---- events -------------------------------------------------------------------------------

    def emit(self, event: dict[str, Any]) -> tuple[dict[str, Any], ...]:
        if not (self.stream_events or event["event"] in ESSENTIAL_EVENTS):
            return ()
        return (self.team_event(event),)

    def team_event(self, event: dict[str, Any]) -> dict[str, Any]:
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

    def task_event(self, name: str, **fields: Any) -> tuple[dict[str, Any], ...]:
        if not self.stream_events:
            return ()
        return (self.team_event(self.event_factory.make(name, **fields)),)

    # ---- the loop's steps, for a team ---------------------------------------------------------

    async def _loop(self) -> AsyncIterator[dict[str, Any]]:
        if self._repause:
            async with aclosing(self.pause_for([])) as steps:
                async for event in steps:
                    yield event
            return
        if self.stop_content:
            # route: the member answered the user directly (after a member's HITL continue)
            async with aclosing(self.complete_run()) as steps:
                async for event in steps:
                    yield event
            return
        if self.member_tasks is not None:
            async with aclosing(tasks_loop(self)) as steps:
                async for event in steps:
                    yield event
            return
        async with aclosing(super()._loop()) as steps:
            async for event in steps:
                yield event

    async def tool_calls_turn(self, calls: list[Any]) -> AsyncIterator[dict[str, Any]]:
        team_calls = [c for c in calls if self._is_team_tool(c.name)]
        others = [c for c in calls if not self._is_team_tool(c.name)]
        paused: list[dict[str, Any]] = []
        if others:
            async with aclosing(super().tool_calls_turn(others)) as steps:
                async for event in steps:
                    yield event
            paused = list(self.paused_calls)
        if team_calls:
            self._new_requirements = []
            async with aclosing(self._team_calls(team_calls)) as steps:
                async for event in steps:
                    yield event
            limit = self.agent.tool_call_limit
            if limit is not None and self._tool_calls >= limit:
                self.limit_reached = True
        self.paused_calls = paused
        if self._new_requirements:
            self._repause = True
            # _loop pauses on a non-empty list; member requirements are added in _pause
            self.paused_calls = paused or [_MEMBER_PAUSE]

    def _is_team_tool(self, name: str) -> bool:
        if name in DELEGATION_TOOLS:
            return name in self._functions
        return self.member_tasks is not None and self.member_tasks.handles(name)

    async def _team_calls(self, calls: list[Any]) -> AsyncIterator[dict[str, Any]]:
        """Delegation calls of one model turn: every member run starts at once, their events
        are relayed as they come, then each call's result goes back to the leader."""
        limit = self.agent.tool_call_limit
        jobs: list[tuple[dict[str, Any], list[tuple[int, Member]]]] = []
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        tasks: list[asyncio.Task[None]] = []
        try:
            for call in calls:
                await self.check_cancelled()
                self._tool_calls += 1
                args, parse_error = parse_arguments(call.arguments)
                if limit is not None and self._tool_calls > limit:
                    self.tool_message(call.id, call.name, args, TOOL_LIMIT.format(name=call.name), error=True)
                    continue
                if parse_error is not None:
                    self.tool_message(call.id, call.name, args, parse_error, error=True)
                    continue
                te = tool_execution(call.id, call.name, args, int(self.ctx.clock()))
                te["metrics"] = {"start_time": float(self.ctx.clock())}
                self.state.tools.append(te)
                for event in self.emit(self.event_factory.tool_call("ToolCallStarted", te)):
                    yield event
                if self.member_tasks is not None and call.name != EXECUTE_TASK:
                    async with aclosing(self.member_tasks.run_tool(self, te)) as steps:
                        async for event in steps:
                            yield event
                    continue
                targets, problem = self._targets(call.name, args, te)
                if problem is not None:
                    self.finish_call(te, problem, error=False)
                    for event in self.call_done(te):
                        yield event
                    continue
                assigned: list[tuple[int, Member]] = []
                for member, task in targets:
                    if call.name == EXECUTE_TASK:
                        for event in self.member_tasks.started(self, te, member):
                            yield event
                    slot = len(self.member_responses)
                    self.member_responses.append(None)
                    member_ctx = member_context(self.ctx, new_id(), self.state.session_state, member)
                    member_run = member.start_run(task, member_ctx, stream_events=self.stream_events)
                    member_run.state.parent_run_id = self.state.run_id
                    if call.name in (DELEGATE_ONE, EXECUTE_TASK):
                        te["child_run_id"] = member_run.run_id
                    tasks.append(asyncio.ensure_future(self._member(member_run, slot, queue)))
                    assigned.append((slot, member))
                jobs.append((te, assigned))
        except BaseException:
            await cancel_all(tasks)
            raise
        async with aclosing(concurrent_events(tasks, queue)) as relayed:
            async for event in relayed:
                yield event
        for te, assigned in jobs:
            if te["tool_name"] == EXECUTE_TASK:
                for event in self._task_result(te, assigned):
                    yield event
            else:
                self._delegation_result(te, assigned)
            for event in self.call_done(te):
                yield event
        await self.check_cancelled()

    def _targets(self, name: str, args: dict[str, Any], te: dict[str, Any]) -> tuple[list[tuple[Member, str]], str | None]:
        if name == EXECUTE_TASK:
            return self.member_tasks.targets(self, args)
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
                async with aclosing(run.agen) as events:
                    async for event in events:
                        await queue.put(_nested(event))
        except TimeoutError:
            message = f"Member {run.agent.name or run.agent.id} did not finish within {timeout:g} seconds"
            run.state.status = ERROR
            run.state.content = message
            with contextlib.suppress(Exception):
                run.close_timing()
            event = run.event_factory.run_error(message, "timeout")
            if isinstance(run, TeamRun):
                event = run.team_event(event)
            await queue.put(_nested(event))
        finally:
            self.member_responses[slot] = run.output
            self._merge_session_state(run.state.session_state)
            self.child_background_hooks.extend(child_hooks(run))

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
        self.finish_call(te, result, error=error)
        if self.team.mode == "route" and assigned and not error:
            out = self.member_responses[assigned[0][0]] or {}
            if out.get("status") == COMPLETED:
                te["stop_after_tool_call"] = True
                self.stop_content.append(result)
                self.state.messages[-1]["stop_after_tool_call"] = True

    def _task_result(self, te: dict[str, Any], assigned: list[tuple[int, Member]]) -> Iterator[dict[str, Any]]:
        """execute_task's member ran: the task board records its answer and words the result."""
        slot, member = assigned[0]
        out = self.member_responses[slot] or {}
        text, failed = member_result(out, member.name or member.id)
        if out.get("status") == PAUSED:
            self._propagate_pause(member, out)
        result, events = self.member_tasks.finished(self, te, out, text, failed)
        yield from events
        self.finish_call(te, result, error=failed)

    def finish_call(self, te: dict[str, Any], result: str, *, error: bool) -> None:
        start = (te.get("metrics") or {}).get("start_time", float(self.ctx.clock()))
        end = float(self.ctx.clock())
        te.update(result=result, tool_call_error=error, metrics={"start_time": start, "end_time": end, "duration": end - start})
        self.tool_message(te["tool_call_id"], te["tool_name"], te["tool_args"], result, error=error)

    def call_done(self, te: dict[str, Any]) -> Iterator[dict[str, Any]]:
        duration = te["metrics"]["duration"]
        summary = f"{call_str(te['tool_name'], te['tool_args'])} completed in {duration:.4f}s. "
        yield from self.emit(self.event_factory.tool_call("ToolCallCompleted", te, content=summary))
        if te["tool_call_error"]:
            yield from self.emit(self.event_factory.tool_call("ToolCallError", te, error=te["result"]))

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

    async def pause_for(self, paused: list[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
        own = [te for te in paused if te is not _MEMBER_PAUSE]
        approval_ids(own)
        requirements = [requirement(te, self.ctx.clock()) for te in own] + self._new_requirements
        self.state.requirements = (self.state.requirements or []) + requirements
        tools = own + [json_copy(r["tool_execution"]) for r in self._new_requirements]
        self.state.status = PAUSED
        self.state.content = paused_content(tools)
        self.close_timing()
        # No TeamRunContentCompleted before the pause: AgentOS's team stream goes from the last
        # tool call (or model request) straight to TeamRunPaused.
        for event in self.emit(self.event_factory.run_paused(tools, requirements)):
            yield event

    async def _apply_decisions(self, decisions: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """Members first (each continues under its own run_id), then the leader's own tools."""
        if self._continuations:
            self._new_requirements = []
            queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
            tasks = [asyncio.ensure_future(self._member(run, slot, queue)) for slot, _, run in self._continuations]
            async with aclosing(concurrent_events(tasks, queue)) as relayed:
                async for event in relayed:
                    yield event
            for slot, member, run in self._continuations:
                self._resumed_member(slot, member)
            if self._new_requirements:
                self._repause = True
        async with aclosing(super()._apply_decisions(decisions)) as steps:
            async for event in steps:
                yield event
        await self.check_cancelled()

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
            elif te["tool_name"] == DELEGATE_ALL and f"Agent {label}: {paused_member_text(label)}" in (te.get("result") or ""):
                new = te["result"].replace(f"Agent {label}: {paused_member_text(label)}", f"Agent {label}: {text}")
            elif te["tool_name"] == EXECUTE_TASK and te.get("child_run_id") == run_id:
                new = self.member_tasks.member_resumed(te, text, failed)
            else:
                continue
            te.update(result=new, tool_call_error=failed)
            for message in self.state.messages:
                if message.get("role") == "tool" and message.get("tool_call_id") == te["tool_call_id"]:
                    message["content"] = new
                    message["tool_call_error"] = failed
            if self.team.mode == "route" and not failed and out.get("status") == COMPLETED:
                te["stop_after_tool_call"] = True
                self.stop_content.append(new)


_MEMBER_PAUSE: dict[str, Any] = {"tool_call_id": "", "member_pause": True}


def _nested(event: dict[str, Any]) -> dict[str, Any]:
    return {**event, "nested_depth": int(event.get("nested_depth") or 0) + 1}


def _run_ids(out: Mapping[str, Any]) -> set[str]:
    """The run ids of a member's output and of the runs inside it (a sub-team's members)."""
    ids = {out["run_id"]} if out.get("run_id") else set()
    for inner in out.get("member_responses") or []:
        ids |= _run_ids(inner)
    return ids
