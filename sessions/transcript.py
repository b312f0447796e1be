"""A conversation as its reader sees it: the messages of one session, for export and for sharing.

The chat shows a session's top-level runs along one path: a reply that was regenerated gives way
to the answer that replaced it, and at each edit (a run forked from an earlier one) the newest
version is the one shown, as the chat opens a conversation. A team's member runs and a
workflow's step runs are shown through their team's or workflow's run, never on their own.
Runs still queued or executing are not part of the conversation yet.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from sessions.api.serializers.common import iso_z
from sessions.models import Run, RunStatus, Session
from sessions.selectors import session_runs

# What the runtime appends to a message with add_knowledge_to_context: not what the person wrote.
ADDED_REFERENCES = re.compile(r"\n\nUse the following references from the knowledge base if it helps:\n<references>[\s\S]*</references>$")
NOT_YET = (RunStatus.PENDING, RunStatus.RUNNING)
# A team leader's hand-off to a member: shown as the member's own reply, not as a tool call.
DELEGATION = "delegate_task_to_member"
FORMAT = "agno-site.conversation.v1"


@dataclass(frozen=True)
class Transcript:
    session: Session
    messages: list[dict[str, Any]]


def conversation_transcript(*, user: Any, session_id: str) -> Transcript | None:
    """The conversation ``user`` may read, or None (missing and another user's alike)."""
    found = session_runs(user=user, session_id=session_id)
    if found is None:
        return None
    session, runs = found
    name = _component_name(session)
    messages: list[dict[str, Any]] = []
    for run in shown_path(runs):
        messages.append({"role": "user", "content": asked_in(run), "created_at": iso_z(run.created_at), "run_id": run.run_id})
        messages.append(_reply(run, name, members=[one for one in runs if one.parent_run_id == run.run_id]))
    return Transcript(session=session, messages=messages)


def shown_path(runs: list[Run]) -> list[Run]:
    """The runs on screen when the conversation is opened: its active branch, as the chat's
    arrows last left it (the versions an edit or a regeneration replaced, and the branches
    switched away from, left out), up to a run still being written."""
    path: list[Run] = []
    for run in runs:
        if run.parent_run_id or not run.branch_active:
            continue
        if run.status in NOT_YET:
            break
        path.append(run)
    return path


def asked_in(run: Run) -> str:
    """What the person wrote: an edited run's transcript holds the new text, others their input."""
    data = run.run_data or {}
    own = _own_user_message(data.get("messages"))
    if data.get("forked_from_run_id") and own is not None:
        return ADDED_REFERENCES.sub("", _text(own.get("content")))
    given = (run.input or {}).get("input_content")
    if given not in (None, ""):
        return given if isinstance(given, str) else json.dumps(given, indent=2, ensure_ascii=False)
    return _text(own.get("content")) if own is not None else ""


def _own_user_message(messages: Any) -> dict[str, Any] | None:
    for message in reversed(messages if isinstance(messages, list) else []):
        if isinstance(message, dict) and message.get("role") == "user" and not message.get("from_history"):
            return message
    return None


def _reply(run: Run, default_name: str, *, members: list[Run]) -> dict[str, Any]:
    data = run.run_data or {}
    reply: dict[str, Any] = {
        "role": "assistant",
        "name": data.get("team_name") or data.get("agent_name") or data.get("workflow_name") or default_name,
        "content": _reply_text(run),
        "status": run.status,
        "created_at": iso_z(run.created_at),
        "run_id": run.run_id,
        "model": run.model or None,
        "tools": [_tool(tool) for tool in stored_tools(data) if tool.get("tool_name") != DELEGATION],
    }
    if members:
        reply["members"] = [
            {"name": (member.run_data or {}).get("agent_name") or member.component_id, "content": _text(member.content), "status": member.status}
            for member in members
        ]
    return reply


def _reply_text(run: Run) -> str:
    if run.status == RunStatus.ERROR:
        return _text(run.error or run.content) or "The reply failed."
    if run.status == RunStatus.CANCELLED and (run.run_data or {}).get("cancellation_stage") in ("PENDING", "PAUSED"):
        return ""  # a run stopped before it ran: the server's note, not the agent's words
    return _text(run.content)


def stored_tools(data: dict[str, Any]) -> list[dict[str, Any]]:
    """A run's tool calls in the order they were made: its ``tools``, and between them the calls
    refused before they ran (a tool the agent does not have, arguments that are not JSON, over
    the call limit), which, as in Agno, only the run's messages keep (a tool message with
    ``tool_call_error``); each comes back as a failed tool whose result is the refusal. The chat
    draws a reloaded conversation the same way (``storedTools`` in chat/static/chat/js/render.js)."""
    tools = [tool for tool in data.get("tools") or [] if isinstance(tool, dict)]
    known = {tool.get("tool_call_id") for tool in tools if tool.get("tool_call_id")}
    before: dict[str, list[dict[str, Any]]] = {}
    refused: list[dict[str, Any]] = []
    messages = data.get("messages") if isinstance(data.get("messages"), list) else []
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "tool" or message.get("from_history") or not message.get("tool_call_id"):
            continue
        if message["tool_call_id"] in known:
            before.setdefault(message["tool_call_id"], []).extend(refused)
            refused = []
        elif message.get("tool_call_error"):
            refused.append({
                "tool_call_id": message["tool_call_id"], "tool_name": message.get("tool_name"), "tool_args": message.get("tool_args") or {},
                "result": message.get("content"), "tool_call_error": True,
            })
    return [*(one for tool in tools for one in (*before.get(tool.get("tool_call_id"), ()), tool)), *refused]


def _tool(tool: dict[str, Any]) -> dict[str, Any]:
    """One call as the chat's card shows it: ``state`` done, failed, or rejected (a person's or an
    operator's no: it did not run)."""
    state = "rejected" if tool.get("confirmed") is False else "failed" if tool.get("tool_call_error") else "done"
    return {"name": tool.get("tool_name") or "", "args": tool.get("tool_args") or {}, "result": tool.get("result"), "state": state}


def _component_name(session: Session) -> str:
    data = session.component_data if isinstance(session.component_data, dict) else {}
    return str(data.get("name") or session.component_id or "Assistant")


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)


