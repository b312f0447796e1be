"""PostgreSQL connections are pooled and bounded per process, whatever the number of runs in flight.

A run waiting on its model holds no connection (core.db.release_connections); a process never
opens more than DB_POOL_MAX_SIZE; when none is free within DB_POOL_TIMEOUT the request answers 503
with Retry-After in the AgentOS shape, and the next request after one frees up is served.
"""
from __future__ import annotations

import asyncio
import contextlib
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
from psycopg_pool import PoolTimeout

from core.db import release_connections
from tests.agents.conftest import wait_for
from tests.api.sse import parse_sse
from tests.conftest import run_async
from tests.fakes._base import Reply

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
        # Take every connection the pool will give (others may hold some: a run of an earlier
        # test finishing, the watch): the request then finds none within its wait.
        with contextlib.suppress(PoolTimeout):
            while True:
                held.append(pool.getconn(timeout=0.3))
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


class PeakBackends:
    """``with PeakBackends(db, application) as seen:`` samples, in a thread, how many connections
    the named application holds; ``seen.peak`` is the most it held at once."""

    def __init__(self, dbname: str, application: str) -> None:
        self.dbname, self.application, self.peak = dbname, application, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample)

    def _sample(self) -> None:
        from django.db import connections

        try:
            while not self._stop.is_set():
                self.peak = max(self.peak, _backends(self.dbname, self.application))
                time.sleep(0.05)
        finally:
            connections.close_all()

    def __enter__(self) -> PeakBackends:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _server(settings, tmp_path, application: str, **extra: str) -> tuple[subprocess.Popen, str, Path]:
    """``manage.py serve`` on the test database, its pool bounded, its connections named."""
    database = settings.DATABASES["default"]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "agno_site.settings.test",
        "DATABASE_URL": f"postgres://{database['USER']}@{database['HOST'] or '127.0.0.1'}:{database['PORT'] or 5432}/{database['NAME']}?application_name={application}",
        "DB_POOL_MAX_SIZE": "4",
        "DB_POOL_MIN_SIZE": "1",
        "EMBEDDED_WORKER": "false",
        "VAR_DIR": str(tmp_path),
        **extra,
    }
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(port)],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    wait_for(lambda: _healthy(base), timeout=60, interval=0.2)
    return server, base, log


def _stop(server: subprocess.Popen) -> None:
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:  # still draining: the test's own failure is the one to see
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=10)


@pytest.mark.slow
def test_many_slow_streams_stay_within_the_pool(settings, tmp_path):
    """80 streamed runs in flight at once on a slow model, through one server process whose pool
    holds at most 4 connections: every run completes, and the server never opens a fifth."""
    application = f"agno-pool-test-{os.getpid()}"
    server, base, log = _server(settings, tmp_path, application, RUN_THREADS="96")
    try:
        with PeakBackends(settings.DATABASES["default"]["NAME"], application) as backends:
            results = run_async(lambda: _streams(base, 80, agent="assistant", message="/slow 2"))
    finally:
        _stop(server)
    failures = [result for result in results if result != "RunCompleted"]
    assert failures == [], log.read_text()[-3000:]
    assert 1 <= backends.peak <= 4, f"the server held {backends.peak} connections"


@pytest.mark.slow
def test_runs_arriving_while_others_wait_for_their_first_token_all_complete(settings, tmp_path, fake_openai):
    """The model holds every answer before its first token. The first 60 runs go quiet (their
    RunStarted is written by the process's watch thread), then 60 more arrive: the watch, writing,
    and the newcomers, storing their runs, share a pool of 4. Nobody may hold a connection while
    waiting for the other (that starved the pool until its timeout failed the runs)."""
    gate = threading.Event()
    fake_openai.default = Reply(text="one two three", gate=gate, gate_after=0, gate_timeout=60)
    server, base, log = _server(
        settings, tmp_path, f"agno-pool-order-{os.getpid()}", RUN_THREADS="160", DB_POOL_TIMEOUT="3",
        OPENAI_BASE_URL=fake_openai.base_url, OPENAI_API_KEY="test-key",
    )
    from sessions.models import Run

    results: list[str] = []
    try:
        def first_wave() -> None:
            results.extend(run_async(lambda: _streams(base, 60, agent="openai-agent", message="hold on", first_user=0)))

        def second_wave() -> None:
            results.extend(run_async(lambda: _streams(base, 60, agent="openai-agent", message="hold on", first_user=60)))

        waves = [threading.Thread(target=first_wave)]
        waves[0].start()
        wait_for(lambda: Run.objects.unscoped("test").filter(status="RUNNING").count() >= 60, timeout=60, interval=0.1)
        # They are quiet now: the watch writes their first events while the next wave arrives.
        waves.append(threading.Thread(target=second_wave))
        waves[1].start()
        wait_for(lambda: Run.objects.unscoped("test").filter(status="RUNNING").count() + len(results) >= 120, timeout=60, interval=0.1)
        gate.set()
        for wave in waves:
            wave.join(90)
    finally:
        gate.set()
        _stop(server)
    failures = [result for result in results if result != "RunCompleted"]
    assert (len(results), failures) == (120, []), log.read_text()[-3000:]


