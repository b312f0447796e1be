"""Submitting background runs for bench.background: as fast as a concurrency allows, or paced."""
from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass

import httpx

AGENT_ID = "bench-agent"
USER_ID = "bench-user"


@dataclass
class Submission:
    sent: float  # epoch seconds
    received: float
    run_id: str | None  # None: not accepted
    error: str | None = None


async def _post(client: httpx.AsyncClient, number: int) -> Submission:
    form = {
        "message": f"Background question {number}",
        "stream": "false",
        "background": "true",
        "session_id": str(uuid.uuid4()),  # one session per run: nothing waits for its session
        "user_id": USER_ID,
    }
    sent = time.time()
    try:
        response = await client.post(f"/agents/{AGENT_ID}/runs", data=form)
        received = time.time()
        if response.status_code != 202:
            return Submission(sent, received, None, f"HTTP {response.status_code}: {response.text[:200]}")
        body = response.json()
        if body.get("status") != "PENDING":
            return Submission(sent, received, None, f"status {body.get('status')}: {response.text[:200]}")
        return Submission(sent, received, body["run_id"])
    except (httpx.HTTPError, ValueError, KeyError) as exc:
        return Submission(sent, time.time(), None, f"{type(exc).__name__}: {exc}")


def _client(base_url: str, connections: int) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.AsyncClient(base_url=base_url, timeout=60, limits=limits)


async def submit_burst(base_url: str, count: int, concurrency: int) -> list[Submission]:
    submissions: list[Submission] = []
    issued = 0
    async with _client(base_url, concurrency) as client:
        async def sender() -> None:
            nonlocal issued
            while issued < count:
                issued += 1
                submissions.append(await _post(client, issued))

        await asyncio.gather(*(sender() for _ in range(concurrency)))
    return submissions


async def submit_paced(base_url: str, rate: float, seconds: float) -> list[Submission]:
    """Open loop: run i is sent at i / rate seconds, whether or not earlier ones were answered."""
    async with _client(base_url, 64) as client:
        start = time.perf_counter()

        async def one(number: int) -> Submission:
            await asyncio.sleep(max(0.0, start + number / rate - time.perf_counter()))
            return await _post(client, number)

        return list(await asyncio.gather(*(one(i) for i in range(round(rate * seconds)))))


def run_async(coroutine):
    try:
        from uvloop import run as run_loop
    except ImportError:
        run_loop = asyncio.run
    return run_loop(coroutine)
