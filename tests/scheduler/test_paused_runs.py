"""A schedule run that ended paused follows its run when the run is continued (in the background
or inline) or cancelled later, whatever surface does it: as AgentOS's run history shows it."""
from __future__ import annotations

import json
from datetime import datetime, timezone as dt_timezone

import pytest

from scheduler.models import Schedule, ScheduleRun, ScheduleRunStatus
from scheduler.services.firing import fire, schedule_runs_settle
from scheduler.services.schedules import schedule_create
from sessions.models import Run
from tests.agents.conftest import wait_for

pytestmark = pytest.mark.django_db(transaction=True)
UTC = dt_timezone.utc
TICK = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)


def paused_fire() -> tuple[Schedule, ScheduleRun]:
    """A schedule whose agent asks for confirmation before its tool: its fire ends paused."""
    schedule = schedule_create(
        owner_id="alice", name="cleanup", endpoint="/agents/hitl-agent/runs", cron_expr="0 9 * * *",
        payload={"message": '/call delete_file {"path": "q.txt"}'},
    )
    claimed = fire(schedule.pk, TICK)

    def paused() -> ScheduleRun | None:
        schedule_runs_settle()
        row = ScheduleRun.objects.for_user("alice").get(pk=claimed.pk)
        return row if row.status == ScheduleRunStatus.PAUSED else None

    row = wait_for(paused)
    assert row.requirements and row.completed_at is not None
    return schedule, row


def current(row: ScheduleRun) -> ScheduleRun:
    return ScheduleRun.objects.for_user("alice").get(pk=row.pk)


def run_of(row: ScheduleRun) -> Run:
    return Run.objects.for_user("alice").get(pk=row.run_id)


def decided(client, row: ScheduleRun, *, confirmed: bool) -> str:
    body = client.get(f"/agents/hitl-agent/runs/{row.run_id}", {"session_id": row.session_id}).json()
    return json.dumps([{**tool, "confirmed": confirmed} for tool in body["tools"]])


def ended(row: ScheduleRun) -> ScheduleRun | None:
    """The schedule run once it has left paused (read only: no sweep runs meanwhile)."""
    found = current(row)
    return found if found.status != ScheduleRunStatus.PAUSED else None


def continued_in_background(client, row: ScheduleRun) -> ScheduleRun:
    """Confirm the paused run's tool and continue it in the background; the schedule run once it
    has followed the run."""
    response = client.post(
        f"/agents/hitl-agent/runs/{row.run_id}/continue",
        {"tools": decided(client, row, confirmed=True), "session_id": row.session_id, "background": "true", "stream": "false"},
    )
    assert response.status_code == 202
    return wait_for(lambda: ended(row))


def test_a_background_continue_to_its_end_makes_the_schedule_run_a_success(client, worker) -> None:
    _, row = paused_fire()
    done = continued_in_background(client, row)
    run = run_of(row)
    assert (done.status, done.error, done.requirements, done.attempt) == (ScheduleRunStatus.SUCCESS, None, None, 1)
    assert run.status == "COMPLETED" and "deleted q.txt" in done.output["content"] and done.output["content"] == run.content
    assert done.completed_at == run.finished_at and done.duration_ms >= row.duration_ms


def test_an_inline_continue_is_followed_too(client, worker) -> None:
    _, row = paused_fire()
    response = client.post(
        f"/agents/hitl-agent/runs/{row.run_id}/continue",
        {"tools": decided(client, row, confirmed=False), "session_id": row.session_id, "stream": "false"},
    )
    assert response.status_code == 200 and response.json()["status"] == "COMPLETED"
    # Written with the run's end, in its transaction: nothing to wait for.
    done = current(row)
    assert (done.status, done.output["content"]) == (ScheduleRunStatus.SUCCESS, run_of(row).content)


def test_cancelling_the_paused_run_cancels_the_schedule_run(client, worker) -> None:
    _, row = paused_fire()
    response = client.post(f"/agents/hitl-agent/runs/{row.run_id}/cancel", {"session_id": row.session_id})
    assert response.status_code == 200
    done = current(row)
    assert (done.status, done.error, run_of(row).status) == (ScheduleRunStatus.CANCELLED, run_of(row).content, "CANCELLED")


def test_another_users_paused_schedule_run_with_the_same_run_id_is_left_alone(client, worker) -> None:
    _, row = paused_fire()
    # A row of bob's that names alice's run id (it cannot in practice; the owner scopes the write).
    other = schedule_create(owner_id="bob", name="cleanup", endpoint="/agents/assistant/runs", cron_expr="", payload={"message": "hi"})
    theirs = ScheduleRun.objects.create(
        user_id="bob", schedule_id=other.pk, scheduled_for=TICK, status=ScheduleRunStatus.PAUSED, run_id=row.run_id, trigger="trigger",
    )
    client.post(f"/agents/hitl-agent/runs/{row.run_id}/cancel", {"session_id": row.session_id})
    assert current(row).status == ScheduleRunStatus.CANCELLED
    assert ScheduleRun.objects.for_user("bob").get(pk=theirs.pk).status == ScheduleRunStatus.PAUSED


def test_a_background_continue_that_cannot_start_fails_the_schedule_run(client, worker, monkeypatch) -> None:
    """Its agent was removed between the pause and the worker's claim: the run ends ERROR, saying
    so, and the schedule run it paused follows it instead of staying paused."""
    from agents.pipeline import background
    from agents.pipeline.runs import ComponentNotFound

    _, row = paused_fire()

    def removed_meanwhile(job, run, session):
        raise ComponentNotFound("agent")

    monkeypatch.setattr(background, "_prepare", removed_meanwhile)
    done = continued_in_background(client, row)
    run = run_of(row)
    assert run.status == "ERROR" and "no longer available" in run.content
    assert (done.status, done.error) == (ScheduleRunStatus.FAILED, run.content)
