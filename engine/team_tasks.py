"""Tasks mode (Agno's ``TeamMode.tasks``): the leader keeps a task board and works it.

The leader's tools are ``create_task``, ``update_task``, ``execute_task`` (the task goes to a
member like a delegation; the member's answer becomes the task's result), ``list_tasks`` and
``mark_all_complete``. ``tasks_loop`` runs one leader model turn per iteration, with its tool
calls, and ends when:

* the leader calls ``mark_all_complete``: one more model turn, with tools off, gives the answer
  (the completion summary when that turn says nothing);
* a turn calls no tool: the leader answered directly (a greeting needs no tasks);
* ``max_iterations`` iterations ran: the run completes with what it has, and its content says
  that the limit was reached, followed by the board;
* a member or a leader tool pauses for a human: the team pauses, and a continue goes on counting.

The board lives in the run's session state under ``_team_tasks`` (as Agno's), so a paused run
keeps it, and a later run of the session sees the earlier tasks; the goal flag and the iteration
count belong to one run and start afresh when another run picks the board up. Task ids are
``task-1``, ``task-2`` ... (stable and readable for the model; tasks are never deleted).

Events (AgentOS's, leader-level, only with ``stream_events``): ``TeamTaskIterationStarted`` /
``TeamTaskIterationCompleted`` around each iteration, ``TeamTaskCreated`` and ``TeamTaskUpdated``
as tools change tasks, and ``TeamTaskStateUpdated`` (the whole board) at the end of an iteration
that changed it.
"""
from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.output import COMPLETED, ERROR, PAUSED

if TYPE_CHECKING:
    from engine.team import Member
    from engine.team_run import TeamRun

STATE_KEY = "_team_tasks"
STATUSES = ("pending", "in_progress", "completed", "failed", "blocked")
TERMINAL = frozenset({"completed", "failed"})
# The leader's task tools the team run carries out itself (execute_task runs a member).
BOARD_TOOLS = frozenset({"create_task", "update_task", "list_tasks", "mark_all_complete"})
TASK_TOOLS = BOARD_TOOLS | {"execute_task"}
REFUSED_AFTER_GOAL = "Not executed: the goal is already marked complete. Answer the user now."


def create_task(title: str, description: str = "", assignee: str = "", depends_on: list[str] | None = None) -> str:
    """Create a new task for the team to work on.

    Args:
        title: A short, actionable title for the task.
        description: What needs to be done, in enough detail for the member who does it.
        assignee: The member_id to assign this task to.
        depends_on: IDs of tasks that must be completed before this one can start.
    """
    raise RuntimeError("task tools are run by the team run, not called")


def update_task(task_id: str, status: str, result: str | None = None) -> str:
    """Update the status of a task; use it to record tasks you handled yourself.

    Args:
        task_id: The ID of the task to update.
        status: The new status: pending, in_progress, completed or failed.
        result: The result or outcome of the task (when completing it).
    """
    raise RuntimeError("task tools are run by the team run, not called")


def execute_task(task_id: str, member_id: str) -> str:
    """Execute a task by delegating it to a team member, who receives the task's description;
    the member's answer is stored as the task's result.

    Args:
        task_id: The ID of the task to execute.
        member_id: The ID of the member to execute the task.
    """
    raise RuntimeError("task tools are run by the team run, not called")


def list_tasks() -> str:
    """List all tasks with their status, assignee, dependencies and results."""
    raise RuntimeError("task tools are run by the team run, not called")


def mark_all_complete(summary: str) -> str:
    """Signal that the overall goal has been achieved. Call this when all tasks are done.

    Args:
        summary: A summary of the work done and the final outcome.
    """
    raise RuntimeError("task tools are run by the team run, not called")


def task_tools() -> list[Callable[..., str]]:
    return [create_task, update_task, execute_task, list_tasks, mark_all_complete]


@dataclass
class Task:
    id: str
    title: str
    description: str = ""
    status: str = "pending"
    assignee: str | None = None
    dependencies: list[str] = field(default_factory=list)
    result: str | None = None
    created_at: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "title": self.title, "description": self.description, "status": self.status,
            "assignee": self.assignee, "dependencies": list(self.dependencies), "result": self.result,
            "created_at": self.created_at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Task:
        return cls(
            id=str(data.get("id") or ""), title=str(data.get("title") or ""), description=str(data.get("description") or ""),
            status=str(data.get("status") or "pending"), assignee=data.get("assignee"),
            dependencies=[str(d) for d in data.get("dependencies") or []], result=data.get("result"),
            created_at=int(data.get("created_at") or 0),
        )


