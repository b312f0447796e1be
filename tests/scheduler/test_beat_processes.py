"""The double-firing proof with real processes: two Celery workers and two beats (started by
mistake) on PostgreSQL and Redis, one beat restarted mid-minute. Over several minutes of
every-minute schedules, each (schedule, minute) fires exactly once: one ScheduleRun, one job,
one agent run, and no minute skipped.

Beat's sweep task is slowed to once an hour here, so every fire comes from the schedules' own
PeriodicTasks, which both beats send.

The processes read a wall clock RATE times faster than the real one (tests/fakes/fast_clock.py),
all the same one: beat's crontab decides what is due and the workers which minute they fire, as
ever, but a minute goes by in 60 / RATE seconds instead of the test waiting for real minute
boundaries. Leases are lengthened to match (their renewal runs on real time).
"""
from __future__ import annotations

import time
from datetime import timedelta

import pytest

from jobs.models import Job
from scheduler.models import ScheduleRun
from scheduler.services.firing import schedule_runs_settle
from scheduler.services.schedules import schedule_create
from sessions.models import Run
from tests.agents.conftest import wait_for
from tests.agents import test_celery
from tests.agents.test_celery import Cluster
from tests.fakes.fast_clock import FastClock

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres_only, pytest.mark.redis, pytest.mark.slow]

MINUTES = 3
# A minute in 10 s: well above what a tick takes from beat through Redis to a fire on a loaded
# machine (a fire that came after the next minute had begun would fire that minute, skipping one).
RATE = 6
# Lease length in the fast clock's seconds: the renewal runs on real time, a third of it.
FAST_ENV = {"SCHEDULER_TICK_SECONDS": "3600", "AGENTOS_BACKGROUND_LEASE_SECONDS": "3600", "AGENTOS_REAPER_INTERVAL_SECONDS": "60"}
cluster = test_celery.cluster  # the fixture: real workers on Redis, the web tier pointed at them


def start_beat(processes: Cluster, name: str) -> None:
    processes._start(name, ["beat", "-S", "django_celery_beat.schedulers:DatabaseScheduler", "--pidfile=", "--max-interval", "1"])
    log = processes.logs / f"{name}.log"
    wait_for(lambda: log.exists() and "beat: Starting" in log.read_text(), timeout=60, interval=0.1)


def sent(processes: Cluster, name: str) -> int:
    log = processes.logs / f"{name}.log"
    return log.read_text().count("Sending due task schedule:") if log.exists() else 0


