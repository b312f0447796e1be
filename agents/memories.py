"""The model call of memory optimization (``POST /optimize-memories`` with a ``model``).

Sessions decides what to ask and what to keep of the answer; building and calling a model is
the engine's, so this side does it and registers the call with sessions in ``ready()``.
"""
from __future__ import annotations

from engine.errors import ModelError
from engine.models import TextDelta, get_model
from sessions.services import MemoryOptimizationError, UnusableModel


def memory_text_write(model_spec: str, messages: list[dict[str, str]]) -> str:
    """The text ``model_spec`` answers to ``messages``, streamed and joined."""
    try:
        model = get_model(model_spec)
    except ValueError as exc:
        raise UnusableModel(str(exc)) from exc
    try:
        return "".join(chunk.text for chunk in model.stream(messages, task="chat") if isinstance(chunk, TextDelta))
    except ModelError as exc:
        raise MemoryOptimizationError(str(exc) or type(exc).__name__) from exc
