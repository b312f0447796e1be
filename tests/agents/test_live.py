"""Live events through a real Redis channel layer: batched by the publisher, in order, none lost."""
from __future__ import annotations

import asyncio
import os

import pytest

from tests.conftest import require_service, run_async

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/13")


@pytest.fixture
def redis_layer(settings):
    import redis
    from channels.layers import channel_layers

    try:
        redis.Redis.from_url(REDIS_URL, socket_timeout=2).ping()
    except Exception as exc:
        require_service("Redis", str(exc))
    settings.REDIS_URL = REDIS_URL
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [REDIS_URL]}}}
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


@pytest.mark.redis
def test_a_burst_of_events_arrives_in_order_in_fewer_messages(redis_layer, monkeypatch) -> None:
    from channels.layers import get_channel_layer

    from agents.pipeline import live

    sent: list[int] = []

    async def scenario() -> list[dict]:
        async with live.Subscription("run-burst") as subscription:
            layer = get_channel_layer()
            original = layer.group_send

            async def counting(group, message):
                sent.append(len(message["events"]))
                await asyncio.sleep(0.01)  # a send takes a while: the next events pile up meanwhile
                return await original(group, message)

            monkeypatch.setattr(layer, "group_send", counting)
            # A lone event leaves at once, without waiting for company.
            live.publish("run-burst", {"event": "RunStarted", "event_index": 0})
            received = [await subscription.get(timeout=2)]
            assert sent == [1]
            for index in range(1, 50):
                live.publish("run-burst", {"event": "RunContent", "event_index": index})
            while len(received) < 50:
                event = await subscription.get(timeout=5)
                assert event is not None, f"only {len(received)} events arrived"
                received.append(event)
            return received

    # The publisher's loop is a process-wide thread; the subscriber gets a loop of its own.
    received = run_async(scenario)
    assert [event["event_index"] for event in received] == list(range(50))
    assert sum(sent) == 50
    assert len(sent) < 10, sent  # the burst travelled in a few messages, not 49


@pytest.mark.redis
def test_events_of_two_runs_reach_only_their_own_followers(redis_layer) -> None:
    from agents.pipeline import live

    async def scenario():
        async with live.Subscription("run-a") as a, live.Subscription("run-b") as b:
            for index in range(3):
                live.publish("run-a", {"event_index": index, "run": "a"})
                live.publish("run-b", {"event_index": index, "run": "b"})
            got_a = [await a.get(timeout=5) for _ in range(3)]
            got_b = [await b.get(timeout=5) for _ in range(3)]
            extra = await a.get(timeout=0.3)
            return got_a, got_b, extra

    got_a, got_b, extra = run_async(scenario)
    assert [(e["run"], e["event_index"]) for e in got_a] == [("a", 0), ("a", 1), ("a", 2)]
    assert [(e["run"], e["event_index"]) for e in got_b] == [("b", 0), ("b", 1), ("b", 2)]
    assert extra is None


@pytest.mark.redis
def test_a_run_nobody_follows_costs_no_messages_until_someone_does(redis_layer, monkeypatch) -> None:
    from channels.layers import get_channel_layer

    from agents.pipeline import live

    sent: list[str] = []

    async def scenario() -> tuple[list[str], dict]:
        layer = get_channel_layer()
        original = layer.group_send

        async def counting(group, message):
            sent.append(group)
            return await original(group, message)

        monkeypatch.setattr(layer, "group_send", counting)
        live.publish("run-unfollowed", {"event": "RunStarted", "event_index": 0})
        await asyncio.sleep(0.3)  # long enough for the publisher to have sent it, had anyone listened
        before = list(sent)
        async with live.Subscription("run-unfollowed") as follower:
            await asyncio.sleep(live.FOLLOWERS_RECHECK_SECONDS)  # the publisher looks again
            live.publish("run-unfollowed", {"event": "RunContent", "event_index": 1})
            return before, await follower.get(timeout=5)

    before, received = run_async(scenario)
    assert before == []  # nobody followed: no group message
    assert received["event_index"] == 1 and sent == ["run.run-unfollowed"]
