"""The provider-neutral model interface.

A model takes a list of message dicts (the stored OpenAI-like shape: ``role``, ``content``,
``tool_calls`` on assistant messages, ``tool_call_id``/``tool_name``/``tool_call_error`` on tool
messages) and returns an async iterator of chunks (``astream``). Providers convert to and from their wire
formats; nothing above this module knows about SDKs. ``stream`` is the sync facade over it.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Literal, Union

# What the model is being asked to do. Real providers ignore it; the offline model uses it to pick
# its deterministic behaviour, the way a real model would read the task from the prompt.
Task = Literal["chat", "reasoning", "memory", "summary", "compression"]
ToolChoice = Literal["auto", "none"]


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True)
class ToolCall:
    """A complete tool call. ``arguments`` is the JSON text exactly as the model produced it."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    reasoning_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        """Both counts summed (the usage chunks of one model call)."""
        return Usage(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(Usage)})


@dataclass(frozen=True)
class ProviderData:
    """Provider-specific response data worth keeping, e.g. ``{"id": "chatcmpl-..."}``."""

    data: dict[str, Any] = field(default_factory=dict)


ModelChunk = Union[TextDelta, ReasoningDelta, ToolCall, Usage, ProviderData]

# Chunks that show the caller model output; once one has been yielded a turn cannot be retried.
CONTENT_CHUNKS = (TextDelta, ReasoningDelta, ToolCall)


@dataclass(frozen=True)
class ToolSpec:
    """What the model sees of a tool: name, description and a JSON schema of its parameters."""

    name: str
    description: str
    parameters: dict[str, Any]


class Model(ABC):
    """A chat model. ``provider`` and ``name`` are display names as AgentOS shows them."""

    provider: ClassVar[str] = ""
    name: ClassVar[str] = ""
    # Whether it can summarise a text it is given (compress_tool_results); the offline model
    # cannot, so its long tool results are compacted instead.
    summarises: ClassVar[bool] = True

    def __init__(self, id: str) -> None:
        if not id:
            raise ValueError(f"{type(self).__name__} needs a model id")
        self.id = id

    @abstractmethod
    def astream(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        output_schema: Mapping[str, Any] | None = None,
        task: Task = "chat",
        incremental: bool = True,
    ) -> AsyncIterator[ModelChunk]:
        """Stream one model turn (an async generator).

        ``incremental=False``: nobody watches the text arrive (a non-streamed run, the memory
        and summary models), so a provider may make one non-streaming call and yield the whole
        answer as a single delta, which is cheaper than parsing a chunk per token.

        Raises ``RetryableModelError`` or ``FatalModelError``; either may happen before the first
        chunk or in the middle of the stream.
        """

    def stream(self, messages: Sequence[Mapping[str, Any]], **options: Any) -> Iterator[ModelChunk]:
        """``astream`` for a sync caller, on its thread's event loop."""
        from engine.aio import iterate_sync

        return iterate_sync(self.astream(messages, **options))

    def to_dict(self) -> dict[str, str]:
        """The ``{name, model, provider}`` shape of AgentOS detail routes."""
        return {"name": self.name, "model": self.id, "provider": self.provider}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} id={self.id!r}>"


def message_text(message: Mapping[str, Any]) -> str:
    """The text of a stored message, whatever shape its content has."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [part.get("text", "") for part in content if isinstance(part, dict)]
        return "".join(parts)
    return str(content)