# ---- the two export formats --------------------------------------------------------------------


def transcript_json(transcript: Transcript) -> dict[str, Any]:
    """The whole export: the session's identity and every message, with run ids, models and tools."""
    session = transcript.session
    return {
        "format": FORMAT,
        "exported_at": iso_z(timezone.now()),
        "session": {
            "session_id": session.session_id, "session_name": session.session_name or None,
            "session_type": session.session_type, "component_id": session.component_id,
            "component_name": _component_name(session),
            "created_at": iso_z(session.created_at), "updated_at": iso_z(session.updated_at),
        },
        "messages": transcript.messages,
    }


def transcript_title(transcript: Transcript) -> str:
    return transcript.session.session_name or "Untitled conversation"


def transcript_markdown(transcript: Transcript, *, site_name: str) -> str:
    """The conversation as one Markdown document: who said what, replies as they were written
    (they are Markdown already), each tool call with its arguments and result in code blocks."""
    lines = [f"# {_one_line(transcript_title(transcript))}", ""]
    lines += [f"*Exported from {site_name} on {timezone.now():%Y-%m-%d %H:%M} UTC · {_component_name(transcript.session)}*", ""]
    for message in transcript.messages:
        lines += ["---", ""]
        lines += _message_markdown(message)
    return "\n".join(lines).rstrip() + "\n"


def _message_markdown(message: dict[str, Any]) -> list[str]:
    who = "You" if message["role"] == "user" else message.get("name") or "Assistant"
    when = _when(message.get("created_at"))
    lines = [f"**{_one_line(who)}**" + (f" · {when}" if when else ""), ""]
    if message["role"] == "user":
        return lines + [message["content"], ""]
    for member in message.get("members") or []:
        lines += [f"> **{_one_line(member['name'])}** ({member['status'].lower()})", ">"]
        lines += [f"> {line}" for line in member["content"].splitlines() or [""]]
        lines.append("")
    for tool in message.get("tools") or []:
        state = "" if tool.get("state", "done") == "done" else f" ({tool['state']})"
        lines += [f"Tool call `{_one_line(tool['name'])}`{state}:", "", *_fenced(json.dumps(tool["args"], indent=2, ensure_ascii=False), "json")]
        if tool.get("result") is not None:
            lines += ["Result:", "", *_fenced(_text(tool["result"]))]
    if message["content"]:
        lines += [message["content"], ""]
    if message.get("status") in (RunStatus.ERROR, RunStatus.CANCELLED, RunStatus.PAUSED):
        lines += [f"*({_STATUS_NOTES[message['status']]})*", ""]
    return lines


_STATUS_NOTES = {RunStatus.ERROR: "the reply failed", RunStatus.CANCELLED: "stopped", RunStatus.PAUSED: "waiting for a decision"}


def _fenced(text: str, language: str = "") -> list[str]:
    """A code block whose fence is longer than any run of backticks inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + language, text, fence, ""]


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _when(iso: str | None) -> str:
    if not iso:
        return ""
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).strftime("%Y-%m-%d %H:%M UTC")
