"""Writing schedules: validation, the update allow-list, provenance, time zones, PeriodicTasks."""
from __future__ import annotations

import json
from datetime import datetime, timezone as dt_timezone

import pytest
from django_celery_beat.models import PeriodicTask

from scheduler.models import Schedule, ScheduleRun
from scheduler.services.schedules import (
    Provenance,
    ScheduleConflict,
    ScheduleInvalid,
    ScheduleNotFound,
    next_run_for,
    schedule_create,
    schedule_delete,
    schedule_disable,
    schedule_enable,
    schedule_get,
    schedule_update,
)
from tests.factories import make_schedule_run

pytestmark = pytest.mark.django_db
UTC = dt_timezone.utc


def create(owner: str = "alice", **fields):
    fields.setdefault("name", "morning")
    fields.setdefault("endpoint", "/agents/assistant/runs")
    fields.setdefault("cron_expr", "0 9 * * *")
    fields.setdefault("payload", {"message": "good morning"})
    return schedule_create(owner_id=owner, **fields)


def task_of(schedule: Schedule) -> PeriodicTask:
    return PeriodicTask.objects.select_related("crontab").get(name=f"schedule:{schedule.pk}")


def test_a_schedule_is_created_with_its_target_next_run_and_periodic_task() -> None:
    schedule = create(timezone_name="Europe/Paris", cron_expr="30 7 * * 1-5")
    stored = Schedule.objects.for_user("alice").get(pk=schedule.pk)
    assert (stored.target_type, stored.target_id, stored.enabled, stored.managed_by) == ("agent", "assistant", True, None)
    assert stored.next_run_at is not None and stored.next_run_at.astimezone(stored.next_run_at.tzinfo) > datetime.now(UTC)
    task = task_of(schedule)
    assert (task.task, json.loads(task.args), task.enabled) == ("agno_site.scheduler.fire_schedule", [schedule.pk], True)
    crontab = task.crontab
    assert (crontab.minute, crontab.hour, crontab.day_of_month, crontab.month_of_year, crontab.day_of_week) == ("30", "7", "*", "*", "1-5")
    assert str(crontab.timezone) == "Europe/Paris"


def test_an_on_demand_schedule_has_no_next_run_and_no_periodic_task() -> None:
    schedule = create(cron_expr="")
    assert schedule.next_run_at is None
    assert not PeriodicTask.objects.filter(name=f"schedule:{schedule.pk}").exists()


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"cron_expr": "nope"}, "Invalid cron expression: nope (5 fields expected: minute hour day-of-month month day-of-week)"),
        ({"cron_expr": "61 * * * *"}, "Invalid cron expression: 61 * * * *"),
        ({"cron_expr": "0 9 L * *"}, "Invalid cron expression: 0 9 L * * (Invalid weekday literal 'L'.)"),
        ({"timezone_name": "Mars/Olympus"}, "Invalid timezone: Mars/Olympus"),
        ({"endpoint": "agents/assistant/runs"}, "Invalid endpoint: it must start with '/'"),
        ({"endpoint": "/sessions"}, "Invalid endpoint: /sessions is not the run route of an agent, team or workflow (/agents/<id>/runs, /teams/<id>/runs, /workflows/<id>/runs)"),
        ({"endpoint": "/agents/nobody/runs"}, "Invalid endpoint: agent 'nobody' not found"),
        ({"endpoint": "/teams/nobody/runs"}, "Invalid endpoint: team 'nobody' not found"),
        ({"method": "GET"}, "Invalid method: run routes take POST, not GET"),
        ({"payload": {}}, "Invalid payload for this run endpoint: message: Field required"),
        ({"payload": {"message": "hi", "metadata": [1]}}, "Invalid payload for this run endpoint: Invalid metadata parameter: expected a JSON object"),
        ({"payload": {"message": "hi", "images": "not json"}}, "Invalid payload for this run endpoint: images: Invalid images: expected a JSON array of objects"),
        ({"timeout_seconds": 0}, "Invalid timeout_seconds: an integer from 1 to 86400"),
        ({"max_retries": 11}, "Invalid max_retries: an integer from 0 to 10"),
        ({"name": " "}, "Invalid name: it must not be empty"),
    ],
)
def test_what_could_never_fire_is_refused_with_the_reason(fields, reason) -> None:
    with pytest.raises(ScheduleInvalid) as refused:
        create(**fields)
    assert str(refused.value) == reason
    assert not Schedule.objects.unscoped("test").exists() and not PeriodicTask.objects.filter(name__startswith="schedule:").exists()


