"""Retries and fallbacks around a model turn."""
from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any

from engine.aio import iterate_sync, maybe_await
from engine.errors import RetryableModelError
from engine.models.base import CONTENT_CHUNKS, Model, ModelChunk, Task, ToolChoice, ToolSpec

logger = logging.getLogger(__name__)


class ModelChain:
    """The agent's model followed by its fallbacks.

    A retryable error before any content was streamed is retried on the same model with a bounded
    exponential backoff (``retries`` extra attempts), then the next model is tried. A fatal error
    (bad key, bad request) is not worth another model's time and propagates at once. Once content
    has reached the caller the turn cannot be replayed without duplicating it, so errors after that
    point propagate too.
    """

    def __init__(
        self,
        models: Sequence[Model],
        *,
        retries: int = 1,
        backoff: float = 0.5,
        max_backoff: float = 4.0,
        sleep: Callable[[float], Awaitable[None] | None] = asyncio.sleep,
    ) -> None:
        if not models:
            raise ValueError("ModelChain needs at least one model")
        if retries < 0:
            raise ValueError("retries must be >= 0")
        self.models = list(models)
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.sleep = sleep
        # The model that produced the chunks being yielded; read it when booking usage.
        self.active: Model = self.models[0]

    @property
    def primary(self) -> Model:
        return self.models[0]

    def stream(self, messages: Sequence[Mapping[str, Any]], **options: Any) -> Iterator[ModelChunk]:
        """``astream`` for a sync caller, on its thread's event loop."""
        return iterate_sync(self.astream(messages, **options))

    async def astream(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        output_schema: Mapping[str, Any] | None = None,
        task: Task = "chat",
        incremental: bool = True,
    ) -> AsyncIterator[ModelChunk]:
        last_error: RetryableModelError | None = None
        for model in self.models:
            for attempt in range(self.retries + 1):
                self.active = model
                streamed = False
                chunks = model.astream(
                    messages, tools=tools, tool_choice=tool_choice, output_schema=output_schema, task=task,
                    incremental=incremental,
                )
                try:
                    async for chunk in chunks:
                        streamed = streamed or isinstance(chunk, CONTENT_CHUNKS)
                        yield chunk
                    return
                except RetryableModelError as exc:
                    if streamed:
                        raise
                    last_error = exc
                    logger.warning(
                        "model call failed, retryable",
                        extra={"provider": model.provider, "model": model.id, "attempt": attempt + 1},
                    )
                    if attempt < self.retries:
                        await maybe_await(self.sleep(min(self.max_backoff, self.backoff * (2**attempt))))
                finally:
                    # Closing releases the HTTP response when the caller stops early (cancel).
                    await chunks.aclose()
        assert last_error is not None
        raise last_error