class TaskBoard:
    """The leader's task list for one team run, written through to ``state.session_state``."""

    def __init__(self, session_state: dict[str, Any], run_id: str) -> None:
        self._session_state = session_state
        stored = session_state.get(STATE_KEY) or {}
        self.tasks: list[Task] = [Task.from_dict(t) for t in stored.get("tasks") or []]
        same_run = stored.get("run_id") == run_id
        self.run_id = run_id
        self.goal_complete: bool = bool(stored.get("goal_complete")) and same_run
        self.completion_summary: str | None = stored.get("completion_summary") if same_run else None
        self.iteration: int = int(stored.get("iteration") or 0) if same_run else 0
        # execute_task calls in flight: tool_call_id -> the task's status before it started
        self._executing: dict[str, str] = {}
        self.changed = False
        self._refresh_blocked()

    @classmethod
    def from_state(cls, state: Any) -> TaskBoard:
        return cls(state.session_state, state.run_id)

    # ---- what TeamRun and team_output read ----------------------------------------------------

    def handles(self, name: str) -> bool:
        return name in TASK_TOOLS

    def to_list(self) -> list[dict[str, Any]]:
        return [t.to_dict() for t in self.tasks]

    def summary(self) -> str:
        """The board as text (Agno's ``get_summary_string`` shape), for the leader and events."""
        if not self.tasks:
            return "No tasks created yet."
        counts: dict[str, int] = {}
        for task in self.tasks:
            counts[task.status] = counts.get(task.status, 0) + 1
        lines = [f"Tasks ({len(self.tasks)} total: {', '.join(f'{n} {s}' for s, n in counts.items())}):"]
        for task in self.tasks:
            assignee = f" (assigned: {task.assignee})" if task.assignee else " (unassigned)"
            lines.append(f"  [{task.id}] {task.title} - {task.status.upper()}{assignee}")
            if task.dependencies:
                lines.append(f"      Depends on: {', '.join(task.dependencies)}")
            if task.result:
                preview = task.result if len(task.result) <= 200 else task.result[:200] + "..."
                lines.append(f"      Result: {preview}")
        if self.goal_complete and self.completion_summary:
            lines.append(f"\nGoal marked complete: {self.completion_summary}")
        return "\n".join(lines)

    def save(self) -> None:
        """Write the board into the session state, after every change, so that whatever ends
        the run (a pause, a cancel, the limit) leaves it there. Members never get it
        (``team_members.member_context``), so merging their session state back cannot undo a change."""
        self._session_state[STATE_KEY] = {
            "tasks": self.to_list(), "goal_complete": self.goal_complete, "completion_summary": self.completion_summary,
            "run_id": self.run_id, "iteration": self.iteration,
        }

    def get(self, task_id: Any) -> Task | None:
        return next((t for t in self.tasks if t.id == str(task_id or "").strip()), None)

    # ---- the board tools ----------------------------------------------------------------------

    async def run_tool(self, run: TeamRun, te: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """Carry out create_task / update_task / list_tasks / mark_all_complete for the leader."""
        args = te.get("tool_args") or {}
        name = te["tool_name"]
        events: list[dict[str, Any]] = []
        if name == "create_task":
            result = self._create(run, args, events)
        elif name == "update_task":
            result = self._update(run, args, events)
        elif name == "mark_all_complete":
            self.goal_complete = True
            self.completion_summary = str(args.get("summary") or "").strip() or None
            self.changed = True
            result = f"Goal marked as complete. Summary: {self.completion_summary or ''}".rstrip()
        else:
            result = self.summary()
        self.save()
        for event in events:
            yield event
        run.finish_call(te, result, error=False)
        for event in run.call_done(te):
            yield event

    def _create(self, run: TeamRun, args: Mapping[str, Any], events: list[dict[str, Any]]) -> str:
        title = str(args.get("title") or "").strip()
        if not title:
            return "Error: a task needs a title."
        for task in self.tasks:
            if task.title.lower() == title.lower() and task.status not in TERMINAL:
                return f"Task already exists: [{task.id}] {task.title} (status: {task.status}). Use it instead of creating a duplicate."
        depends_on = args.get("depends_on") or []
        if isinstance(depends_on, str):
            depends_on = [depends_on]
        task = Task(
            id=f"task-{len(self.tasks) + 1}", title=title, description=str(args.get("description") or "").strip(),
            assignee=str(args.get("assignee") or "").strip() or None, dependencies=[str(d) for d in depends_on],
            created_at=int(run.ctx.clock()),
        )
        self.tasks.append(task)
        self._refresh_blocked()
        self.changed = True
        events.extend(run.task_event(
            "TeamTaskCreated", task_id=task.id, title=task.title, description=task.description, assignee=task.assignee,
            status=task.status, dependencies=list(task.dependencies),
        ))
        return f"Task created: [{task.id}] {task.title} (status: {task.status})"

    def _update(self, run: TeamRun, args: Mapping[str, Any], events: list[dict[str, Any]]) -> str:
        status = str(args.get("status") or "").strip()
        if status not in STATUSES or status == "blocked":
            return f"Invalid status '{status}'. Must be one of: pending, in_progress, completed, failed."
        task = self.get(args.get("task_id"))
        if task is None:
            return f"Error: task with ID '{args.get('task_id')}' not found.\n{self.summary()}"
        previous = task.status
        task.status = status
        if args.get("result") is not None:
            task.result = str(args["result"])
        self._refresh_blocked()
        self.changed = True
        events.extend(self._updated_event(run, task, previous))
        return f"Task [{task.id}] '{task.title}' updated to {task.status}."

    # ---- execute_task: a delegation whose result lands on the task ----------------------------

    def targets(self, run: TeamRun, args: Mapping[str, Any]) -> tuple[list[tuple[Member, str]], str | None]:
        """The member that executes the task and what it is told, or the leader's error text."""
        task = self.get(args.get("task_id"))
        if task is None:
            return [], f"Error: task with ID '{args.get('task_id')}' not found.\n{self.summary()}"
        if task.status not in ("pending", "in_progress"):
            return [], f"Error: task [{task.id}] is {task.status} and cannot be executed."
        member_id = str(args.get("member_id") or task.assignee or "")
        member = run.team.member_by_id(member_id)
        if member is None:
            return [], (
                f"Error: member with ID {member_id} not found in the team. Choose a member from the list:\n\n"
                f"{run.team.members_block()}"
            )
        return [(member, task.description or task.title)], None

    def started(self, run: TeamRun, te: dict[str, Any], member: Member) -> Iterator[dict[str, Any]]:
        task = self.get((te.get("tool_args") or {}).get("task_id"))
        assert task is not None  # targets() found it
        self._executing[te["tool_call_id"]] = task.status
        previous = task.status
        task.status = "in_progress"
        task.assignee = member.id
        self.changed = True
        self.save()
        yield from self._updated_event(run, task, previous, with_result=False)

    def finished(self, run: TeamRun, te: dict[str, Any], out: Mapping[str, Any], text: str, failed: bool) -> tuple[str, Iterator[dict[str, Any]]]:
        """The member ran: its answer becomes the task's result; returns the leader's tool result."""
        task = self.get((te.get("tool_args") or {}).get("task_id"))
        assert task is not None
        self._executing.pop(te["tool_call_id"], None)
        self.changed = True
        if out.get("status") == PAUSED:
            # Back to pending: the member's continue finishes it (member_resumed).
            task.status = "pending"
            self.save()
            return f"{text} Task [{task.id}] paused.", iter(())
        self._record(task, text, failed, out.get("status"))
        self.save()
        return self._result_text(task), self._updated_event(run, task, "in_progress")

    def member_resumed(self, te: dict[str, Any], text: str, failed: bool) -> str:
        """A member paused inside execute_task was continued: its answer goes on the task;
        returns the leader's tool result."""
        task = self.get((te.get("tool_args") or {}).get("task_id"))
        if task is None:
            return text
        self._record(task, text, failed, ERROR if failed else COMPLETED)
        self.changed = True
        self.save()
        return self._result_text(task)

    def _record(self, task: Task, text: str, failed: bool, status: Any) -> None:
        task.status = "failed" if failed or status == ERROR else "completed"
        task.result = text
        self._refresh_blocked()

    @staticmethod
    def _result_text(task: Task) -> str:
        if task.status == "failed":
            return f"Task [{task.id}] failed: {task.result}"
        return f"Task [{task.id}] completed. Result: {task.result}"

    def _updated_event(self, run: TeamRun, task: Task, previous: str, *, with_result: bool = True) -> Iterator[dict[str, Any]]:
        result = task.result if with_result and task.status in TERMINAL else None
        yield from run.task_event(
            "TeamTaskUpdated", task_id=task.id, title=task.title, status=task.status, previous_status=previous,
            result=result, assignee=task.assignee,
        )

    def _refresh_blocked(self) -> None:
        """Pending tasks with unfinished dependencies are blocked, and unblocked when those
        complete; a task whose dependency failed fails too (so the board can finish)."""
        by_id = {t.id: t for t in self.tasks}
        for task in self.tasks:
            if task.status not in ("pending", "blocked") or not task.dependencies:
                continue
            deps = [by_id.get(d) for d in task.dependencies]
            if any(d is not None and d.status == "failed" for d in deps):
                task.status = "failed"
                task.result = "Automatically failed: a dependency failed."
            elif all(d is not None and d.status == "completed" for d in deps):
                task.status = "pending"
            else:
                task.status = "blocked"

    def state_event(self, run: TeamRun) -> Iterator[dict[str, Any]]:
        yield from run.task_event(
            "TeamTaskStateUpdated", task_summary=self.summary(), goal_complete=self.goal_complete, tasks=self.to_list(),
            completion_summary=self.completion_summary,
        )


async def tasks_loop(run: TeamRun) -> AsyncIterator[dict[str, Any]]:
    """The tasks-mode run loop, in place of the agent loop (which runs model turns until the
    model stops calling tools): one leader model turn, with its tool calls, per iteration."""
    board: TaskBoard = run.member_tasks
    limit = run.team.max_iterations
    while not board.goal_complete and board.iteration < limit:
        await run.check_cancelled()
        board.iteration += 1
        board.changed = False
        board.save()
        for event in run.task_event("TeamTaskIterationStarted", iteration=board.iteration, max_iterations=limit, task_summary=board.summary()):
            yield event
        async with aclosing(run.model_turn()) as steps:
            async for event in steps:
                yield event
        calls = run.turn_calls
        if calls:
            async with aclosing(run.tool_calls_turn(calls)) as steps:
                async for event in steps:
                    yield event
        board.save()
        if board.changed:
            for event in board.state_event(run):
                yield event
        for event in run.task_event("TeamTaskIterationCompleted", iteration=board.iteration, max_iterations=limit, task_summary=board.summary()):
            yield event
        if run.paused_calls:
            async with aclosing(run.pause_for(run.paused_calls)) as steps:
                async for event in steps:
                    yield event
            return
        if not calls:
            # The leader answered without (more) tasks.
            async with aclosing(run.complete_run()) as steps:
                async for event in steps:
                    yield event
            return
    if board.goal_complete:
        async with aclosing(_answer(run, board)) as steps:
            async for event in steps:
                yield event
    else:
        run.stop_content.append(_limit_text(run, board))
    async with aclosing(run.complete_run()) as steps:
        async for event in steps:
            yield event


async def _answer(run: TeamRun, board: TaskBoard) -> AsyncIterator[dict[str, Any]]:
    """The leader's closing turn after mark_all_complete, with tools off."""
    await run.check_cancelled()
    run.limit_reached = True  # tool_choice "none"
    before = len(run.content_chunks)
    async with aclosing(run.model_turn()) as steps:
        async for event in steps:
            yield event
    for call in run.turn_calls:
        # A model that ignores tool_choice "none": its calls are answered, never run.
        run.tool_message(call.id, call.name, {}, REFUSED_AFTER_GOAL, error=True)
    if not "".join(run.content_chunks[before:]).strip():
        run.stop_content.append(board.completion_summary or board.summary())


def _limit_text(run: TeamRun, board: TaskBoard) -> str:
    said = run.last_text.strip()
    note = (
        f"The team stopped after {board.iteration} iteration{'s' if board.iteration != 1 else ''} "
        f"(max_iterations) before the goal was marked complete.\n\n{board.summary()}"
    )
    return f"{said}\n\n{note}" if said else note
