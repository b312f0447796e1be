"""Firing: claimed once, submitted as the owner's background run, followed to its end, retried,
missed ticks run once, a vanished target disables its schedule, and the embedded ticker fires."""
from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone as dt_timezone

import pytest
from django.db import connections
from django.utils import timezone

from jobs.models import Job, JobStatus
from agents.services.definitions import definition_create
from scheduler.models import Schedule, ScheduleRun, ScheduleRunStatus
from scheduler.services.firing import early_tick, fire, fire_due, schedule_runs_settle, schedule_trigger, scheduler_tick
from scheduler.services.schedules import ScheduleConflict, schedule_create, schedule_disable
from sessions.models import Run
from tests.agents.conftest import wait_for

pytestmark = pytest.mark.django_db(transaction=True)
UTC = dt_timezone.utc


def create(owner: str = "alice", **fields) -> Schedule:
    fields.setdefault("name", "every-minute")
    fields.setdefault("endpoint", "/agents/assistant/runs")
    fields.setdefault("cron_expr", "* * * * *")
    fields.setdefault("payload", {"message": "scheduled hello"})
    return schedule_create(owner_id=owner, **fields)


def runs_of(schedule: Schedule) -> list[ScheduleRun]:
    return list(ScheduleRun.objects.for_user(schedule.user_id).filter(schedule_id=schedule.pk).order_by("scheduled_for"))


def set_next_run(schedule: Schedule, when: datetime) -> None:
    Schedule.objects.for_user(schedule.user_id).filter(pk=schedule.pk).update(next_run_at=when)


def settled(schedule: Schedule) -> ScheduleRun | None:
    schedule_runs_settle()
    runs = runs_of(schedule)
    return runs[-1] if runs and not runs[-1].open else None


def test_a_fire_is_the_owners_background_run_followed_to_its_end(worker) -> None:
    schedule = create(timeout_seconds=120)
    tick = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
    claimed = fire(schedule.pk, tick)
    assert claimed is not None and (claimed.status, claimed.attempt, claimed.user_id) == (ScheduleRunStatus.RUNNING, 1, "alice")
    run = Run.objects.for_user("alice").get(pk=claimed.run_id)
    assert run.component_id == "assistant" and run.input["input_content"] == "scheduled hello"
    # Marked as the schedule's: out of the chat's conversation list.
    assert (run.origin, run.session.origin) == ("schedule", "schedule")
    job = Job.objects.for_user("alice").get(pk=claimed.run_id)
    assert (job.payload["timeout_seconds"], job.stream) == (120, False)
    done = wait_for(lambda: settled(schedule))
    assert (done.status, done.error, done.run_id, done.session_id) == (ScheduleRunStatus.SUCCESS, None, run.pk, run.session_id)
    assert done.completed_at is not None and done.duration_ms is not None and "scheduled hello" in done.output["content"]


def test_the_same_tick_fired_twice_runs_once(worker) -> None:
    schedule = create()
    tick = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
    assert fire(schedule.pk, tick) is not None
    assert fire(schedule.pk, tick) is None
    assert len(runs_of(schedule)) == 1 and Job.objects.for_user("alice").count() == 1


def test_concurrent_fires_of_one_minute_make_exactly_one_run(worker, settings) -> None:
    settings.EMBEDDED_WORKER = False  # only the claims race here; nothing needs to execute
    schedule = create()
    tick = datetime(2026, 12, 3, 9, 1, tzinfo=UTC)
    start = threading.Barrier(6)
    results: list[object] = []
    errors: list[BaseException] = []

    def racer() -> None:
        try:
            start.wait()
            results.append(fire(schedule.pk, tick))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=racer) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    assert sum(result is not None for result in results) == 1
    assert len(runs_of(schedule)) == 1 and Job.objects.for_user("alice").count() == 1


