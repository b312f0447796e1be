"""Fixtures for the runtime tests: an injected clock and sleep, the fake provider servers, a
RunContext factory and an in-memory MemoryStore. Nothing here needs Django."""
from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from engine import RunContext
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.openai_server import FakeOpenAIServer

NOW = 1_796_031_773.0


class FakeClock:
    """Epoch seconds that only move when a test says so."""

    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class SleepRecorder:
    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


class FakeMemoryStore:
    """A MemoryStore over a dict, as the Django service will be over the ORM."""

    def __init__(self, memories: list[dict[str, Any]] | None = None) -> None:
        self.memories: dict[str, dict[str, Any]] = {m["memory_id"]: dict(m) for m in memories or []}
        self._ids = itertools.count(1)
        self.calls: list[tuple[str, Any]] = []

    def add(self, memory: str, topics: list[str], input: str) -> dict[str, Any]:
        memory_id = f"mem-{next(self._ids)}"
        self.memories[memory_id] = {"memory_id": memory_id, "memory": memory, "topics": topics, "input": input}
        self.calls.append(("add", memory))
        return dict(self.memories[memory_id])

    def update(self, memory_id: str, memory: str, topics: list[str]) -> dict[str, Any]:
        self.memories[memory_id].update(memory=memory, topics=topics)
        self.calls.append(("update", memory_id))
        return dict(self.memories[memory_id])

    def delete(self, memory_id: str) -> None:
        del self.memories[memory_id]
        self.calls.append(("delete", memory_id))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


@pytest.fixture
def make_ctx(clock: FakeClock, sleeps: SleepRecorder):
    def factory(**overrides: Any) -> RunContext:
        values: dict[str, Any] = {"run_id": "run-1", "session_id": "sess-1", "user_id": "alice", "clock": clock, "sleep": sleeps}
        values.update(overrides)
        return RunContext(**values)

    return factory


@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        yield server


@pytest.fixture
def anthropic_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        yield server
