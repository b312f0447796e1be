"""Job types: what executes a job of each type, and who is told when the queue itself ends one.

The queue knows job types, not their modules: each app registers its types in ``ready()`` (the
run job types from ``agents``, ingestion from ``knowledge``, ...), so ``jobs`` imports none of
its consumers. A type has one execute, a coroutine ``execute(job, worker) -> final status``,
which the worker's event loop awaits; a handler with a sync body registers through
``job_handler``, which runs it in a run thread.

Lifecycle hooks are observers, several per type and event, called in the transaction that
changes the job (so what they write commits with it, or not at all):

- ``cancelled(job, *, reason, stage)``: ``job_cancel`` tombstoned a queued (stage "PENDING") or
  paused ("PAUSED") job;
- ``lost(job, *, retrying, error)``: the reaper took the job from a worker that stopped renewing
  its lease: queued again (``retrying``) or failed with ``error``;
- ``requeued(job)``: an operator gave a failed or cancelled job another attempt;
- ``ended(job, *, status)``: the job's execute wrote its end (``job_ended``), or the queue failed
  a job no execute is registered for.

A reaper pass also gives up work a lost process held outside the job table (an inline run's
heartbeat row): ``reaper_register`` adds such a pass.
"""
from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from .models import Job
from .services.executor import in_run_thread

logger = logging.getLogger("agno_site.jobs")

JobExecute = Callable[[Job, str], Awaitable[str]]  # (the claimed job, the worker holding it) -> its final status
JobHandler = Callable[[Job, str], str]  # the same, with a sync body (run in a run thread)
JobHook = Callable[..., None]
JobEvent = Literal["cancelled", "lost", "requeued", "ended"]
EVENTS: tuple[JobEvent, ...] = ("cancelled", "lost", "requeued", "ended")


@dataclass
class _JobType:
    execute: JobExecute | None = None
    handler: JobHandler | None = None  # the sync body its execute runs in a run thread, if that is what it is
    hooks: dict[str, list[JobHook]] = field(default_factory=lambda: {event: [] for event in EVENTS})


_types: dict[str, _JobType] = {}


def _entry(job_type: str) -> _JobType:
    return _types.setdefault(job_type, _JobType())


def job_type_register(*job_types: str, execute: JobExecute) -> None:
    """Register the coroutine that executes jobs of ``job_types`` (from an app's ``ready()``).
    One execute per type: registering the same one again is harmless, another one is a bug."""
    for job_type in job_types:
        entry = _entry(job_type)
        if entry.execute is not None and entry.execute is not execute:
            raise ValueError(f"jobs of type {job_type!r} already have an execute: {entry.execute!r}")
        entry.execute = execute


def job_handler(*job_types: str) -> Callable[[JobHandler], JobHandler]:
    """Register a handler with a sync body for ``job_types``: its execute runs it in a run thread
    (a knowledge ingestion, a metrics refresh, an eval: work that holds a thread anyway)."""

    def register(handler: JobHandler) -> JobHandler:
        async def execute(job: Job, worker: str) -> str:
            return await in_run_thread(handler, job, worker)

        execute.__qualname__ = execute.__name__ = f"{handler.__qualname__}[in a run thread]"
        job_type_register(*job_types, execute=execute)
        for job_type in job_types:
            _entry(job_type).handler = handler
        return handler

    return register


def job_hook_register(event: JobEvent, *job_types: str, hook: JobHook) -> None:
    """Call ``hook`` when the queue ``event``s a job of one of ``job_types`` (see the module's
    docstring for each event's arguments). Registering the same hook twice adds it once."""
    if event not in EVENTS:
        raise ValueError(f"unknown job event {event!r}; one of {', '.join(EVENTS)}")
    for job_type in job_types:
        hooks = _entry(job_type).hooks[event]
        if hook not in hooks:
            hooks.append(hook)


def job_type_execute(job_type: str) -> JobExecute | None:
    entry = _types.get(job_type)
    return entry.execute if entry is not None else None


def job_type_handler(job_type: str) -> JobHandler | None:
    """The sync body of a type registered with ``job_handler`` (None for a coroutine execute)."""
    entry = _types.get(job_type)
    return entry.handler if entry is not None else None


def job_type_registered(job_type: str) -> bool:
    return job_type_execute(job_type) is not None


def job_hooks_call(event: JobEvent, job: Job, **details: Any) -> None:
    """Tell the observers of ``job``'s type that the queue ``event``ed it (in the caller's
    transaction: an observer's failure rolls the change back with it, as a write of the queue's
    own would)."""
    entry = _types.get(job.job_type)
    for hook in entry.hooks[event] if entry is not None else ():
        hook(job, **details)


ReaperPass = Callable[..., Any]  # (*, now, trusted) -> what it gave up
_reapers: list[ReaperPass] = []


def reaper_register(reaper: ReaperPass) -> None:
    """Call ``reaper(now=..., trusted=...)`` at every reaper pass, after the queue's own (``trusted``:
    the pass's verdict on whether heartbeats can be believed, jobs.services.liveness)."""
    if reaper not in _reapers:
        _reapers.append(reaper)


def reapers() -> tuple[ReaperPass, ...]:
    return tuple(_reapers)
