"""``manage.py serve`` as a real process: what its HTTP server refuses before Django sees it."""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from django.db import connection
from django.utils import timezone

from tests.agents.conftest import wait_for
from tests.agents.test_short_lived_processes import database_url

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _serve_env(tmp_path, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in {"DATABASE_URL", "REDIS_URL"}}
    env.update({
        "VAR_DIR": str(tmp_path), "AGNO_SITE_IGNORE_DOTENV": "true", "DJANGO_SETTINGS_MODULE": "agno_site.settings.local",
        "EMBEDDED_WORKER": "false", "PYTHONUNBUFFERED": "1", **extra,
    })
    return env


@pytest.fixture
def served(tmp_path, settings, django_db_setup) -> Iterator[str]:
    """``manage.py serve`` on the (migrated) test database."""
    port = _free_port()
    env = _serve_env(tmp_path, DATABASE_URL=database_url(settings))
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--host", "127.0.0.1", "--port", str(port)],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _answers(base) or process.poll() is not None, timeout=60, interval=0.1)
        assert process.poll() is None, log.read_text()
        yield base
    finally:
        with contextlib.suppress(ProcessLookupError):  # it may have refused to start (the assertion says why)
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _answers(base: str) -> bool:
    try:
        return httpx.get(f"{base}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _status_of_request_with_header(base: str, size: int) -> int | None:
    """The status the server answers to GET /health carrying a ``size``-byte header, read while
    the header is still being sent (the server may answer and close before reading it all)."""
    host, port = base.removeprefix("http://").split(":")
    conn = socket.create_connection((host, int(port)), timeout=30)
    request = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * size + b"\r\nConnection: close\r\n\r\n"

    def send() -> None:
        try:
            conn.sendall(request)
        except OSError:  # refused part-way: the answer is already on its way
            pass

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    answer = b""
    try:
        while b"\r\n" not in answer:
            data = conn.recv(65536)
            if not data:
                break
            answer += data
    except OSError:
        pass
    finally:
        conn.close()
        sender.join(timeout=30)
    if not answer.startswith(b"HTTP/1.1 "):
        return None
    return int(answer.split(b" ", 2)[1])


def test_a_huge_header_is_refused_and_the_server_stays_up(served):
    assert _status_of_request_with_header(served, 32 * 1024) == 200  # a large token or cookie still fits
    assert _status_of_request_with_header(served, 8 * 1024 * 1024) in (400, 431)
    assert httpx.get(f"{served}/health", timeout=5).status_code == 200


def _serve_refused(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "serve", "--host", "127.0.0.1", "--port", str(_free_port())],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )


@pytest.mark.django_db(transaction=True)
def test_serve_refuses_a_database_older_than_the_code(tmp_path, settings) -> None:
    """Migrated only part of the way (an upgrade deployed before its migrations ran): refused
    with the cause and the fix, before anything listens, rather than a 500 on every request."""
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM django_migrations WHERE app = 'core' AND name = '0003_periodic_passes'")
    env = _serve_env(tmp_path, DATABASE_URL=database_url(settings))
    try:
        result = _serve_refused(env)
        # The production command (README: Production deployment) refuses in its lifespan.
        uvicorn = subprocess.run(
            [sys.executable, "-m", "uvicorn", "agno_site.asgi:application", "--port", str(_free_port()), "--http", "h11"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
        )
    finally:
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO django_migrations (app, name, applied) VALUES ('core', '0003_periodic_passes', %s)", [timezone.now()])
    assert result.returncode == 2, result.stdout + result.stderr
    assert "The database is older than the code: 1 unapplied migration(s): core.0003_periodic_passes" in result.stderr
    assert "Run `manage.py migrate`" in result.stderr and "Agno Site on" not in result.stdout
    assert uvicorn.returncode != 0 and "The database is older than the code" in uvicorn.stderr, uvicorn.stderr
    assert "Application startup failed" in uvicorn.stderr


def test_serve_refuses_to_start_without_a_database(tmp_path) -> None:
    result = _serve_refused(_serve_env(tmp_path))
    assert result.returncode == 2 and f"No database at {tmp_path}/db.sqlite3" in result.stderr, result.stderr
    assert not (tmp_path / "db.sqlite3").exists()