def test_two_beats_and_a_restarted_beat_fire_each_schedule_minute_once(cluster, settings) -> None:
    clock = FastClock(RATE)
    cluster.env.update(FAST_ENV, **clock.env())
    cluster.worker("w1")
    cluster.worker("w2")
    with clock.patched():  # its next_run_at, on the processes' clock
        schedules = [
            schedule_create(owner_id=owner, name=f"every-minute-{owner}", endpoint="/agents/assistant/runs", cron_expr="* * * * *", payload={"message": f"tick for {owner}"})
            for owner in ("alice", "bob", "carol")
        ]
    start_beat(cluster, "beat1")
    start_beat(cluster, "beat2")

    def fires() -> dict[str, list]:
        return {s.pk: sorted(ScheduleRun.objects.for_user(s.user_id).filter(schedule_id=s.pk).values_list("scheduled_for", flat=True)) for s in schedules}

    # The first minute fired: restart one beat in the middle of the next minute.
    wait_for(lambda: all(fires().values()), timeout=130, interval=0.2)
    # Late in the minute (issue 32, item 5): a beat restarted between :30 and :59 sends the fire at
    # once, which must not run the next minute's tick early.
    now = clock.now()
    time.sleep(clock.real_seconds(45 - now.second) if now.second < 45 else 0)  # a moment in the minute, not a wait on a condition
    cluster.kill("beat1")
    start_beat(cluster, "beat1-again")
    wait_for(lambda: all(len(minutes) >= MINUTES for minutes in fires().values()), timeout=60 * (MINUTES + 2), interval=0.2)
    cluster.kill("beat2")
    cluster.kill("beat1-again")
    time.sleep(2)  # tasks in flight reach the workers (both beats are dead: nothing new is sent)

    def all_settled() -> bool:
        schedule_runs_settle()
        return not ScheduleRun.objects.unscoped("test").filter(status__in=["pending", "running"]).exists()

    wait_for(all_settled, timeout=90, interval=0.5)
    total = 0
    for schedule, minutes in fires().items():
        assert all(later - earlier == timedelta(minutes=1) for earlier, later in zip(minutes, minutes[1:])), (schedule, minutes)
        total += len(minutes)
    rows = list(ScheduleRun.objects.unscoped("test").values_list("run_id", "status"))
    assert all(status == "success" for _, status in rows), rows
    early = [(at, when) for at, when in ScheduleRun.objects.unscoped("test").values_list("triggered_at", "scheduled_for") if at < when]
    assert early == []  # no tick ran before its time
    run_ids = [run_id for run_id, _ in rows]
    assert len(set(run_ids)) == total == Job.objects.unscoped("test").count() == Run.objects.unscoped("test").filter(component_id="assistant").count()
    for schedule in schedules:
        owned = Run.objects.for_user(schedule.user_id).filter(input__input_content=f"tick for {schedule.user_id}").count()
        assert owned == len(fires()[schedule.pk])
    # Both beats (and the restarted one) did send the ticks: the duplicates were real, and claimed once.
    assert sent(cluster, "beat1") + sent(cluster, "beat2") + sent(cluster, "beat1-again") > total


def test_two_web_processes_tickers_fire_each_schedule_minute_once(tmp_path, settings) -> None:
    """Without a broker every web process runs the ticker: two of them (``scheduler_tick --loop``,
    the ticker and embedded worker a web process runs) over every-minute schedules, on the
    fast clock."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    clock = FastClock(RATE)
    database = settings.DATABASES["default"]
    env = {
        **os.environ, "DJANGO_SETTINGS_MODULE": "agno_site.settings.test", "REDIS_URL": "",
        "DATABASE_URL": f"postgres://{database['USER']}@{database['HOST'] or '127.0.0.1'}:{database['PORT'] or 5432}/{database['NAME']}",
        **FAST_ENV, "SCHEDULER_TICK_SECONDS": "1", **clock.env(),
    }
    with clock.patched():  # its next_run_at, on the processes' clock
        schedules = [
            schedule_create(owner_id=owner, name=f"tick-{owner}", endpoint="/agents/assistant/runs", cron_expr="* * * * *", payload={"message": f"tick for {owner}"})
            for owner in ("alice", "bob")
        ]
    processes = []
    try:
        for index in range(2):
            log = open(tmp_path / f"web{index}.log", "w")
            processes.append(subprocess.Popen(
                [sys.executable, "manage.py", "scheduler_tick", "--loop"], cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            ))

        def fires() -> dict[str, int]:
            return {s.pk: ScheduleRun.objects.for_user(s.user_id).filter(schedule_id=s.pk).count() for s in schedules}

        wait_for(lambda: all(count >= 2 for count in fires().values()), timeout=200, interval=0.2)
    finally:
        for process in processes:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)

    def all_settled() -> bool:
        schedule_runs_settle()
        return not ScheduleRun.objects.unscoped("test").filter(status__in=["pending", "running"]).exists()

    wait_for(all_settled, timeout=60, interval=0.5)
    rows = list(ScheduleRun.objects.unscoped("test").values_list("schedule_id", "scheduled_for", "run_id", "status"))
    for schedule in schedules:
        minutes = sorted(when for schedule_id, when, _, _ in rows if schedule_id == schedule.pk)
        assert all(later - earlier == timedelta(minutes=1) for earlier, later in zip(minutes, minutes[1:])), minutes
    assert len({run_id for _, _, run_id, _ in rows}) == len(rows) == Job.objects.unscoped("test").count()
    assert {status for *_, status in rows} == {"success"}