def test_team_and_workflow_run_routes_are_targets_too() -> None:
    team = create(name="t", endpoint="/teams/research-team/runs")
    flow = create(name="w", endpoint="/workflows/review-flow/runs/")
    assert [(s.target_type, s.target_id) for s in (team, flow)] == [("team", "research-team"), ("workflow", "review-flow")]


def test_names_are_unique_per_user() -> None:
    create(name="daily")
    with pytest.raises(ScheduleConflict, match="Schedule with name 'daily' already exists"):
        create(name="daily")
    bobs = create(owner="bob", name="daily")
    assert bobs.user_id == "bob"
    other = create(name="other")
    with pytest.raises(ScheduleConflict):
        schedule_update(user="alice", schedule_id=other.pk, changes={"name": "daily"})


def test_the_update_allow_list_names_every_rejected_column() -> None:
    schedule = create()
    with pytest.raises(ScheduleInvalid) as refused:
        schedule_update(user="alice", schedule_id=schedule.pk, changes={"name": "x", "user_id": "bob", "managed_by": "agent", "target_id": "hitl-agent", "locked_by": "w"})
    assert str(refused.value).startswith("Cannot update locked_by, managed_by, target_id, user_id: only cron_expr, description, disabled_reason, enabled, endpoint, ")
    stored = Schedule.objects.for_user("alice").get(pk=schedule.pk)
    assert (stored.name, stored.user_id, stored.managed_by, stored.target_id) == ("morning", "alice", None, "assistant")


def test_an_update_changes_the_row_and_its_periodic_task_together() -> None:
    schedule = create()
    updated = schedule_update(
        user="alice", schedule_id=schedule.pk, changes={"cron_expr": "*/5 * * * *", "timezone": "Asia/Tokyo", "endpoint": "/agents/hitl-agent/runs", "description": "d"},
        provenance=Provenance(run_id="run-9", session_id="sess-9"),
    )
    stored = Schedule.objects.for_user("alice").get(pk=schedule.pk)
    assert (stored.cron_expr, stored.timezone, stored.target_id, stored.description) == ("*/5 * * * *", "Asia/Tokyo", "hitl-agent", "d")
    assert (stored.updated_by_run_id, stored.updated_by_session_id, stored.created_by_run_id) == ("run-9", "sess-9", None)
    assert stored.next_run_at == updated.next_run_at and stored.next_run_at.minute % 5 == 0
    crontab = task_of(schedule).crontab
    assert (crontab.minute, str(crontab.timezone)) == ("*/5", "Asia/Tokyo")


def test_a_refused_update_leaves_the_periodic_task_as_it_was() -> None:
    create(name="taken")
    schedule = create(name="mine")
    with pytest.raises(ScheduleConflict):
        schedule_update(user="alice", schedule_id=schedule.pk, changes={"name": "taken", "cron_expr": "15 * * * *"})
    assert task_of(schedule).crontab.minute == "0"
    assert Schedule.objects.for_user("alice").get(pk=schedule.pk).cron_expr == "0 9 * * *"


