"""Every process heals itself after the database drops its connections (issue 32, item 1).

``pg_terminate_backend`` on every session of the test database but the test's own: a failover,
a restart, a proxy that cut idle connections. The next use of the database in each process (a
Celery worker's periodic tasks and job loop, the web tier, the embedded worker's reaper and job
loop, the ticker) must succeed, with nothing worse than a log line; no restart.
"""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from jobs.models import Job, JobStatus
from jobs.services.reaper import WORKER_LOST
from scheduler.models import Schedule, ScheduleRun
from scheduler.services.schedules import schedule_create
from sessions.models import Run
from tests.agents import test_celery
from tests.agents.conftest import wait_for
from tests.agents.test_celery import ended, submit

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres_only]

cluster = test_celery.cluster  # the fixture: real workers on Redis, the web tier pointed at them


def terminate_other_sessions() -> int:
    """End every other session of this database, as a restart of PostgreSQL would."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


def lost_job(run_id: str) -> None:
    """The run's job as a lost worker leaves it: RUNNING, its lease expired."""
    Job.objects.unscoped("test").filter(pk=run_id).update(
        status=JobStatus.RUNNING, locked_by="gone-1", attempt=1, max_attempts=1, lease_expires_at=timezone.now() - timedelta(seconds=5),
    )
    Run.objects.unscoped("test").filter(pk=run_id).update(status="RUNNING")


def due_schedule(owner: str) -> Schedule:
    schedule = schedule_create(owner_id=owner, name=f"reset-{owner}", endpoint="/agents/openai-agent/runs", cron_expr="* * * * *", payload={"message": "tick"})
    make_due(schedule)
    return schedule


def make_due(schedule: Schedule) -> None:
    """Its tick came a minute ago (no waiting for a minute boundary)."""
    Schedule.objects.unscoped("test").filter(pk=schedule.pk).update(next_run_at=timezone.now().replace(second=0, microsecond=0) - timedelta(minutes=1))


def fires(schedule: Schedule) -> int:
    return ScheduleRun.objects.unscoped("test").filter(schedule_id=schedule.pk).count()


@pytest.mark.redis
@pytest.mark.slow
def test_a_celery_worker_recovers_from_terminated_connections(live_api, cluster, fake_openai) -> None:
    from jobs.tasks import reap_jobs
    from scheduler.tasks import fire_schedule

    cluster.worker("w1")
    # The worker has used the database: a run, a reaper pass and a schedule's fire.
    first = submit(live_api, message="before", session_id="reset-1")["run_id"]
    assert wait_for(lambda: ended(first), timeout=60) == "COMPLETED"
    schedule = due_schedule("alice")
    fire_schedule.delay(schedule.pk)
    wait_for(lambda: fires(schedule) == 1, timeout=30)

    assert terminate_other_sessions() > 0

    # The next reaper pass fails the lost run, with its reason.
    lost = submit(live_api, message="lost", session_id="reset-2")["run_id"]
    wait_for(lambda: ended(lost), timeout=60)
    lost_job(lost)
    reap_jobs.delay()
    wait_for(lambda: Job.objects.unscoped("test").get(pk=lost).status == JobStatus.FAILED, timeout=30)
    assert Run.objects.unscoped("test").get(pk=lost).error == WORKER_LOST
    # The next fire of a schedule fires it.
    later = due_schedule("bob")
    fire_schedule.delay(later.pk)
    wait_for(lambda: fires(later) == 1, timeout=30)
    # And a run submitted now completes.
    after = submit(live_api, message="after", session_id="reset-3")["run_id"]
    assert wait_for(lambda: ended(after), timeout=60) == "COMPLETED"


def test_the_embedded_worker_recovers_from_terminated_connections(live_api, worker, settings, fake_openai) -> None:
    """Without a broker: the web process's reaper, job loop and ticker, after the reset."""
    from scheduler.ticker import Ticker

    settings.EMBEDDED_WORKER = True
    settings.SCHEDULER_TICK_SECONDS = 0.2
    embedded = worker().start()
    ticker = Ticker()
    ticker._enabled_override = True
    ticker.start()
    try:
        # Each thread has used the database: a run, a reaper pass that failed a lost run, a fire.
        first = submit(live_api, message="before", session_id="reset-e1")["run_id"]
        embedded.wake()
        assert wait_for(lambda: ended(first), timeout=30) == "COMPLETED"
        lost_job(first)
        wait_for(lambda: Job.objects.unscoped("test").get(pk=first).status == JobStatus.FAILED, timeout=30)
        schedule = due_schedule("alice")
        wait_for(lambda: fires(schedule) == 1, timeout=30)

        assert terminate_other_sessions() > 0

        lost = submit(live_api, message="lost", session_id="reset-e2")["run_id"]
        embedded.wake()
        assert wait_for(lambda: ended(lost), timeout=30) == "COMPLETED"
        lost_job(lost)
        wait_for(lambda: Job.objects.unscoped("test").get(pk=lost).status == JobStatus.FAILED, timeout=30)
        later = due_schedule("bob")
        wait_for(lambda: fires(later) == 1, timeout=30)
        assert embedded.running and ticker.running
    finally:
        ticker.stop()