@pytest.mark.slow
def test_1024_streams_in_flight_fit_a_100_connection_postgres(settings, tmp_path, fake_openai):
    """1,024 streamed runs all waiting on their model at once, in one server process, against
    PostgreSQL's default max_connections=100: every run completes (0 errors), and the server
    never holds more than its pool's DB_POOL_MAX_SIZE connections (10, the default)."""
    gate = threading.Event()
    fake_openai.default = Reply(text="one two three", gate=gate, gate_after=0, gate_timeout=120)
    application = f"agno-pool-1024-{os.getpid()}"
    server, base, log = _server(
        settings, tmp_path, application, DB_POOL_MAX_SIZE="10", OPENAI_BASE_URL=fake_openai.base_url, OPENAI_API_KEY="test-key",
    )
    from sessions.models import Run

    results: list[str] = []
    raised: list[BaseException] = []

    def send() -> None:
        try:
            results.extend(asyncio.run(_streams(base, 1024, agent="openai-agent", message="hold on")))
        except BaseException as exc:  # reported below, with the server's log
            raised.append(exc)

    streams = threading.Thread(target=send)
    try:
        with PeakBackends(settings.DATABASES["default"]["NAME"], application) as backends:
            streams.start()
            # All 1,024 are stored RUNNING and waiting on the model at the same moment.
            wait_for(lambda: Run.objects.unscoped("test").filter(status="RUNNING").count() >= 1024, timeout=150, interval=0.5)
            gate.set()
            streams.join(180)
    finally:
        gate.set()
        _stop(server)
    failures = [result for result in results if result != "RunCompleted"]
    assert (raised, len(results), failures[:5], len(failures)) == ([], 1024, [], 0), log.read_text()[-3000:]
    assert 1 <= backends.peak <= 10, f"the server held {backends.peak} connections"


def _healthy(base: str) -> bool:
    try:
        return httpx.get(f"{base}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


async def _streams(base: str, count: int, *, agent: str, message: str, first_user: int = 0) -> list[str]:
    # No client-side cap (httpx's default pool is 100 connections): every stream is in flight.
    async with httpx.AsyncClient(base_url=base, timeout=180, limits=httpx.Limits(max_connections=None, max_keepalive_connections=None)) as client:

        async def one(index: int) -> str:
            response = await client.post(f"/agents/{agent}/runs", data={"message": message, "user_id": f"user-{first_user + index}"})
            if response.status_code != 200:
                return f"HTTP {response.status_code}: {response.text[:200]}"
            events = parse_sse(response.text)
            return events[-1][0] if events else "no events"

        return await asyncio.gather(*(one(index) for index in range(count)))


def test_a_process_stopped_inside_a_transaction_does_not_hold_the_queue_lock_for_good():
    """A worker frozen mid-claim (SIGSTOP) would keep the job queue's advisory lock and stall every
    submission: PostgreSQL ends its session after DB_IDLE_IN_TRANSACTION_TIMEOUT, which frees it."""
    import psycopg

    from jobs.services.jobs import QUEUE_LOCK_KEY

    with connection.cursor() as cursor:
        cursor.execute("SHOW idle_in_transaction_session_timeout")
        assert cursor.fetchone()[0] == "1min"  # the default, on every connection of the pool
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    params["options"] = "-c idle_in_transaction_session_timeout=500"  # the same setting, shorter
    frozen = psycopg.connect(**{key: value for key, value in params.items() if key in ("dbname", "user", "host", "port", "password", "options")})
    frozen.execute("SELECT pg_advisory_xact_lock(%s)", [QUEUE_LOCK_KEY])  # and then it stops, in its transaction

    def lock_is_free() -> bool:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [QUEUE_LOCK_KEY])
            taken = cursor.fetchone()[0]
            if taken:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [QUEUE_LOCK_KEY])
            return taken

    assert not lock_is_free()
    assert wait_for(lock_is_free, timeout=10)
    with pytest.raises(psycopg.errors.IdleInTransactionSessionTimeout):
        frozen.execute("SELECT 1")  # its session was ended
    frozen.close()