def test_a_beat_down_for_hours_runs_the_missed_fire_once(worker, settings) -> None:
    settings.EMBEDDED_WORKER = False
    schedule = create(cron_expr="0 * * * *")
    now = timezone.now().replace(second=30, microsecond=0)
    hour = now.replace(minute=0, second=0)
    set_next_run(schedule, hour - timedelta(hours=3))
    first = scheduler_tick(now=now)
    again = scheduler_tick(now=now + timedelta(seconds=15))
    assert (first["fired"], again["fired"]) == (1, 0)
    [only] = runs_of(schedule)
    assert only.scheduled_for == hour  # the latest missed tick, not the three before it
    stored = Schedule.objects.for_user("alice").get(pk=schedule.pk)
    assert stored.next_run_at == hour + timedelta(hours=1)


def test_beat_delivering_a_tick_early_or_twice_fires_it_once_and_never_early(worker, settings) -> None:
    settings.EMBEDDED_WORKER = False
    schedule = create(cron_expr="*/5 * * * *")
    tick = timezone.now().replace(second=0, microsecond=0) + timedelta(minutes=10)
    tick = tick.replace(minute=tick.minute - tick.minute % 5)
    set_next_run(schedule, tick)
    assert fire_due(schedule.pk, now=tick - timedelta(minutes=2)) is None  # not due yet
    assert fire_due(schedule.pk, now=tick - timedelta(seconds=2)) is None  # a clock a little behind: not before its time
    assert early_tick(schedule.pk, now=tick - timedelta(seconds=2)) == tick  # ...the delivery waits for it
    assert early_tick(schedule.pk, now=tick - timedelta(minutes=2)) is None
    assert fire_due(schedule.pk, now=tick).scheduled_for == tick
    assert fire_due(schedule.pk, now=tick + timedelta(seconds=3)) is None  # the second beat
    assert [run.scheduled_for for run in runs_of(schedule)] == [tick]


