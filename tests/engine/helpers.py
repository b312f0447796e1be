"""Small helpers shared by the runtime tests."""
from __future__ import annotations

from typing import Any

from engine import AgentRun


def drain(run: AgentRun) -> list[dict[str, Any]]:
    return list(run)


def names(events: list[dict[str, Any]]) -> list[str]:
    return [e["event"] for e in events]


def common(event: str, **extra: Any) -> dict[str, Any]:
    """The fields every event of run-1 in sess-1 of agent "assistant" carries."""
    return {
        "created_at": 1_796_031_773,
        "event": event,
        "agent_id": "assistant",
        "agent_name": "Assistant",
        "run_id": "run-1",
        "session_id": "sess-1",
        "nested_depth": 0,
        **extra,
    }


def tool_execution(**values: Any) -> dict[str, Any]:
    """A ToolExecution dict with every key, defaults as Agno's."""
    te: dict[str, Any] = {
        "tool_call_id": None, "tool_name": None, "tool_args": None, "tool_call_error": None, "result": None,
        "metrics": None, "child_run_id": None, "stop_after_tool_call": False, "created_at": 1_796_031_773,
        "requires_confirmation": None, "confirmed": None, "confirmation_note": None, "requires_user_input": None,
        "user_input_schema": None, "user_feedback_schema": None, "answered": None,
        "external_execution_required": None, "external_execution_silent": None, "approval_type": None,
        "approval_id": None, "parent_tool_call_id": None,
    }
    te.update(values)
    return te
