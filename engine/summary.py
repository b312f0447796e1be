"""Session summaries: a short summary of the session so far, for the caller to persist."""
from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from engine.history import transcript
from engine.models.base import Model, TextDelta, Usage
from engine.models.chain import ModelChain

SUMMARY_SCHEMA: dict[str, Any] = {
    "title": "SessionSummary",
    "type": "object",
    "properties": {
        "summary": {
            "type": "string",
            "description": "Summary of the session. Be concise and focus on only important information. Do not make anything up.",
        },
        "topics": {"type": "array", "items": {"type": "string"}, "description": "Topics discussed in the session."},
    },
    "required": ["summary", "topics"],
}

SYSTEM_PROMPT = """\
Analyze the conversation between a user and an assistant that follows, and extract:
- Summary: a brief summary of the session, focusing on important information that would be
  helpful for future interactions.
- Topics: the topics discussed.
Keep the summary concise and do not make anything up. Respond only with a JSON object with the
keys "summary" and "topics"."""


async def create_session_summary(
    chain: ModelChain,
    messages: list[dict[str, Any]],
    *,
    previous: dict[str, Any] | None,
    clock: Callable[[], float],
    book_usage: Callable[[Model, Usage], None],
) -> dict[str, Any]:
    """``{"summary", "topics", "updated_at"}`` for the conversation in ``messages``."""
    system = SYSTEM_PROMPT
    if previous and previous.get("summary"):
        system += f"\n\nSummary of the earlier part of the session:\n{previous['summary']}"
    request = [{"role": "system", "content": system}, {"role": "user", "content": transcript(messages)}]
    text = ""
    async for chunk in chain.astream(request, output_schema=SUMMARY_SCHEMA, task="summary", incremental=False):
        if isinstance(chunk, TextDelta):
            text += chunk.text
        elif isinstance(chunk, Usage):
            book_usage(chain.active, chunk)
    summary, topics = _parse(text)
    updated_at = datetime.fromtimestamp(clock(), tz=timezone.utc).isoformat()
    return {"summary": summary, "topics": topics, "updated_at": updated_at}


def _parse(text: str) -> tuple[str, list[str]]:
    stripped = text.strip().removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    try:
        data = json.loads(stripped)
    except ValueError:
        # A model that ignored the format still produced a usable summary.
        return text.strip(), []
    if not isinstance(data, dict):
        return text.strip(), []
    topics = data.get("topics") or []
    return str(data.get("summary") or ""), [str(t) for t in topics] if isinstance(topics, list) else []
