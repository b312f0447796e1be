"""``compress_tool_results``: long tool results are shortened before they re-enter the model's
context, so a run that calls many tools keeps a bounded context.

A tool message longer than the limit gets a ``compressed_content`` (Agno's ``Message`` field):
a summary by the compression model (the agent's own model chain unless it names one), or,
when that model cannot summarise (the offline model) or the call fails, a deterministic
compaction, its head and tail kept with a note of what was left out. What the model sees of that
message from then on is the shorter text (``model_view``); the message's ``content``, the
ToolExecution's ``result`` and the stored ToolCall events keep the whole result.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.errors import ModelError
from engine.models.base import Model, TextDelta, Usage, message_text
from engine.models.chain import ModelChain

logger = logging.getLogger(__name__)

# Characters a tool result may have before it is compressed (about 500 tokens).
DEFAULT_LIMIT = 2000

PROMPT = """\
You compress the result of a tool call so that it takes little room in an assistant's context,
keeping what the assistant needs to answer.

Always keep: specific facts (numbers, amounts, prices, quantities), dates and times, names of
people, companies, products and places, identifiers (URLs, ids, codes, versions), and quotes or
sources the answer may cite.
Leave out: introductions and conclusions, hedging, meta-commentary, formatting (markdown, HTML,
JSON structure), repetition, and background the task does not need.

Answer with the compressed result only."""


@dataclass(frozen=True)
class Compressed:
    """What one pass compressed: how many results, and their sizes before and after."""

    count: int = 0
    original_size: int = 0
    compressed_size: int = 0


def model_view(message: Mapping[str, Any]) -> Mapping[str, Any]:
    """The message as the model sees it: a compressed tool result's shorter text."""
    if message.get("role") == "tool" and isinstance(message.get("compressed_content"), str):
        return {**message, "content": message["compressed_content"]}
    return message


def compact(text: str, limit: int) -> str:
    """``text`` within about ``limit`` characters: its head and tail, and how much was left out
    between them (the start of a result says what it is, its end often how it ended)."""
    if len(text) <= limit:
        return text
    head, tail = (limit * 2) // 3, limit // 3
    left_out = len(text) - head - tail
    return f"{text[:head]}\n[... {left_out:,} characters of this tool result left out ...]\n{text[-tail:]}"


class ToolResultCompressor:
    """Compresses a run's long tool results, one pass before each model turn."""

    def __init__(self, chain: ModelChain, *, limit: int = DEFAULT_LIMIT, book_usage: Callable[[Model, Usage], None]) -> None:
        self.chain = chain
        self.limit = limit
        self.book_usage = book_usage

    def pending(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The tool messages still too long for the model's context."""
        return [
            m for m in messages
            if m.get("role") == "tool" and "compressed_content" not in m and len(message_text(m)) > self.limit
        ]

    async def compress(self, messages: list[dict[str, Any]]) -> Compressed:
        """Give each pending tool message its ``compressed_content``; returns what was done."""
        done = Compressed()
        for message in messages:
            original = message_text(message)
            shorter = await self._summary(message.get("tool_name") or "tool", original)
            message["compressed_content"] = shorter
            done = Compressed(done.count + 1, done.original_size + len(original), done.compressed_size + len(shorter))
        return done

    async def _summary(self, tool_name: str, text: str) -> str:
        fallback = compact(text, self.limit)
        if not self.chain.primary.summarises:
            return fallback
        request = [{"role": "system", "content": PROMPT}, {"role": "user", "content": f"Tool: {tool_name}\n{text}"}]
        parts: list[str] = []
        try:
            async for chunk in self.chain.astream(request, task="compression", incremental=False):
                if isinstance(chunk, TextDelta):
                    parts.append(chunk.text)
                elif isinstance(chunk, Usage):
                    self.book_usage(self.chain.active, chunk)
        except ModelError as exc:
            # The run goes on with the compaction: a failed summary must not cost the answer.
            logger.warning("tool result compression failed", extra={"provider": exc.provider, "error": type(exc).__name__})
            return fallback
        summary = "".join(parts).strip()
        # A summary longer than the compaction saves nothing.
        return summary if summary and len(summary) <= len(fallback) else fallback


def run_compressor(agent: Any, sleep: Any, book_usage: Callable[[Model, Usage], None]) -> ToolResultCompressor | None:
    """The compressor of a run of ``agent`` (None when it does not compress): its
    ``compression_model``, else its own model chain, fallbacks included."""
    if not agent.compress_tool_results:
        return None
    if agent.compression_model is not None:
        chain = ModelChain([agent.compression_model], retries=agent.model_retries, backoff=agent.retry_backoff, sleep=sleep)
    else:
        chain = agent.model_chain(sleep)
    return ToolResultCompressor(chain, limit=agent.compress_tool_results_above, book_usage=book_usage)
