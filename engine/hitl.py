"""Human in the loop: validating the decisions sent to ``continue_run``.

Only the decision fields are taken from the caller (``confirmed``, ``confirmation_note``, the
user-input values, an external ``result``); the tool name and the model's arguments come from the
stored run, so a client cannot rewrite what it is approving.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.errors import InvalidContinuation
from engine.ids import new_id
from engine.output import PAUSED, RunState
from engine.tools.function import Function

REJECTED = "Function call was rejected by the user"


@dataclass
class Decision:
    tool_call_id: str
    confirmed: bool | None = None
    note: str | None = None
    values: dict[str, Any] = field(default_factory=dict)
    user_input_schema: list[dict[str, Any]] | None = None
    result: str | None = None
    result_error: bool = False


def approval_ids(paused: Sequence[dict[str, Any]]) -> None:
    """Agno's ``approval_id``s, given with the pause so that every copy of the paused calls (the
    RunPaused event, the output, its requirements, the stored run) carries them: a pause's
    "required" calls share one (one approval decides them), each "audit" call has its own (the
    record of its decision). The approvals service writes its rows under these ids."""
    shared: str | None = None
    for te in paused:
        if te.get("approval_type") == "required":
            shared = shared or new_id()
            te["approval_id"] = shared
        elif te.get("approval_type") == "audit":
            te["approval_id"] = new_id()


def is_pending(te: Mapping[str, Any]) -> bool:
    return bool(te.get("requires_confirmation") or te.get("requires_user_input") or te.get("external_execution_required"))


def collect_decisions(
    state: RunState,
    functions: Mapping[str, Function],
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    requirements: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Decision]:
    """One ``Decision`` per paused tool call, or ``InvalidContinuation`` saying what is wrong."""
    if state.status != PAUSED:
        raise InvalidContinuation(f"Run {state.run_id} is not paused (status {state.status})")
    pending = [te for te in state.tools if is_pending(te)]
    if not pending:
        raise InvalidContinuation(f"Run {state.run_id} has no paused tool calls")
    supplied = _supplied(tools, requirements)
    known = {te["tool_call_id"] for te in pending}
    unknown = sorted(set(supplied) - known)
    if unknown:
        raise InvalidContinuation(f"Unknown tool_call_id {', '.join(unknown)}: not a paused tool call of run {state.run_id}")

    decisions: dict[str, Decision] = {}
    for te in pending:
        call_id, name = te["tool_call_id"], te["tool_name"]
        item = supplied.get(call_id)
        if item is None:
            raise InvalidContinuation(f"No decision for paused tool call {call_id} ({name})")
        decision = Decision(tool_call_id=call_id)
        if te.get("requires_confirmation"):
            confirmed = item.get("confirmed")
            if not isinstance(confirmed, bool):
                raise InvalidContinuation(f"Tool call {call_id} ({name}) needs a decision: set confirmed to true or false")
            decision.confirmed = confirmed
        elif item.get("confirmed") is False:
            # Agno lets any paused call be rejected (a rejected approval of a user-input or an
            # externally executed tool): it does not run, and asks nothing more.
            decision.confirmed = False
        if decision.confirmed is False or te.get("requires_confirmation"):
            note = item.get("confirmation_note")
            decision.note = str(note) if note not in (None, "") else None
        rejected = decision.confirmed is False
        if te.get("requires_user_input") and not rejected:
            decision.user_input_schema, decision.values = _user_values(te, item)
            function = functions.get(name)
            merged = {**(te.get("tool_args") or {}), **decision.values}
            missing = (
                function.missing_user_input(merged)
                if function is not None
                else [f["name"] for f in decision.user_input_schema if f.get("value") is None]
            )
            if missing:
                raise InvalidContinuation(f"Tool call {call_id} ({name}) needs user input for: {', '.join(missing)}")
        if te.get("external_execution_required") and not rejected:
            result = item.get("result")
            if result is None:
                raise InvalidContinuation(f"Tool call {call_id} ({name}) was executed externally: supply its result")
            decision.result = result if isinstance(result, str) else str(result)
            decision.result_error = bool(item.get("tool_call_error"))
        decisions[call_id] = decision
    return decisions


def supplied_decisions(
    tools: Sequence[Mapping[str, Any]] | None, requirements: Sequence[Mapping[str, Any]] | None
) -> dict[str, dict[str, Any]]:
    """The caller's decisions by tool_call_id (a team routes each to the run that paused)."""
    return _supplied(tools, requirements)


def _supplied(
    tools: Sequence[Mapping[str, Any]] | None, requirements: Sequence[Mapping[str, Any]] | None
) -> dict[str, dict[str, Any]]:
    """Decisions by tool_call_id, from ToolExecution dicts and/or RunRequirement dicts."""
    supplied: dict[str, dict[str, Any]] = {}
    for item in tools or ():
        if not isinstance(item, Mapping) or not isinstance(item.get("tool_call_id"), str):
            raise InvalidContinuation("Each entry of tools must be a ToolExecution object with a tool_call_id")
        supplied[item["tool_call_id"]] = dict(item)
    for req in requirements or ():
        te = req.get("tool_execution") if isinstance(req, Mapping) else None
        if not isinstance(te, Mapping) or not isinstance(te.get("tool_call_id"), str):
            raise InvalidContinuation("Each requirement must carry a tool_execution with a tool_call_id")
        merged = dict(te)
        # As in Agno's RunRequirement.from_dict: requirement-level answers fill the nested ones.
        if merged.get("confirmed") is None and req.get("confirmation") is not None:
            merged["confirmed"] = req["confirmation"]
            if merged.get("confirmation_note") is None:
                merged["confirmation_note"] = req.get("confirmation_note")
        if merged.get("result") is None and req.get("external_execution_result") is not None:
            merged["result"] = req["external_execution_result"]
        if req.get("user_input_schema") and not merged.get("user_input_schema"):
            merged["user_input_schema"] = req["user_input_schema"]
        supplied[merged["tool_call_id"]] = merged
    return supplied


def _user_values(te: Mapping[str, Any], item: Mapping[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    stored = [dict(f) for f in te.get("user_input_schema") or []]
    given = item.get("user_input_schema") or []
    if not isinstance(given, list):
        raise InvalidContinuation(f"user_input_schema of tool call {te['tool_call_id']} must be a list")
    values = {f.get("name"): f.get("value") for f in given if isinstance(f, Mapping) and f.get("value") is not None}
    names = {f["name"] for f in stored}
    values = {k: v for k, v in values.items() if k in names}
    for entry in stored:
        if entry["name"] in values:
            entry["value"] = values[entry["name"]]
    return stored, values
