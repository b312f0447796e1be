"""Where a continued run picks up: message boundaries, as Agno v3's unified ``continue`` sets them.

A run's transcript is its ``messages``. Continuing it from a boundary keeps ``messages[:k]`` and
runs the model loop again from there: ``"end"`` keeps everything (a follow-up), ``"last_user"``
keeps through the last user message, an integer keeps that many messages, and ``regenerate``
drops only the final answer (the trailing assistant messages without tool calls), so tool
results are reused, not fetched again. A boundary never separates a tool call from its result.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from engine.errors import InvalidContinuation
from engine.knowledge_search import references_kept

END = "end"
LAST_USER = "last_user"


def parse_continue_from(value: str | None) -> str | int:
    """The form value: ``end`` (default), ``last_user`` or a message index (an integer >= 0)."""
    if value is None or value == "":
        return END
    text = str(value).strip()
    if text in (END, LAST_USER):
        return text
    if text.isdigit():
        return int(text)
    raise InvalidContinuation("Invalid continue_from. Use 'end', 'last_user', or a numeric message index.")


def boundary(messages: Sequence[dict[str, Any]], continue_from: str | int, *, regenerate: bool = False) -> int:
    """How many of ``messages`` a continuation keeps (before snapping to a safe boundary)."""
    if regenerate:
        if continue_from not in (END, LAST_USER):
            raise InvalidContinuation("`regenerate=True` derives the continuation boundary automatically.")
        return regenerate_boundary(messages)
    if isinstance(continue_from, int):
        return continue_from
    if continue_from == LAST_USER:
        for index in range(len(messages) - 1, -1, -1):
            if messages[index].get("role") == "user":
                return index + 1
        raise InvalidContinuation("Cannot resolve `continue_from='last_user'`: run has no user messages.")
    return len(messages)


def regenerate_boundary(messages: Sequence[dict[str, Any]]) -> int:
    """Drop the final answer only: the trailing assistant messages that call no tool."""
    index = len(messages)
    while index > 0 and messages[index - 1].get("role") == "assistant" and not messages[index - 1].get("tool_calls"):
        index -= 1
    if index == 0:
        raise InvalidContinuation("Cannot regenerate: run has no non-assistant messages to regenerate from.")
    return index


def safe_boundary(messages: Sequence[dict[str, Any]], index: int) -> int:
    """``index``, or lower: the largest boundary at which every kept tool call has its result kept."""
    if index <= 0 or index >= len(messages):
        return index
    answered_at = {m["tool_call_id"]: i for i, m in enumerate(messages) if m.get("tool_call_id")}
    for position in range(index):
        for call in messages[position].get("tool_calls") or ():
            call_id = call.get("id") if isinstance(call, dict) else None
            if call_id and answered_at.get(call_id, index) >= index:
                return position
    return index


def truncate(state: Any, index: int) -> None:
    """Cut a RunState's transcript at ``index`` (in place), with the tool calls and
    requirements that no longer appear in it. An index past the end cuts nothing."""
    if index < 0 or index >= len(state.messages):
        return
    state.messages, state.tools, state.requirements = _cut(state.messages, state.tools, state.requirements, index)
    if getattr(state, "references", None):
        state.references = references_kept(state.references, state.messages)
    state.last_checkpoint_at_message_index = index


def _cut(messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None, requirements: Sequence[dict[str, Any]] | None, index: int) -> tuple[list, Any, Any]:
    """``messages[:index]``, with the tool executions and requirements they still mention."""
    messages = list(messages[:index])
    kept = _tool_call_ids(messages)
    if tools:
        tools = [te for te in tools if te.get("tool_call_id") in kept]
    if requirements:
        requirements = [r for r in requirements if (r.get("tool_execution") or {}).get("tool_call_id") in kept]
    return messages, tools, requirements


def _tool_call_ids(messages: Sequence[dict[str, Any]]) -> set[str]:
    kept: set[str] = set()
    for message in messages:
        if message.get("tool_call_id"):
            kept.add(message["tool_call_id"])
        for call in message.get("tool_calls") or ():
            if isinstance(call, dict) and call.get("id"):
                kept.add(call["id"])
    return kept


# ---- the checkpoints a client can continue from (GET .../checkpoints) ------------------------

def checkpoints(run: dict[str, Any]) -> list[dict[str, Any]]:
    """A stored run's boundaries to continue from, in order: where it was last continued from,
    messages marked as checkpoints, and the end of its transcript. ``checkpoint_id`` numbers
    them for display; ``message_index`` is what ``continue_from`` takes."""
    messages = run.get("messages") or []
    found: dict[int, dict[str, Any]] = {}
    last = run.get("last_checkpoint_at_message_index")
    if isinstance(last, int) and 0 <= last <= len(messages):
        found[last] = _checkpoint(run, last, "checkpoint")
    for index, message in enumerate(messages, start=1):
        if message.get("checkpoint_status") is not None:
            found[index] = _checkpoint(run, index, "checkpoint")
    if messages:
        found[len(messages)] = _checkpoint(run, len(messages), "end")
    entries = [found[index] for index in sorted(found)]
    for number, entry in enumerate(entries, start=1):
        entry["checkpoint_id"] = str(number)
    return entries


def checkpoint_snapshot(run: dict[str, Any], index: int) -> dict[str, Any]:
    """The run as it stood at ``index`` messages (snapped to a safe boundary), with the
    checkpoint entry for it. ``InvalidContinuation`` for an index outside the transcript."""
    messages = run.get("messages") or []
    if index < 0 or index > len(messages):
        raise InvalidContinuation(f"message_index must be between 0 and {len(messages)}")
    safe = safe_boundary(messages, index)
    snapshot = json.loads(json.dumps(run))  # the stored run is never changed
    snapshot["messages"], tools, requirements = _cut(snapshot.get("messages") or [], snapshot.get("tools"), snapshot.get("requirements"), safe)
    snapshot["last_checkpoint_at_message_index"] = safe
    for key, value in (("tools", tools), ("requirements", requirements)):
        if key in snapshot:
            snapshot[key] = value
    entry = _checkpoint(run, index, "snapshot")
    entry["checkpoint_id"] = next((known["checkpoint_id"] for known in checkpoints(run) if known["message_index"] == index), None)
    return {"checkpoint": entry, "snapshot": snapshot}


def _checkpoint(run: dict[str, Any], index: int, reason: str) -> dict[str, Any]:
    messages = run.get("messages") or []
    message = messages[index - 1] if 0 < index <= len(messages) else None
    return {
        "checkpoint_id": None,
        "run_id": run.get("run_id"),
        "session_id": run.get("session_id"),
        "message_index": index,
        "continue_from": index,
        "status": (message or {}).get("checkpoint_status") or run.get("status"),
        "reason": reason,
        "created_at": (message or {}).get("checkpoint_created_at") or run.get("created_at"),
        "message_id": (message or {}).get("id"),
        "message_role": (message or {}).get("role"),
        "message_preview": _preview((message or {}).get("content")),
        "is_latest": index == len(messages),
    }


def _preview(content: Any, length: int = 120) -> str | None:
    if content is None:
        return None
    text = (content if isinstance(content, str) else str(content)).replace("\n", " ").strip()
    return text if len(text) <= length else f"{text[:length - 1]}..."
