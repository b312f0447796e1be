"""``RunIteration``: the protocol every run shares (``AgentRun``, ``TeamRun``, ``WorkflowRun``).

A run is one async generator of event dicts. It is iterable both ways: ``async for`` on the
caller's event loop, or plainly from a sync caller (a run thread, a Celery task, a test), which
drives the same generator on its thread's own loop (``aio.iterate_sync``). ``close`` / ``aclose``
stop it early; once it is exhausted, ``output`` is its final output dict.
"""
from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

from engine.aio import iterate_sync, run_sync
from engine.output import ERROR, RUNNING


class _WaitedFirst(BaseException):
    """Thrown into a run that waited before its first event (``RunIteration.opening``); not an
    Exception, so that no handler of the run takes it for a failure to report."""




class RunIteration:
    """The run protocol every run shares (``AgentRun``, ``TeamRun``, ``WorkflowRun``): iterate it
    plainly from a sync caller or with ``async for`` on an event loop, for event dicts; ``close`` /
    ``aclose`` to stop early; then read ``output``. A subclass sets ``state`` (with ``run_id``,
    ``status`` and ``to_dict()``) and ``agen``, the async generator of its events."""

    state: Any
    agen: Any
    _sync: Iterator[dict[str, Any]] | None = None

    # ---- iteration ------------------------------------------------------------------------------

    def __iter__(self) -> RunIteration:
        return self

    def __next__(self) -> dict[str, Any]:
        if self._sync is None:
            self._sync = iterate_sync(self.agen)
        try:
            return next(self._sync)
        except StopIteration:
            raise
        except Exception:
            self._failed()
            raise

    def __aiter__(self) -> RunIteration:
        return self

    async def __anext__(self) -> dict[str, Any]:
        try:
            return await self.agen.__anext__()
        except StopAsyncIteration:
            raise
        except Exception:
            self._failed()
            raise

    def opening(self) -> dict[str, Any] | None:
        """The run's first event, taken now, in the caller's step of the event loop (no trip
        around it): every run emits its first event (RunStarted, RunContinued, WorkflowStarted)
        before it waits on anything. None for a run without events. A run that waits first is a
        bug: it is closed, and RuntimeError says so. Then iterate as usual for the rest."""
        step = self.__anext__()
        try:
            step.send(None)
        except StopIteration as done:
            return done.value
        except StopAsyncIteration:
            return None
        # Unwind the run from where it waits (its finally blocks run), then refuse it. Not
        # GeneratorExit: thrown into a pending __anext__ it would close only that step.
        try:
            step.throw(_WaitedFirst())
        except (_WaitedFirst, StopIteration, StopAsyncIteration):
            pass
        finally:
            step.close()
        raise RuntimeError(f"run {self.run_id} waited before its first event")

    def _failed(self) -> None:
        # A bug, not a provider failure: leave an honest status behind, then let it surface.
        if self.state.status == RUNNING:
            self.state.status = ERROR

    def close(self) -> None:
        """Stop early (the consumer went away): closes any open provider stream. The status stays
        as it was (normally RUNNING); the caller decides what an abandoned run becomes."""
        if self._sync is not None:
            self._sync.close()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            run_sync(self.agen.aclose())
        else:
            loop.create_task(self.agen.aclose())

    async def aclose(self) -> None:
        """``close`` for an async consumer."""
        await self.agen.aclose()

    @property
    def run_id(self) -> str:
        return self.state.run_id

    @property
    def status(self) -> str:
        return self.state.status

    @property
    def output(self) -> dict[str, Any]:
        return self.state.to_dict()

