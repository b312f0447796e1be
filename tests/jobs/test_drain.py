"""Celery's drain task fits its time limit, and recovery sends work to every free worker at once."""
from __future__ import annotations

import os

import httpx
import pytest

from jobs.models import Job, JobStatus
from jobs.tasks import drain_queue, reap_jobs
from tests.agents.conftest import wait_for
from tests.conftest import require_service

pytestmark = pytest.mark.django_db(transaction=True)


def _queue(base: str, count: int, agent: str = "assistant") -> list[str]:
    """``count`` background runs, each in a session of its own, accepted while nothing executes."""
    run_ids = []
    for index in range(count):
        response = httpx.post(
            f"{base}/agents/{agent}/runs", data={"message": f"job {index}", "stream": "false", "background": "true", "user_id": f"user-{index}"}, timeout=30,
        )
        assert response.status_code == 202, response.text
        run_ids.append(response.json()["run_id"])
    return run_ids


def _statuses(run_ids: list[str]) -> list[str]:
    by_id = dict(Job.objects.unscoped("test").filter(pk__in=run_ids).values_list("id", "status"))
    return sorted(by_id[run_id] for run_id in run_ids)


def test_drain_wakes_the_process_job_loop_and_returns_at_once(live_api, worker, settings, fake_openai):
    """A Celery task no longer runs jobs back to back under a time limit sized for one (the
    fourth of four 25 s jobs used to be killed): it wakes the process's loop, which runs them
    side by side, each bounded by AGENTOS_BACKGROUND_TIMEOUT_SECONDS through its lease. The
    model is held: a task that ran its jobs itself would not return before it is let go."""
    import threading

    from tests.fakes._base import Reply

    settings.EMBEDDED_WORKER = False
    gate = threading.Event()
    for _ in range(3):
        fake_openai.push(Reply(text="held", gate=gate, gate_after=0))
    run_ids = _queue(live_api, 3, agent="openai-agent")
    assert _statuses(run_ids) == [JobStatus.QUEUED] * 3
    try:
        drain_queue()
        drain_queue()  # sent twice (two submissions, a reaper pass): harmless
        fake_openai.wait_for_requests(3, timeout=20)  # all three at their model at once
        assert _statuses(run_ids) == [JobStatus.RUNNING] * 3
    finally:
        gate.set()
    assert wait_for(lambda: _statuses(run_ids) == [JobStatus.COMPLETED] * 3)


@pytest.mark.redis
def test_the_reaper_sends_a_drain_task_for_every_job_that_can_start(live_api, worker, settings):
    import redis

    from agno_site.celery import app

    settings.EMBEDDED_WORKER = False
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