class Clock:
    """The scheduler's clock, injected: firing reads ``timezone.now()`` through this."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def now(self) -> datetime:
        return self.at


@pytest.fixture
def clock(monkeypatch):
    import scheduler.services.firing as firing

    fake = Clock(timezone.now())
    monkeypatch.setattr(firing, "timezone", fake)
    return fake


def test_a_beat_restarted_late_in_a_minute_fires_each_minute_once_at_its_tick(worker, settings, clock, monkeypatch) -> None:
    """Beat restarted at :45 sends the fire at once: it must not run the next minute's tick then
    (that minute would fire twice and the next not at all); it waits for that tick."""
    settings.EMBEDDED_WORKER = False
    from scheduler import tasks

    resent: list[tuple[tuple, datetime]] = []
    monkeypatch.setattr(tasks.fire_schedule, "apply_async", lambda args, eta: resent.append((args, eta)))
    schedule = create()
    minute = timezone.now().replace(second=0, microsecond=0) + timedelta(minutes=5)
    set_next_run(schedule, minute)
    clock.at = minute  # beat's fire for this minute, on time
    assert tasks.fire_schedule(schedule.pk) is True
    clock.at = minute + timedelta(seconds=45)  # beat restarts and sends at once
    assert tasks.fire_schedule(schedule.pk) is False
    assert [run.scheduled_for for run in runs_of(schedule)] == [minute]  # nothing fired 15 s early
    assert resent == [((schedule.pk,), minute + timedelta(minutes=1))]  # the delivery waits for its tick
    clock.at = minute + timedelta(minutes=1)  # the re-sent delivery (and beat's own) at the tick
    assert tasks.fire_schedule(schedule.pk) is True
    assert tasks.fire_schedule(schedule.pk) is False
    clock.at = minute + timedelta(minutes=2, seconds=1)
    assert tasks.fire_schedule(schedule.pk) is True
    runs = runs_of(schedule)
    assert [run.scheduled_for for run in runs] == [minute + timedelta(minutes=n) for n in range(3)]
    assert all(run.triggered_at >= run.scheduled_for for run in runs)  # no tick ran before its time
    assert [run.triggered_at.replace(second=0) for run in runs] == [run.scheduled_for for run in runs]  # one fire per minute
    stored = Schedule.objects.for_user("alice").get(pk=schedule.pk)
    assert stored.next_run_at == minute + timedelta(minutes=3)


def test_the_sweep_never_fires_a_tick_before_its_time(worker, settings) -> None:
    settings.EMBEDDED_WORKER = False
    schedule = create()
    minute = timezone.now().replace(second=0, microsecond=0) + timedelta(minutes=5)
    set_next_run(schedule, minute)
    assert scheduler_tick(now=minute - timedelta(seconds=20))["fired"] == 0
    assert fire_due(schedule.pk, now=minute - timedelta(seconds=20)) is None
    assert scheduler_tick(now=minute + timedelta(seconds=1))["fired"] == 1
    assert [run.scheduled_for for run in runs_of(schedule)] == [minute]


def test_a_schedule_whose_agent_was_deleted_fails_visibly_and_is_disabled(worker, settings) -> None:
    settings.EMBEDDED_WORKER = False
    definition = definition_create(agent_id="mailer", name="Mailer", model="offline:demo")
    schedule = create(endpoint="/agents/mailer/runs", max_retries=3)
    definition.delete()
    run = fire(schedule.pk, datetime(2026, 12, 3, 9, 0, tzinfo=UTC))
    assert (run.status, run.status_code, run.retry_at) == (ScheduleRunStatus.FAILED, 404, None)
    assert "Agent not found" in run.error or "mailer" in run.error
    stored = Schedule.objects.for_user("alice").get(pk=schedule.pk)
    assert stored.enabled is False and stored.next_run_at is None
    assert stored.disabled_reason.startswith("target_missing: agent 'mailer' no longer exists")
    from django_celery_beat.models import PeriodicTask

    assert PeriodicTask.objects.get(name=f"schedule:{schedule.pk}").enabled is False


def test_a_refused_attempt_is_retried_after_its_delay(worker, settings) -> None:
    settings.EMBEDDED_WORKER = False
    settings.AGENTOS_BACKGROUND_MAX_QUEUE_PER_USER = 1
    schedule = create(max_retries=1, retry_delay_seconds=30)
    blocker = fire(schedule.pk, datetime(2026, 12, 3, 8, 0, tzinfo=UTC))  # takes alice's one queue place
    assert blocker.status == ScheduleRunStatus.RUNNING
    now = timezone.now()
    refused = fire(schedule.pk, datetime(2026, 12, 3, 9, 0, tzinfo=UTC))
    assert (refused.status, refused.attempt, refused.status_code) == (ScheduleRunStatus.PENDING, 1, 429)
    assert refused.error.startswith("Job queue share is full") and refused.retry_at >= now + timedelta(seconds=29)
    assert schedule_runs_settle(now=now) == 0  # not due yet
    Job.objects.for_user("alice").filter(pk=blocker.run_id).update(status=JobStatus.COMPLETED)
    assert schedule_runs_settle(now=now + timedelta(seconds=31)) == 1
    retried = ScheduleRun.objects.for_user("alice").get(pk=refused.pk)
    assert (retried.status, retried.attempt, retried.run_id is not None) == (ScheduleRunStatus.RUNNING, 2, True)
    # Its retries are spent: a second refusal fails the fire.
    Job.objects.for_user("alice").filter(pk=retried.run_id).update(status=JobStatus.FAILED)
    Run.objects.for_user("alice").filter(pk=retried.run_id).update(status="ERROR", error="model exploded")
    schedule_runs_settle(now=now + timedelta(seconds=40))
    final = ScheduleRun.objects.for_user("alice").get(pk=refused.pk)
    assert (final.status, final.attempt, final.error) == (ScheduleRunStatus.FAILED, 2, "model exploded")


def test_trigger_fires_now_and_refuses_a_disabled_schedule(worker) -> None:
    schedule = create(cron_expr="")
    run = schedule_trigger(user="alice", schedule_id=schedule.pk)
    assert (run.trigger, run.status) == ("trigger", ScheduleRunStatus.RUNNING)
    assert wait_for(lambda: settled(schedule)).status == ScheduleRunStatus.SUCCESS
    schedule_disable(user="alice", schedule_id=schedule.pk, reason="paused")
    with pytest.raises(ScheduleConflict, match="Schedule is disabled"):
        schedule_trigger(user="alice", schedule_id=schedule.pk)


def test_the_embedded_ticker_fires_a_due_schedule(worker, ticker) -> None:
    schedule = create()
    set_next_run(schedule, timezone.now().replace(second=0, microsecond=0))  # this minute's tick, due
    ticker().start()
    done = wait_for(lambda: (runs := runs_of(schedule)) and runs[0].status == ScheduleRunStatus.SUCCESS and runs[0], timeout=30)
    assert done.user_id == "alice" and Run.objects.for_user("alice").get(pk=done.run_id).status == "COMPLETED"
    assert Schedule.objects.for_user("alice").get(pk=schedule.pk).next_run_at > timezone.now() - timedelta(seconds=1)


def test_a_failing_run_is_retried_then_fails_the_fire_with_its_error(worker) -> None:
    schedule = create(payload={"message": "/fail"}, max_retries=1, retry_delay_seconds=1)
    fired = fire(schedule.pk, datetime(2026, 12, 3, 9, 0, tzinfo=UTC))
    first_run = fired.run_id

    def retry_waiting():
        schedule_runs_settle()
        row = ScheduleRun.objects.for_user("alice").get(pk=fired.pk)
        return row if row.status == ScheduleRunStatus.PENDING and row.retry_at else None

    waiting = wait_for(retry_waiting)
    assert waiting.attempt == 1 and "/fail requested" in waiting.error
    schedule_runs_settle(now=waiting.retry_at + timedelta(seconds=1))
    final = wait_for(lambda: settled(schedule))
    assert (final.status, final.attempt) == (ScheduleRunStatus.FAILED, 2)
    assert final.run_id != first_run and "/fail requested" in final.error
    assert Run.objects.for_user("alice").filter(pk__in=[first_run, final.run_id], status="ERROR").count() == 2


def test_a_web_process_without_a_broker_starts_and_stops_the_ticker(worker, ticker, settings) -> None:
    from agno_site import lifespan

    settings.REDIS_URL = None
    lifespan._start()
    assert ticker().running
    lifespan._stop()
    assert not ticker().running
    settings.SCHEDULER_TICKER = False
    lifespan._start()
    assert not ticker().running


def test_a_schedule_disabled_before_its_fire_is_claimed_does_not_fire(worker, settings) -> None:
    settings.EMBEDDED_WORKER = False
    schedule = create()
    schedule_disable(user="alice", schedule_id=schedule.pk, reason="stop")
    assert fire(schedule.pk, datetime(2026, 12, 3, 9, 0, tzinfo=UTC)) is None
    assert runs_of(schedule) == []


def test_a_run_past_the_schedules_timeout_is_stopped_and_fails_the_fire(worker, settings) -> None:
    settings.AGENTOS_BACKGROUND_LEASE_SECONDS = 3  # the lease watch looks at the deadline every second
    schedule = create(payload={"message": "/slow 30\ntake your time"}, timeout_seconds=1)
    fired = fire(schedule.pk, datetime(2026, 12, 3, 9, 0, tzinfo=UTC))
    done = wait_for(lambda: settled(schedule), timeout=30)
    assert (done.status, done.attempt) == (ScheduleRunStatus.FAILED, 1)
    assert Run.objects.for_user("alice").get(pk=fired.run_id).status == "CANCELLED"
    assert done.duration_ms < 20_000
