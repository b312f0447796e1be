"""Sessions and runs with pinned timestamps, and the bodies AgentOS answers for them, shared by
the /sessions tests (whole bodies are asserted)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from sessions.models import Run, Session
from sessions.services import run_events_append
from tests.factories import make_run, make_session

T0 = datetime(2026, 11, 30, 9, 42, 53, tzinfo=timezone.utc)
ISO_T0 = "2026-11-30T09:42:53Z"
MODEL = {"id": "gpt-4o", "name": "OpenAIChat", "provider": "OpenAI"}
SESSION_ITEM_KEYS = {
    "session_id", "session_name", "session_state", "created_at", "updated_at", "session_type", "user_id",
    "agent_id", "team_id", "workflow_id", "session_summary", "metrics", "total_tokens", "metadata",
    "origin",  # ours: where the session came from (the chat lists chat and API sessions only)
}
# Ours, beside AgentOS's keys in every run body: where the run came from, its place in the branches.
OURS = {"origin": "api", "branch_active": True}
AGENT_DETAIL_KEYS = [
    "user_id", "agent_session_id", "session_id", "session_name", "session_summary", "session_state", "agent_id",
    "total_tokens", "agent_data", "metrics", "metadata", "chat_history", "created_at", "updated_at",
]
TEAM_DETAIL_KEYS = [
    "session_id", "session_name", "user_id", "team_id", "session_summary", "session_state", "metrics", "team_data",
    "metadata", "chat_history", "created_at", "updated_at", "total_tokens",
]
WORKFLOW_DETAIL_KEYS = [
    "user_id", "workflow_id", "workflow_name", "session_id", "session_name", "session_data", "session_state",
    "workflow_data", "metadata", "created_at", "updated_at",
]
NO_MEDIA = {"images": [], "videos": [], "audios": [], "files": []}


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def stamp(session: Session, *, created: datetime = T0, updated: datetime | None = None, **fields: Any) -> Session:
    """Pin a session's timestamps (and other columns) so whole bodies can be asserted."""
    Session.all_users.filter(pk=session.pk).update(created_at=created, updated_at=updated or created, **fields)
    return Session.all_users.get(pk=session.pk)


def agent_session(user_id: str = "alice", session_id: str = "s-agent") -> Session:
    """An agent session with one finished run whose messages include every kind of message."""
    session = make_session(
        user_id,
        session_id=session_id,
        component_id="assistant",
        session_state={"cart": ["tea"]},
        metadata={"channel": "web"},
        component_data={"name": "Assistant", "model": MODEL},
    )
    make_run(
        user_id,
        session=session,
        run_id=f"{session_id}-r1",
        status="COMPLETED",
        input={"input_content": "What tools do you have?"},
        created_at=T0 + timedelta(seconds=1),
        run_data={
            "content": "I can add numbers.",
            "content_type": "str",
            "metrics": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
            "messages": [
                {"role": "system", "content": "Be brief.", "created_at": 1},
                {"role": "user", "content": "Earlier question", "from_history": True, "created_at": 1},
                {"role": "user", "content": "What tools do you have?", "created_at": 2},
                {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function"}], "created_at": 2},
                {"role": "tool", "content": "3", "tool_call_id": "c1", "created_at": 2},
                {"role": "assistant", "content": "I can add numbers.", "created_at": 3},
            ],
        },
    )
    return stamp(
        session,
        updated=T0 + timedelta(seconds=5),
        metrics={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
        total_tokens=15,
        summary={"summary": "Tools talk", "topics": ["tools"]},
    )


def streamed(run: Run) -> list[dict[str, Any]]:
    """Store a streamed run's events; return the ones AgentOS keeps (no per-token RunContent)."""
    events = [
        {"event": "RunStarted", "run_id": run.pk, "created_at": 1},
        {"event": "RunContent", "run_id": run.pk, "content": "I can ", "created_at": 1},
        {"event": "ToolCallStarted", "run_id": run.pk, "tool": {"tool_name": "add"}, "created_at": 2},
        {"event": "RunContent", "run_id": run.pk, "content": "add.", "created_at": 2},
        {"event": "RunCompleted", "run_id": run.pk, "content": "I can add.", "created_at": 3},
    ]
    run_events_append(run=run, events=events)
    return [event for event in events if event["event"] != "RunContent"]


CHAT_HISTORY = [
    {"role": "user", "content": "What tools do you have?", "created_at": 2},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function"}], "created_at": 2},
    {"role": "assistant", "content": "I can add numbers.", "created_at": 3},
]
