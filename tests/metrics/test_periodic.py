"""The periodic metrics refresh: one refresh per interval however many processes ask, never two at
once, off at 0; beat's task with a broker, the embedded refresher without one."""
from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone as dt_timezone
from pathlib import Path

import pytest
from django.utils import timezone

from jobs.models import Job
from core.tenancy import ALL_USERS
from metrics.models import MetricsAggregate, MetricsRefreshState
from metrics.services import RefreshScope, metrics_refresh_periodic, refresh_finish, refresh_start
from tests.agents.conftest import wait_for
from tests.core.test_settings import load_settings

from .conftest import seed_run

UTC = dt_timezone.utc
EVERYONE = RefreshScope.of(ALL_USERS)
HOUR = 3600
# 10:20 UTC: inside the hour interval that began at 10:00.
NOW = datetime(2026, 12, 3, 10, 20, tzinfo=UTC)


def refresh_jobs() -> list[Job]:
    return list(Job.objects.unscoped("test: the metrics refresh jobs, owned by nobody").filter(job_type="metrics_refresh").order_by("created_at"))


def state() -> MetricsRefreshState:
    return MetricsRefreshState.all_users.get(scope=EVERYONE.key)


@pytest.fixture
def hourly(settings):
    settings.METRICS_REFRESH_INTERVAL_SECONDS = HOUR
    settings.EMBEDDED_WORKER = False  # the tests say when the queue runs
    return settings


@pytest.mark.django_db
def test_one_refresh_is_accepted_per_interval_however_often_it_is_asked(hourly):
    first = metrics_refresh_periodic(now=NOW)
    [job] = refresh_jobs()
    assert (job.pk, job.user_id, job.payload, job.idempotency_key) == (first, None, {"scope": "all", "user_id": None, "full": False}, "periodic:3600:498970")
    assert (state().status, state().job_id) == ("running", first)
    # The refresh ends (as its job ends it); asked again in the same hour, nothing new is queued.
    refresh_finish(scope=EVERYONE, watermark=NOW, tz="UTC")
    assert metrics_refresh_periodic(now=NOW + timedelta(minutes=39)) is None
    assert [j.pk for j in refresh_jobs()] == [first] and state().status == "completed"
    # The next hour has a refresh of its own.
    second = metrics_refresh_periodic(now=NOW + timedelta(minutes=40))
    assert second not in (None, first) and len(refresh_jobs()) == 2


@pytest.mark.django_db
def test_no_periodic_refresh_starts_while_another_refresh_of_everyone_runs(hourly):
    refresh_start(scope=EVERYONE)  # an operator's refresh, say, in flight
    assert metrics_refresh_periodic(now=NOW) is None
    assert refresh_jobs() == []
    # A user's own refresh is another scope: it does not hold back everyone's.
    refresh_finish(scope=EVERYONE, watermark=NOW, tz="UTC")
    refresh_start(scope=RefreshScope.of("alice"))
    assert metrics_refresh_periodic(now=NOW) is not None


@pytest.mark.django_db
def test_a_full_queue_skips_the_interval_and_the_status_says_why(hourly):
    from metrics.services import metrics_refresh_enqueue

    hourly.AGENTOS_BACKGROUND_MAX_QUEUE_DEPTH = 1
    metrics_refresh_enqueue(scope=RefreshScope.of("alice"))  # the one place in the queue
    assert metrics_refresh_periodic(now=NOW) is None
    assert [job.user_id for job in refresh_jobs()] == ["alice"]
    assert (state().status, state().error) == ("failed", "Job queue is full")
    # Once there is room, the same interval may still have its refresh: the key was not taken.
    hourly.AGENTOS_BACKGROUND_MAX_QUEUE_DEPTH = 10
    assert metrics_refresh_periodic(now=NOW) is not None


@pytest.mark.django_db
def test_an_interval_of_zero_turns_it_off(hourly):
    hourly.METRICS_REFRESH_INTERVAL_SECONDS = 0
    assert metrics_refresh_periodic(now=NOW) is None
    assert refresh_jobs() == [] and not MetricsRefreshState.all_users.exists()


@pytest.mark.django_db(transaction=True)
def test_processes_asking_at_once_start_one_refresh(hourly):
    asked = 6
    barrier = threading.Barrier(asked)
    accepted: list[str | None] = []

    def ask() -> None:
        from django.db import connection

        try:
            barrier.wait(timeout=10)
            accepted.append(metrics_refresh_periodic(now=NOW))
        finally:
            connection.close()

    threads = [threading.Thread(target=ask) for _ in range(asked)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(accepted) == asked
    assert [job_id for job_id in accepted if job_id] == [job.pk for job in refresh_jobs()]
    assert len(refresh_jobs()) == 1


@pytest.mark.django_db(transaction=True)
def test_the_embedded_refresher_refreshes_every_users_rows_without_a_broker(hourly, worker):
    from agno_site import lifespan
    from metrics import refresher

    seed_run("alice", timezone.now() - timedelta(hours=1))
    seed_run("bob", timezone.now() - timedelta(hours=1))
    hourly.EMBEDDED_WORKER, hourly.REDIS_URL, hourly.SCHEDULER_TICKER = True, None, False
    refresher._refresher = None
    try:
        lifespan._start()
        assert refresher.embedded_refresher().running
        done = wait_for(lambda: (s := MetricsRefreshState.all_users.filter(scope="all", status="completed").first()) and s, timeout=60)
        assert done.error == "" and len(refresh_jobs()) == 1
        assert sorted(MetricsAggregate.all_users.filter(aggregation_period="daily").values_list("user_id", flat=True)) == ["alice", "bob"]
        lifespan._stop()
        assert not refresher.embedded_refresher().running
        hourly.METRICS_REFRESH_INTERVAL_SECONDS = 0
        lifespan._start()
        assert not refresher.embedded_refresher().running
    finally:
        lifespan._stop()
        refresher._refresher = None


@pytest.mark.django_db
def test_beats_task_asks_for_the_periodic_refresh(hourly):
    from agno_site.celery import app

    # The name beat's entry sends, as a worker finds it.
    job_id = app.tasks["agno_site.metrics.refresh"].apply().get()
    assert [job.pk for job in refresh_jobs()] == [job_id]


def test_beat_sends_it_twice_per_interval_and_not_at_all_when_off(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("METRICS_REFRESH_INTERVAL_SECONDS", raising=False)  # the test settings' 0
    show = "print(settings.CELERY_BEAT_SCHEDULE.get('metrics-refresh'))"
    on = load_settings(tmp_path, "agno_site.settings.local", show=show, METRICS_REFRESH_INTERVAL_SECONDS="900")
    assert on.stdout.strip() == "{'task': 'agno_site.metrics.refresh', 'schedule': 450.0}", on.stderr
    default = load_settings(tmp_path, "agno_site.settings.local", show="print(settings.METRICS_REFRESH_INTERVAL_SECONDS)")
    assert default.stdout.strip() == "3600", default.stderr
    off = load_settings(tmp_path, "agno_site.settings.local", show=show, METRICS_REFRESH_INTERVAL_SECONDS="0")
    assert off.stdout.strip() == "None", off.stderr
    bad = load_settings(tmp_path, "agno_site.settings.local", show=show, METRICS_REFRESH_INTERVAL_SECONDS="30")
    assert bad.returncode != 0 and "METRICS_REFRESH_INTERVAL_SECONDS must be 0 (off) or at least 60, got 30" in bad.stderr
