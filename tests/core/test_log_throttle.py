"""core.logging.Throttle: a repeating failure is logged when it starts, then at most every N s."""
from __future__ import annotations

from core import logging as core_logging
from core.logging import Throttle


def test_due_once_per_interval(monkeypatch) -> None:
    clock = {"now": 1000.0}
    monkeypatch.setattr(core_logging.time, "monotonic", lambda: clock["now"])
    throttle = Throttle(30.0)
    assert throttle.due() is True  # the first failure is always logged
    clock["now"] += 29.9
    assert throttle.due() is False
    clock["now"] += 0.2
    assert throttle.due() is True
    assert throttle.due() is False


def test_a_new_throttle_is_due_even_at_the_clock_origin(monkeypatch) -> None:
    monkeypatch.setattr(core_logging.time, "monotonic", lambda: 0.0)  # a fresh machine's clock
    assert Throttle(30.0).due() is True
