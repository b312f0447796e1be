"""What other apps do when a run starts, ends or is continued: observers they register.

The run pipeline owns these events and imports none of its observers. An app that must act on
them registers once, from its ``AppConfig.ready`` (as ``core/components.py`` takes component
kinds): approvals writes the approval rows of a run's paused tool calls and gates a continue of a
run whose approval is pending; the scheduler follows a run a schedule fired once its pause ends;
traces opens a run's trace. So no import circle grows between the pipeline and those apps, and a
new family plugs in without an edit here.

- **run start** (``register_run_start``): called with the run's row when its event log opens (a
  top-level run of any origin: API, socket, chat, schedule, eval, retry, a background job). It may
  return a per-run event observer, which then sees every event of the run as it happens.
- **run end** (``register_run_end``): called with a ``RunEnd`` inside the transaction that writes
  the run's end, so what it writes commits or rolls back with the run. A team's members and a
  workflow's step runs are the record's ``children`` (``RunEnd.records``). An observer that
  raises does not keep the run from ending: what the observers wrote is undone, the failure is
  logged (``agno_site.runs``, with the observer's name), and the others are told again. An
  observer may say which ends concern it (``applies``, a cheap check that reads no database):
  when none applies, as for most runs, no savepoint is opened for nothing.
- **continue gate** (``register_continue_gate``): asked before a paused run continues; it may
  refuse (raise a domain error) or change the decisions it continues with, and is told once the
  continue was accepted (``settled``).
- **background hooks ran** (``register_hooks_ran``): a run's background post-hooks ran in their
  job, after the run was stored (the run's row and ``engine.hooks.HookOutcome`` s): traces writes
  them as a trace of their own.

Registration is idempotent per name, as ``ready`` may run twice in tests.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from core.auth import Principal
from sessions.services.runs import RunRecord

logger = logging.getLogger("agno_site.runs")

EventObserver = Callable[[dict[str, Any]], None]
RunStartObserver = Callable[[Any], EventObserver | None]  # (the run's row) -> a per-run event observer, or None


@dataclass(frozen=True)
class RunEnd:
    """A run's end as its observers see it."""

    owner_id: str | None
    run_id: str
    status: str
    # The run as the sessions service wrote it, members and steps as its children; None for a
    # continuation that ended before it could start (its component was removed after the pause).
    record: RunRecord | None
    # The run had paused and went on from its pause: what its pause held (a schedule's fire) follows.
    after_pause: bool = False

    def records(self) -> Iterator[RunRecord]:
        """The run's record, then every run made inside it (team members, workflow steps), depth first."""
        pending = [self.record] if self.record is not None else []
        while pending:
            record = pending.pop(0)
            yield record
            pending[:0] = list(record.children or [])


RunEndObserver = Callable[[RunEnd], None]
RunEndApplies = Callable[[RunEnd], bool]


@dataclass(frozen=True)
class ContinueGate:
    """A check on a continue of a paused run (approvals' pending approvals)."""

    # (principal, run_id, requested_user_id, tools) -> the decisions to continue with; may raise.
    check: Callable[..., list[dict[str, Any]] | None]
    # The continue was accepted with these decisions (principal, run_id, tools).
    settled: Callable[..., None]


_run_start: dict[str, RunStartObserver] = {}
_run_end: dict[str, tuple[RunEndObserver, RunEndApplies | None]] = {}
_continue_gates: dict[str, ContinueGate] = {}
HooksRanObserver = Callable[[Any, Sequence[Any]], None]  # (the run's row, its hooks' outcomes)
_hooks_ran: dict[str, HooksRanObserver] = {}


def register_run_start(name: str, observer: RunStartObserver) -> None:
    _run_start[name] = observer


def register_run_end(name: str, observer: RunEndObserver, *, applies: RunEndApplies | None = None) -> None:
    """``observer`` is told of every run's end, or, given ``applies``, of the ends it says concern it."""
    _run_end[name] = (observer, applies)


def register_continue_gate(name: str, gate: ContinueGate) -> None:
    _continue_gates[name] = gate


def register_hooks_ran(name: str, observer: HooksRanObserver) -> None:
    _hooks_ran[name] = observer


def unregister(name: str) -> None:
    """Remove every observer registered under ``name`` (tests that register their own)."""
    for registry in (_run_start, _run_end, _continue_gates, _hooks_ran):
        registry.pop(name, None)


def registered() -> dict[str, list[str]]:
    """The names registered, by event (for checks that an app registered its observers)."""
    return {"run_start": list(_run_start), "run_end": list(_run_end), "continue_gate": list(_continue_gates), "hooks_ran": list(_hooks_ran)}


def run_started(run: Any) -> list[EventObserver]:
    """Tell the run-start observers that ``run`` started; the event observers they return."""
    found = []
    for observer in _run_start.values():
        events = observer(run)
        if events is not None:
            found.append(events)
    return found


def run_ended(end: RunEnd) -> list[str]:
    """Tell the run-end observers, in the caller's transaction (the run's end). Their writes go
    in a savepoint: if one raises, they are rolled back, the failure is logged, and the others
    are told again without it, so the run's own end commits with its real status instead of
    staying RUNNING for the reaper. Returns the names of the observers that failed."""
    told = [(name, observer) for name, (observer, applies) in list(_run_end.items()) if applies is None or applies(end)]
    failed: list[str] = []
    while told:
        current = None
        try:
            with transaction.atomic():
                for name, observer in told:
                    if name not in failed:
                        current = name
                        observer(end)
            return failed
        except Exception:
            if current is None:
                raise  # the savepoint itself failed: the run's transaction is broken
            logger.exception("run %s: run-end observer %r failed; the run ends without what it writes", end.run_id, current)
            failed.append(current)
    return failed


def continue_checked(*, principal: Principal, run_id: str, requested_user_id: str | None, tools: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """The decisions a continue of ``run_id`` goes on with, after every gate; a gate may refuse it."""
    for gate in _continue_gates.values():
        tools = gate.check(principal=principal, run_id=run_id, requested_user_id=requested_user_id, tools=tools)
    return tools


def hooks_ran(run: Any, outcomes: Sequence[Any]) -> None:
    """Tell the observers that ``run``'s background post-hooks ran, with their ``outcomes``."""
    for observer in _hooks_ran.values():
        observer(run, outcomes)


def continue_settled(*, principal: Principal, run_id: str, tools: list[dict[str, Any]] | None) -> None:
    for gate in _continue_gates.values():
        gate.settled(principal=principal, run_id=run_id, tools=tools)


__all__ = [
    "ContinueGate",
    "EventObserver",
    "RunEnd",
    "continue_checked",
    "continue_settled",
    "hooks_ran",
    "register_hooks_ran",
    "register_continue_gate",
    "register_run_end",
    "register_run_start",
    "registered",
    "run_ended",
    "run_started",
    "unregister",
]
