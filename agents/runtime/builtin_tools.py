"""Tools the runtime adds per run from the run's context (knowledge search, past sessions)."""
from __future__ import annotations

import json
from typing import Any

from agents.runtime.context import PastSessions, Retriever
from agents.runtime.models.base import message_text
from agents.runtime.tools.function import Function

KNOWLEDGE_SEARCH_LIMIT = 5
PREVIEW_CHARS = 200


def knowledge_search_tool(retriever: Retriever) -> Function:
    def search_knowledge_base(query: str) -> str:
        """Use this function to search the knowledge base for information about a query.

        Args:
            query: The query to search for.
        """
        documents = retriever.search(query=query, limit=KNOWLEDGE_SEARCH_LIMIT)
        if not documents:
            return "No documents found"
        return json.dumps(
            [{k: d.get(k) for k in ("content", "name", "meta_data") if d.get(k) is not None} for d in documents],
            ensure_ascii=False,
            default=str,
        )

    return Function.from_callable(search_knowledge_base)


def past_sessions_tool(past_sessions: PastSessions, num_sessions: int, num_runs: int) -> Function:
    def search_past_sessions() -> str:
        """List the user's previous chat sessions with short previews of their conversations.

        Returns a JSON list of sessions with session_id and runs (user/assistant pairs).
        """
        runs = past_sessions.recent_runs(num_sessions=num_sessions, num_runs_per_session=num_runs)
        sessions: dict[str, list[dict[str, str]]] = {}
        for run in runs:
            preview = _preview(run)
            if preview:
                sessions.setdefault(str(run.get("session_id")), []).append(preview)
        return json.dumps([{"session_id": sid, "runs": previews} for sid, previews in sessions.items()], ensure_ascii=False)

    return Function.from_callable(search_past_sessions)


def _preview(run: dict[str, Any]) -> dict[str, str] | None:
    user = assistant = ""
    for message in run.get("messages") or []:
        text = message_text(message)
        if message.get("role") == "user" and not user and text:
            user = text
        elif message.get("role") == "assistant" and not assistant and text:
            assistant = text
    user = user or str((run.get("input") or {}).get("input_content") or "")
    assistant = assistant or (run.get("content") if isinstance(run.get("content"), str) else "") or ""
    if not user and not assistant:
        return None
    return {"user": _truncate(user), "assistant": _truncate(assistant)}


def _truncate(text: str) -> str:
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "..."
