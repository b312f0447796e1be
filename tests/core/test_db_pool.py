"""PostgreSQL connections are pooled and bounded per process, whatever the number of runs in flight.

A run waiting on its model holds no connection (core.db.release_connections); a process never
opens more than DB_POOL_MAX_SIZE; when none is free within DB_POOL_TIMEOUT the request answers 503
with Retry-After in the AgentOS shape, and the next request after one frees up is served.
"""
from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from django.db import connection

from core.db import release_connections
from tests.agents.conftest import wait_for
from tests.api.sse import parse_sse
from tests.conftest import run_async

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres_only]

ROOT = Path(__file__).resolve().parents[2]


def test_a_released_connection_goes_back_to_the_pool():
    pool = connection.pool
    assert pool is not None, "PostgreSQL runs with the pool on by default (DB_POOL)"
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    in_use = pool.get_stats()["pool_size"] - pool.get_stats()["pool_available"]
    assert connection.connection is not None
    release_connections()
    assert connection.connection is None
    assert pool.get_stats()["pool_size"] - pool.get_stats()["pool_available"] == in_use - 1


def test_a_connection_in_a_transaction_is_kept():
    from django.db import transaction

    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        release_connections()
        assert connection.connection is not None


def test_an_exhausted_pool_answers_503_then_recovers(client):
    pool = connection.pool
    connection.close()  # this thread's connection back, so the pool holds every connection
    pool.wait()
    held = []
    timeout, pool.timeout = pool.timeout, 0.3
    try:
        # Take every connection the pool may ever open: the request finds none within its wait.
        held = [pool.getconn() for _ in range(pool.max_size)]
        response = client.get("/sessions", {"limit": 5, "page": 1})
        assert response.status_code == 503, response.content
        assert response.json() == {"detail": "The database is unavailable; try again shortly"}
        assert int(response["Retry-After"]) >= 1
        for conn in held:
            pool.putconn(conn)
        held = []
        response = client.get("/sessions", {"limit": 5, "page": 1})
        assert response.status_code == 200, response.content
    finally:
        for conn in held:
            pool.putconn(conn)
        pool.timeout = timeout


def _backends(dbname: str, application: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND application_name = %s", [dbname, application])
        return int(cursor.fetchone()[0])


@pytest.mark.slow
def test_many_slow_streams_stay_within_the_pool(settings, tmp_path):
    """80 streamed runs in flight at once on a slow model, through one server process whose pool
    holds at most 4 connections: every run completes, and the server never opens a fifth."""
    database = settings.DATABASES["default"]
    application = f"agno-pool-test-{os.getpid()}"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "agno_site.settings.test",
        "DATABASE_URL": f"postgres://{database['USER']}@{database['HOST'] or '127.0.0.1'}:{database['PORT'] or 5432}/{database['NAME']}?application_name={application}",
        "DB_POOL_MAX_SIZE": "4",
        "DB_POOL_MIN_SIZE": "1",
        "RUN_THREADS": "96",
        "EMBEDDED_WORKER_THREADS": "0",
        "VAR_DIR": str(tmp_path),
    }
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(port)],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    peak = 0
    stop = threading.Event()

    def watch() -> None:
        nonlocal peak
        from django.db import connections

        try:
            while not stop.is_set():
                peak = max(peak, _backends(database["NAME"], application))
                time.sleep(0.05)
        finally:
            connections.close_all()

    try:
        wait_for(lambda: _healthy(base), timeout=60, interval=0.2)
        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            results = run_async(lambda: _streams(base, 80))
        finally:
            stop.set()
            watcher.join()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=20)
    failures = [result for result in results if result != "RunCompleted"]
    assert failures == [], log.read_text()[-3000:]
    assert 1 <= peak <= 4, f"the server held {peak} connections"


def _healthy(base: str) -> bool:
    try:
        return httpx.get(f"{base}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


async def _streams(base: str, count: int) -> list[str]:
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:

        async def one(index: int) -> str:
            response = await client.post("/agents/assistant/runs", data={"message": "/slow 2", "user_id": f"user-{index}"})
            if response.status_code != 200:
                return f"HTTP {response.status_code}: {response.text[:200]}"
            events = parse_sse(response.text)
            return events[-1][0] if events else "no events"

        return await asyncio.gather(*(one(index) for index in range(count)))
