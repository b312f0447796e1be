"""A team's members as its run sees them: the context a member runs in (its history included),
what the leader is told of a member's run, the calls a paused member waits on, and the
TeamRunOutput dict the members' outputs join (and the leader's RunOutput read back from it).
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from engine.context import RunContext
from engine.hitl import is_pending
from engine.output import CANCELLED, COMPLETED, ERROR, PAUSED, RunState, json_copy
from engine.team_tasks import STATE_KEY as TASKS_STATE_KEY

if TYPE_CHECKING:
    from engine.team import Member

NEEDS_HUMAN = "requires human input before continuing."


def paused_member_text(label: str) -> str:
    """What the leader is told of a member that paused for a human."""
    return f"Member '{label}' {NEEDS_HUMAN}"


def member_result(out: Mapping[str, Any], label: str) -> tuple[str, bool]:
    """What the leader is told of a member's run, and whether that is a failure."""
    status = out.get("status")
    if status == PAUSED:
        return paused_member_text(label), False
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
    return ctx.child(
        run_id=run_id,
        history=member_history(ctx.history, member.id),
        # The leader's task board is not the member's (a sub-team in tasks mode keeps its own).
        session_state={k: json_copy(v) for k, v in session_state.items() if k != TASKS_STATE_KEY},
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
