"""Readiness (issue 32, item 6): ``GET /ready`` answers 200 with each check's outcome when the
database is reachable and migrated, the broker (when configured) answers and some process's
reaper passed recently; otherwise 503 naming the failing check. ``GET /health`` stays AgentOS's,
looking at nothing (tests/core/test_health.py)."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from core.models import PeriodicPass
from tests.agents.conftest import wait_for, worker

__all__ = ["worker"]  # the fixture

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db(transaction=True)


def reaper_passed(seconds_ago: float = 0) -> None:
    PeriodicPass.objects.update_or_create(name=PeriodicPass.REAPER, defaults={"last_at": timezone.now() - timedelta(seconds=seconds_ago)})


def not_ready(client, check: str) -> dict:
    response = client.get("/ready")
    assert response.status_code == 503, response.content
    body = response.json()
    assert body["status"] == "not_ready" and body["error_code"] == "not_ready"
    assert body["detail"].startswith(f"Not ready: {check}: ") and body["checks"][check]["ok"] is False
    assert response["Cache-Control"] == "no-store"
    return body


@pytest.mark.parametrize("path", ["/ready", "/ready/"])
def test_ready_when_every_check_passes(client, settings, path) -> None:
    settings.REDIS_URL = None
    reaper_passed(seconds_ago=3)
    response = client.get(path)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "ready" and set(body["checks"]) == {"database", "migrations", "broker", "reaper"}
    assert all(check["ok"] for check in body["checks"].values())
    assert body["checks"]["broker"]["detail"] == "not configured (no REDIS_URL)"
    assert 3 <= body["checks"]["reaper"]["last_pass_seconds_ago"] < settings.READY_REAPER_MAX_AGE_SECONDS
    assert client.get("/health").json()["status"] == "ok"  # liveness is unchanged


@pytest.mark.redis
def test_ready_with_a_reachable_broker(client, settings) -> None:
    import redis

    url = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except redis.RedisError:
        from tests.conftest import require_service

        require_service("Redis", f"cannot reach {url}")
    settings.REDIS_URL = url
    reaper_passed()
    response = client.get("/ready")
    assert response.status_code == 200 and response.json()["checks"]["broker"] == {"ok": True}


def test_not_ready_when_the_broker_is_unreachable(client, settings) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.REDIS_URL = f"redis://127.0.0.1:{port}/0"
    reaper_passed()
    body = not_ready(client, "broker")
    assert str(port) not in body["detail"]  # the error's details go to the log, not to the caller
    assert body["checks"]["database"]["ok"] and body["checks"]["reaper"]["ok"]


def test_not_ready_before_any_reaper_pass_and_when_the_last_is_old(client, settings) -> None:
    settings.REDIS_URL = None
    assert "no reaper pass recorded yet" in not_ready(client, "reaper")["detail"]
    reaper_passed(seconds_ago=settings.READY_REAPER_MAX_AGE_SECONDS + 5)
    assert "the reaper's last pass was" in not_ready(client, "reaper")["detail"]
    reaper_passed()
    assert client.get("/ready").status_code == 200


def test_the_embedded_worker_and_the_celery_task_record_their_reaper_passes(worker, settings) -> None:
    from jobs.tasks import reap_jobs

    settings.EMBEDDED_WORKER = True
    reap_jobs()  # beat's task, as a Celery worker runs it
    first = PeriodicPass.objects.get(name=PeriodicPass.REAPER).last_at
    worker().start()  # the embedded worker's reaper, every AGENTOS_REAPER_INTERVAL_SECONDS (1 here)
    wait_for(lambda: PeriodicPass.objects.get(name=PeriodicPass.REAPER).last_at > first, timeout=20)


def test_not_ready_with_an_unapplied_migration(client, settings) -> None:
    settings.REDIS_URL = None
    reaper_passed()
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM django_migrations WHERE app = 'core' AND name = '0003_periodic_passes'")
    try:
        body = not_ready(client, "migrations")
        assert "core.0003_periodic_passes" in body["detail"] and "manage.py migrate" in body["detail"]
    finally:
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO django_migrations (app, name, applied) VALUES ('core', '0003_periodic_passes', %s)", [timezone.now()])


@pytest.mark.slow
def test_not_ready_when_the_database_is_unreachable_while_health_stays_ok(tmp_path) -> None:
    """A real server process whose database refuses connections."""
    import httpx

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        **os.environ, "DJANGO_SETTINGS_MODULE": "agno_site.settings.test", "DATABASE_URL": "postgres://postgres@127.0.0.1:1/nowhere",
        "DB_POOL_TIMEOUT": "1", "EMBEDDED_WORKER": "false", "VAR_DIR": str(tmp_path), "AGNO_SITE_IGNORE_DOTENV": "true",
    }
    env.pop("REDIS_URL", None)
    with (tmp_path / "serve.log").open("w") as log:
        server = subprocess.Popen([sys.executable, "manage.py", "serve", "--port", str(port)], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"

        def health():
            try:
                return httpx.get(f"{base}/health", timeout=5).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(health, timeout=60, interval=0.2)
        response = httpx.get(f"{base}/ready", timeout=30)
        assert response.status_code == 503, response.text
        body = response.json()
        assert body["detail"].startswith("Not ready: database: unreachable") and body["error_code"] == "not_ready"
        assert body["checks"]["migrations"] == body["checks"]["reaper"] == {"ok": False, "detail": "skipped: the database is unreachable"}
        assert "5432" not in response.text and ":1" not in body["detail"]
    finally:
        import signal

        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=10)


def test_ready_needs_no_credentials_in_any_auth_mode(client, settings) -> None:
    """A load balancer sends none: /ready is public, like /health."""
    settings.REDIS_URL = None
    settings.OS_SECURITY_KEY = "my-os-key"
    settings.AGENT_OS_AUTH_MODE = "security_key"
    assert client.get("/sessions").status_code == 401
    reaper_passed()
    assert client.get("/ready").status_code == 200