def test_disable_with_a_reason_then_enable() -> None:
    schedule = create()
    disabled = schedule_disable(user="alice", schedule_id=schedule.pk, reason="on holiday")
    assert (disabled.enabled, disabled.next_run_at, disabled.disabled_reason) == (False, None, "on holiday")
    assert task_of(schedule).enabled is False
    enabled = schedule_enable(user="alice", schedule_id=schedule.pk)
    assert (enabled.enabled, enabled.disabled_reason, enabled.next_run_at is not None) == (True, None, True)
    assert task_of(schedule).enabled is True


def test_delete_takes_the_history_and_the_periodic_task() -> None:
    schedule = create()
    make_schedule_run("alice", schedule=schedule)
    schedule_delete(user="alice", schedule_id=schedule.pk)
    assert not Schedule.objects.unscoped("test").exists() and not ScheduleRun.objects.unscoped("test").exists()
    assert not PeriodicTask.objects.filter(name=f"schedule:{schedule.pk}").exists()


def test_another_users_schedule_is_missing() -> None:
    schedule = create()
    for attempt in (
        lambda: schedule_get(user="bob", schedule_id=schedule.pk),
        lambda: schedule_update(user="bob", schedule_id=schedule.pk, changes={"name": "mine now"}),
        lambda: schedule_disable(user="bob", schedule_id=schedule.pk),
        lambda: schedule_enable(user="bob", schedule_id=schedule.pk),
        lambda: schedule_delete(user="bob", schedule_id=schedule.pk),
    ):
        with pytest.raises(ScheduleNotFound):
            attempt()
    stored = Schedule.objects.for_user("alice").get(pk=schedule.pk)
    assert (stored.name, stored.enabled) == ("morning", True)


def test_provenance_is_recorded_on_create_and_never_taken_from_an_update() -> None:
    schedule = create(provenance=Provenance(managed_by="agent", run_id="run-1", session_id="sess-1"))
    stored = Schedule.objects.for_user("alice").get(pk=schedule.pk)
    assert (stored.managed_by, stored.created_by_run_id, stored.created_by_session_id) == ("agent", "run-1", "sess-1")


def test_nine_in_new_york_stays_nine_across_daylight_saving_time() -> None:
    schedule = Schedule(cron_expr="0 9 * * *", timezone="America/New_York", enabled=True)
    # 2026-03-08: clocks go forward in New York (EST, UTC-5 -> EDT, UTC-4).
    before = next_run_for(schedule, after=datetime(2026, 3, 7, 12, 0, tzinfo=UTC))
    after = next_run_for(schedule, after=before)
    assert (before, after) == (datetime(2026, 3, 7, 14, 0, tzinfo=UTC), datetime(2026, 3, 8, 13, 0, tzinfo=UTC))
    # 2026-11-01: back (EDT -> EST).
    autumn = next_run_for(schedule, after=datetime(2026, 10, 31, 12, 0, tzinfo=UTC))
    assert (autumn, next_run_for(schedule, after=autumn)) == (datetime(2026, 10, 31, 13, 0, tzinfo=UTC), datetime(2026, 11, 1, 14, 0, tzinfo=UTC))


def test_a_postponed_next_run_lands_on_a_tick() -> None:
    schedule = create(cron_expr="0 * * * *")
    updated = schedule_update(user="alice", schedule_id=schedule.pk, changes={"next_run_at": datetime(2030, 1, 1, 10, 20, tzinfo=UTC)})
    assert updated.next_run_at == datetime(2030, 1, 1, 11, 0, tzinfo=UTC)


def test_a_payload_may_continue_the_owners_session_but_not_anothers() -> None:
    from tests.factories import make_session

    mine = make_session("alice", session_id="alice-daily")
    make_session("bob", session_id="bob-private")
    assert create(name="daily", payload={"message": "hi", "session_id": mine.pk}).payload["session_id"] == "alice-daily"
    assert create(name="fresh", payload={"message": "hi", "session_id": "not-yet-made"}).name == "fresh"
    with pytest.raises(ScheduleInvalid, match="Session not found"):
        create(name="theirs", payload={"message": "hi", "session_id": "bob-private"})
