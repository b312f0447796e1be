"""Chunkers: sections of text to passages small enough for the embedder's window.

all-MiniLM-L6-v2 reads 256 word pieces, roughly 1,000 characters of English prose but only ~640
of technical text (code, identifiers); what is past that is cut silently, so a chunk must stay
below it (the default size is 600 characters: bench/knowledge_quality.py).

- ``fixed``: windows of ``size`` characters, each overlapping the last by ``overlap``, moved to a
  space where one is near so words are not cut.
- ``recursive``: split at paragraphs, then lines, then sentences, then words, merging pieces up
  to ``size``, with ``overlap`` characters of the previous chunk carried over.
- ``markdown``: split at headings first (each chunk records its heading path), then recursively.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .readers import Section


@dataclass
class Piece:
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


class ChunkerError(ValueError):
    pass


def _check(size: int, overlap: int) -> None:
    if size < 50:
        raise ChunkerError("chunk_size must be at least 50 characters")
    if overlap < 0 or overlap >= size:
        raise ChunkerError("chunk_overlap must be at least 0 and smaller than chunk_size")


def chunk_fixed(text: str, size: int, overlap: int) -> list[str]:
    _check(size, overlap)
    text = text.strip()
    chunks: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            space = text.rfind(" ", start + size // 2, end)
            if space > start:
                end = space
        piece = text[start:end].strip()
        if piece:
            chunks.append(piece)
        if end >= len(text):
            break
        start = max(start + 1, end - overlap)
        if overlap:  # start the overlap at a word
            space = text.find(" ", start, end)
            if 0 <= space < end - 1:
                start = space + 1
    return chunks


_SEPARATORS = ("\n\n", "\n", ". ", "? ", "! ", "; ", ", ", " ")


def _split(text: str, size: int, separators: tuple[str, ...]) -> list[str]:
    """Pieces of at most ``size`` characters, cut at the coarsest separator that works."""
    if len(text) <= size:
        return [text]
    for index, separator in enumerate(separators):
        if separator in text:
            parts = text.split(separator)
            pieces: list[str] = []
            for number, part in enumerate(parts):
                part = part + (separator if number < len(parts) - 1 else "")
                pieces += _split(part, size, separators[index + 1 :]) if len(part) > size else [part]
            return pieces
    return [text[i : i + size] for i in range(0, len(text), size)]


def chunk_recursive(text: str, size: int, overlap: int) -> list[str]:
    _check(size, overlap)
    chunks: list[str] = []
    current = ""
    for piece in _split(text.strip(), size, _SEPARATORS):
        if current and len(current) + len(piece) > size:
            chunks.append(current.strip())
            tail = current[-overlap:] if overlap else ""
            if tail and " " in tail:
                tail = tail[tail.index(" ") + 1 :]
            current = tail if len(tail) + len(piece) <= size else ""
        current += piece
    if current.strip():
        chunks.append(current.strip())
    return [chunk for chunk in chunks if chunk]


_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


def chunk_markdown(text: str, size: int, overlap: int) -> list[tuple[str, list[str]]]:
    """(chunk, heading path) pairs. A heading starts a new chunk; its path is kept with it."""
    _check(size, overlap)
    sections: list[tuple[list[str], list[str]]] = []  # (heading path, lines)
    path: list[str] = []
    lines: list[str] = []
    in_code = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
        match = None if in_code else _HEADING.match(line)
        if match:
            if "".join(lines).strip():
                sections.append((list(path), lines))
            level = len(match.group(1))
            path = path[: level - 1] + [match.group(2)]
            lines = [line]
        else:
            lines.append(line)
    if "".join(lines).strip():
        sections.append((list(path), lines))
    out: list[tuple[str, list[str]]] = []
    for headings, body in sections:
        for chunk in chunk_recursive("\n".join(body), size, overlap):
            out.append((chunk, headings))
    return out


CHUNKERS: dict[str, str] = {
    "fixed": "Fixed-size windows with overlap",
    "recursive": "Paragraphs, then lines, sentences and words, up to the size",
    "markdown": "Markdown headings first, then recursive",
}

# AgentOS names its chunking strategies (``ChunkingStrategyType``); a client sends those names,
# and /knowledge/config lists the chunkers under them.
AGENTOS_NAMES: dict[str, str] = {"fixed": "FixedSizeChunker", "recursive": "RecursiveChunker", "markdown": "MarkdownChunker"}
# AgentOS's other strategies, which this server does not offer, and why.
NOT_OFFERED: dict[str, str] = {
    "AgenticChunker": "not offered here: it asks a model where to cut every document, at a model call per chunk",
    "CodeChunker": "not offered here: no reader of this server reads source code (use RecursiveChunker)",
    "DocumentChunker": "not offered here: RecursiveChunker splits at paragraphs first",
    "SemanticChunker": "not offered here: it embeds every sentence to find where topics change (use MarkdownChunker or RecursiveChunker)",
    "RowChunker": "not offered here: the csv reader writes each row as one 'column: value' line, and RecursiveChunker cuts between lines",
}


def chunker_key(name: str) -> str:
    """This server's key of a chunker named by its key or AgentOS's name; ``ChunkerError`` saying
    why for one it does not offer."""
    if name in CHUNKERS:
        return name
    for key, agentos_name in AGENTOS_NAMES.items():
        if name == agentos_name:
            return key
    if name in NOT_OFFERED:
        raise ChunkerError(f"Chunker {name!r} is {NOT_OFFERED[name]}")
    offered = ", ".join(f"{AGENTOS_NAMES[key]} ({key})" for key in CHUNKERS)
    raise ChunkerError(f"Unknown chunker {name!r}; chunkers: {offered}")


def chunk_sections(sections: list[Section], *, chunker: str, size: int, overlap: int) -> list[Piece]:
    """Every section's chunks, in order, each with its section's metadata (and heading path)."""
    chunker = chunker_key(chunker)
    pieces: list[Piece] = []
    for section in sections:
        if chunker == "markdown":
            for text, headings in chunk_markdown(section.text, size, overlap):
                meta = dict(section.metadata)
                if headings:
                    meta["headings"] = headings
                pieces.append(Piece(text, meta))
        else:
            split: Callable[[str, int, int], list[str]] = chunk_fixed if chunker == "fixed" else chunk_recursive
            pieces += [Piece(text, dict(section.metadata)) for text in split(section.text, size, overlap)]
    return pieces
