"""Turning earlier runs (RunOutput dicts) into model context."""
from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from engine.models.base import message_text
from engine.output import json_copy

_CONVERSATION_ROLES = ("user", "assistant", "tool")


def history_messages(runs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The user/assistant/tool messages of earlier runs, oldest first, marked ``from_history``.

    Runs that ended mid-tool-call (cancelled, paused and abandoned) are repaired, because
    providers reject an assistant tool call without its result.
    """
    out: list[dict[str, Any]] = []
    for run in runs:
        stored = [
            m for m in run.get("messages") or [] if m.get("role") in _CONVERSATION_ROLES and not m.get("from_history")
        ]
        if not stored:
            stored = _messages_from_summary_fields(run)
        for message in complete_tool_calls(stored):
            out.append({**json_copy(message), "from_history": True})
    return out


def _messages_from_summary_fields(run: dict[str, Any]) -> list[dict[str, Any]]:
    """A run stored without messages still has its input and answer."""
    messages = []
    user_text = (run.get("input") or {}).get("input_content")
    if user_text:
        messages.append({"role": "user", "content": user_text if isinstance(user_text, str) else json.dumps(user_text)})
    content = run.get("content")
    if content:
        messages.append({"role": "assistant", "content": content if isinstance(content, str) else json.dumps(content)})
    return messages


def complete_tool_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop tool calls that have no result and results whose call is gone."""
    answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
    called: set[str] = set()
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.get("role") == "assistant" and message.get("tool_calls"):
            kept = [call for call in message["tool_calls"] if call.get("id") in answered]
            called.update(call["id"] for call in kept)
            if not kept and not message_text(message):
                continue
            message = {**message, "tool_calls": kept} if kept else {k: v for k, v in message.items() if k != "tool_calls"}
        elif message.get("role") == "tool" and message.get("tool_call_id") not in called:
            continue
        out.append(message)
    return out


def transcript(messages: Iterable[dict[str, Any]]) -> str:
    """``User: ...`` / ``Assistant: ...`` lines, for the summary model."""
    lines = []
    for message in messages:
        text = message_text(message).strip()
        if message.get("role") == "user" and text:
            lines.append(f"User: {text}")
        elif message.get("role") == "assistant" and text and not text.startswith("<thinking>"):
            lines.append(f"Assistant: {text}")
    return "\n".join(lines)


def input_text(run_input: dict[str, Any]) -> str:
    content = run_input.get("input_content")
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=str)


def with_file_text(message: dict[str, Any]) -> dict[str, Any]:
    """Inline text files of a user message: providers here take text and images only."""
    files = message.get("files")
    if message.get("role") != "user" or not files:
        return message
    blocks = [
        f"<file name={f.get('filename') or f.get('name') or 'file'!r}>\n{f['content']}\n</file>"
        for f in files
        if isinstance(f.get("content"), str)
    ]
    if not blocks:
        return message
    return {**message, "content": "\n\n".join([str(message.get("content") or ""), *blocks])}
