"""Retries with backoff, then fallback models, on retryable errors only."""
from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from engine import Agent, RetryableModelError, get_model
from engine.models import Model, ModelChain, TextDelta, Usage
from tests.fakes.openai_server import Failure, FakeOpenAIServer, Reply
from tests.engine.helpers import drain, names


@pytest.fixture
def backup_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def agent_with_fallback(primary_url: str, backup_url: str, retries: int = 1) -> Agent:
    return Agent(
        id="assistant",
        model=get_model("openai:primary-model", base_url=primary_url),
        fallback_models=[get_model("openai:backup-model", base_url=backup_url)],
        model_retries=retries,
    )


def test_5xx_is_retried_with_backoff_then_the_fallback_answers(make_ctx, sleeps, openai_server, backup_server):
    openai_server.push(Failure(500, "primary down"), Failure(503, "still down"))
    backup_server.push(Reply(text="Backup here.", usage=(7, 2)))
    run = agent_with_fallback(openai_server.base_url, backup_server.base_url).start_run("hi", make_ctx())

    events = drain(run)

    assert len(openai_server.requests) == 2 and len(backup_server.requests) == 1
    assert sleeps.calls == [0.5]
    assert run.output["content"] == "Backup here."
    assert run.output["metrics"]["details"] == {
        "model": [{"input_tokens": 7, "output_tokens": 2, "total_tokens": 9, "id": "backup-model", "provider": "OpenAI"}]
    }
    started = next(e for e in events if e["event"] == "ModelRequestStarted")
    completed = next(e for e in events if e["event"] == "ModelRequestCompleted")
    assert (started["model"], completed["model"]) == ("primary-model", "backup-model")
    assert run.output["model"] == "primary-model"


def test_rate_limit_is_retried_on_the_same_model(make_ctx, sleeps, openai_server, backup_server):
    openai_server.push(Failure(429, "slow down"), Reply(text="Primary after all."))
    run = agent_with_fallback(openai_server.base_url, backup_server.base_url).start_run("hi", make_ctx())

    drain(run)

    assert run.output["content"] == "Primary after all."
    assert (len(openai_server.requests), len(backup_server.requests), sleeps.calls) == (2, 0, [0.5])


def test_401_does_not_fall_back(make_ctx, sleeps, openai_server, backup_server):
    openai_server.push(Failure(401, "Incorrect API key provided"))
    run = agent_with_fallback(openai_server.base_url, backup_server.base_url).start_run("hi", make_ctx())

    events = drain(run)

    assert names(events) == ["RunStarted", "ModelRequestStarted", "RunError"]
    assert events[-1]["content"] == "Incorrect API key provided"
    assert (len(openai_server.requests), len(backup_server.requests), sleeps.calls) == (1, 0, [])


def test_when_every_model_fails_the_run_errors_with_the_last_error(make_ctx, sleeps, openai_server, backup_server):
    openai_server.push(Failure(500, "primary down"))
    backup_server.push(Failure(502, "backup down"))
    run = agent_with_fallback(openai_server.base_url, backup_server.base_url, retries=0).start_run("hi", make_ctx())

    events = drain(run)

    assert events[-1]["event"] == "RunError" and events[-1]["content"] == "backup down"
    assert sleeps.calls == []


class BreaksMidStream(Model):
    """A provider that streams some text and then loses the connection."""

    provider = "Flaky"
    name = "BreaksMidStream"

    def __init__(self, id: str = "flaky") -> None:
        super().__init__(id)
        self.calls = 0

    async def astream(self, messages, **kwargs) -> AsyncIterator:
        self.calls += 1
        yield TextDelta("Half an ")
        raise RetryableModelError("connection reset", provider=self.provider)


class Steady(Model):
    provider = "Steady"
    name = "Steady"

    def __init__(self, id: str = "steady") -> None:
        super().__init__(id)
        self.calls = 0

    async def astream(self, messages, **kwargs) -> AsyncIterator:
        self.calls += 1
        yield TextDelta("steady answer")
        yield Usage(1, 1, 2)


def test_no_retry_or_fallback_once_content_reached_the_caller(make_ctx, sleeps):
    flaky, steady = BreaksMidStream(), Steady()
    run = Agent(id="assistant", model=flaky, fallback_models=[steady], model_retries=3).start_run("hi", make_ctx())

    events = drain(run)

    assert (flaky.calls, steady.calls, sleeps.calls) == (1, 0, [])
    assert [e.get("content") for e in events if e["event"] == "RunContent"] == ["", "Half an "]
    assert events[-1]["event"] == "RunError" and events[-1]["content"] == "connection reset"


def test_backoff_is_exponential_and_bounded():
    slept: list[float] = []

    class AlwaysDown(Model):
        provider = "Down"

        async def astream(self, messages, **kwargs):
            raise RetryableModelError("down")
            yield  # pragma: no cover

    chain = ModelChain([AlwaysDown("x")], retries=4, backoff=1.0, max_backoff=3.0, sleep=slept.append)
    with pytest.raises(RetryableModelError):
        list(chain.stream([]))
    assert slept == [1.0, 2.0, 3.0, 3.0]


def test_offline_retryable_failure_falls_back_to_another_model(make_ctx, sleeps):
    agent = Agent(id="assistant", model="offline:demo", fallback_models=[Steady()], model_retries=1)

    output = agent.run("/fail-retryable", make_ctx())

    assert output["content"] == "steady answer"
    assert sleeps.calls == [0.5]
