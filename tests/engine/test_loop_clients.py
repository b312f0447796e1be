"""A provider's SDK clients per event loop: light traffic keeps to one connection pool, calls in
flight beyond POOL_CALLS spread over up to MODEL_HTTP_POOLS pools."""
from __future__ import annotations

import asyncio
import itertools

from engine.models._common import POOL_CALLS, LoopClients


def _clients() -> LoopClients:
    numbers = itertools.count()
    return LoopClients(lambda: f"client-{next(numbers)}")


def test_calls_one_after_another_share_one_client() -> None:
    clients = _clients()

    async def calls() -> list[str]:
        used = []
        for _ in range(5):
            client, release = clients.take()
            used.append(client)
            release()
        return used

    assert asyncio.run(calls()) == ["client-0"] * 5


def test_calls_in_flight_spread_over_pools_up_to_the_limit_then_the_least_busy(monkeypatch) -> None:
    monkeypatch.setenv("MODEL_HTTP_POOLS", "3")
    clients = _clients()

    async def calls() -> tuple[list[str], list[str], str]:
        held = [clients.take() for _ in range(3 * POOL_CALLS)]
        used = [client for client, _ in held]
        for client, release in held[:5]:  # client-0 has five calls fewer
            release()
            release()  # a second release changes nothing
        then = [clients.take()[0] for _ in range(7)]
        for client, release in held[POOL_CALLS:POOL_CALLS + 10]:  # client-1: ten fewer
            release()
        return used, then, clients.take()[0]

    used, then, least_busy = asyncio.run(calls())
    assert [used.count(f"client-{n}") for n in range(3)] == [POOL_CALLS] * 3
    # client-0 has room for five; then every pool is full and the least busy is taken (in order).
    assert then == ["client-0"] * 5 + ["client-0", "client-1"]
    assert least_busy == "client-1"  # the first pool with room


def test_each_event_loop_has_its_own_clients() -> None:
    clients = _clients()

    async def one() -> str:
        client, release = clients.take()
        release()
        return client

    assert asyncio.run(one()) != asyncio.run(one())
