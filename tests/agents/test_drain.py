"""Celery's drain task fits its time limit, and recovery sends work to every free worker at once."""
from __future__ import annotations

import os

import httpx
import pytest

from agents.models import Job, JobStatus
from agents.tasks import drain_queue, reap_jobs
from tests.conftest import require_service

pytestmark = pytest.mark.django_db(transaction=True)


def _queue(base: str, count: int) -> list[str]:
    """``count`` background runs, each in a session of its own, accepted while nothing executes."""
    run_ids = []
    for index in range(count):
        response = httpx.post(
            f"{base}/agents/assistant/runs", data={"message": f"job {index}", "stream": "false", "background": "true", "user_id": f"user-{index}"}, timeout=30,
        )
        assert response.status_code == 202, response.text
        run_ids.append(response.json()["run_id"])
    return run_ids


def _statuses(run_ids: list[str]) -> list[str]:
    by_id = dict(Job.objects.unscoped("test").filter(pk__in=run_ids).values_list("id", "status"))
    return sorted(by_id[run_id] for run_id in run_ids)


def test_drain_stops_claiming_when_its_time_limit_has_no_room_for_another_job(live_api, worker, settings, monkeypatch):
    settings.EMBEDDED_WORKER_THREADS = 0
    run_ids = _queue(live_api, 3)
    # A job may take 30 s and the task is stopped at 45 s: once one job is done, no room is left
    # for a whole second one, so the task hands the rest of the queue on instead of claiming it.
    settings.AGENTOS_BACKGROUND_TIMEOUT_SECONDS = 30
    monkeypatch.setattr(drain_queue, "soft_time_limit", 45)
    monkeypatch.setattr("agents.tasks._clock", _clock(step=20.0))
    assert drain_queue() == 1
    assert _statuses(run_ids) == [JobStatus.COMPLETED, JobStatus.QUEUED, JobStatus.QUEUED]
    monkeypatch.setattr(drain_queue, "soft_time_limit", 10_000)
    assert drain_queue() == 2
    assert _statuses(run_ids) == [JobStatus.COMPLETED] * 3


def _clock(*, step: float):
    """A monotonic clock that moves ``step`` seconds at every reading (each job 'takes' that long)."""
    now = [1000.0]

    def read() -> float:
        now[0] += step
        return now[0]

    return read


@pytest.mark.redis
def test_the_reaper_sends_a_drain_task_for_every_job_that_can_start(live_api, worker, settings):
    import redis

    from agno_site.celery import app

    settings.EMBEDDED_WORKER_THREADS = 0
    _queue(live_api, 5)
    url = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    client = redis.Redis.from_url(url)
    try:
        client.ping()
    except redis.ConnectionError:
        require_service("Redis", f"cannot reach {url}")
    client.delete("celery")
    settings.REDIS_URL = url
    previous = app.conf.broker_url
    app.conf.broker_url, app._pool, app.amqp._producer_pool = url, None, None
    try:
        settings.AGENTOS_BACKGROUND_MAX_CONCURRENCY = 3
        reap_jobs()
        assert client.llen("celery") == 3  # as many as the global cap lets start, not one per pass
        client.delete("celery")
        settings.AGENTOS_BACKGROUND_MAX_CONCURRENCY = 32
        reap_jobs()
        assert client.llen("celery") == 5
    finally:
        client.delete("celery")
        app.conf.broker_url, app._pool, app.amqp._producer_pool = previous, None, None
