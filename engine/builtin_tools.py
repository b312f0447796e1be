"""Tools the runtime adds per run from the run's context (knowledge search, past sessions)."""
from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from engine.context import PastSessions, Retriever
from engine.knowledge import KnowledgeSource
from engine.knowledge_search import agentic_filters, documents_text, references_entry
from engine.models.base import message_text
from engine.tools.function import Function

KNOWLEDGE_SEARCH_LIMIT = 5
PREVIEW_CHARS = 200
NO_DOCUMENTS = "No documents found"

logger = logging.getLogger(__name__)


class KnowledgeSearchError(Exception):
    """A knowledge source failed: the model is told (a tool error), the run goes on."""


def search_knowledge_tool(
    source: KnowledgeSource,
    *,
    user_id: str | None,
    filters: Mapping[str, Any] | None,
    agentic: bool,
    references_format: str,
    clock: Callable[[], float],
    record: Callable[[dict[str, Any]], None] | None,
    limit: int = KNOWLEDGE_SEARCH_LIMIT,
) -> Function:
    """Agno's ``search_knowledge_base`` for an agent's ``knowledge``: searches on behalf of the
    run's user with the run's filters, and records what it found as the run's ``references``.
    With agentic filters the model may pass ``filters`` too; the user's and agent's win."""

    async def search(query: str, chosen: dict[str, Any] | None) -> str:
        started = clock()
        try:
            hits = await source.asearch(query, user_id=user_id, limit=limit, filters=chosen)
        except Exception as exc:
            # Agno's words, and the error's type only: its message may carry storage details.
            logger.warning("knowledge search failed", extra={"knowledge": source.name, "error": type(exc).__name__})
            raise KnowledgeSearchError(f"Error searching knowledge base: {type(exc).__name__}") from exc
        if not hits:
            return NO_DOCUMENTS
        if record is not None:
            record(references_entry(query, hits, clock() - started))
        return documents_text(hits, references_format)

    user_filters = dict(filters) if filters else None
    if agentic:

        async def search_knowledge_base_with_filters(query: str, filters: list[dict[str, Any]] | None = None) -> str:
            """Use this function to search the knowledge base for information about a query.

            Args:
                query: The query to search for.
                filters: The filters to apply to the search: a list of {"key": ..., "value": ...} objects.
            """
            return await search(query, agentic_filters(filters, user_filters))

        return Function.from_callable(search_knowledge_base_with_filters, name="search_knowledge_base")

    async def search_knowledge_base(query: str) -> str:
        """Use this function to search the knowledge base for information about a query.

        Args:
            query: The query to search for.
        """
        return await search(query, user_filters)

    return Function.from_callable(search_knowledge_base)


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
