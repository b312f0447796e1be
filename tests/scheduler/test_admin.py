"""Operators see every schedule with its PeriodicTask and history, and disable one with a reason."""
from __future__ import annotations

import pytest
from django.urls import reverse
from django_celery_beat.models import PeriodicTask

from scheduler.models import Schedule, ScheduleRunStatus
from scheduler.services.schedules import schedule_create
from tests.factories import make_schedule_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("op", password="pw-for-tests"))
    return client


def test_the_change_page_shows_the_periodic_task_and_the_history(operator_client) -> None:
    schedule = schedule_create(owner_id="alice", name="digest", endpoint="/agents/assistant/runs", cron_expr="0 7 * * *", payload={"message": "digest"}, timezone_name="Asia/Tokyo")
    make_schedule_run("alice", schedule=schedule, status=ScheduleRunStatus.FAILED, error="model exploded", run_id="run-77")
    page = operator_client.get(reverse("admin:scheduler_schedule_change", args=[schedule.pk])).content.decode()
    assert f"schedule:{schedule.pk}" in page and "Asia/Tokyo" in page
    assert "model exploded" in page and "run-77" in page
    failures = operator_client.get(reverse("admin:scheduler_schedulerun_changelist"), {"outcome": "failures"})
    assert [run.error for run in failures.context["cl"].result_list] == ["model exploded"]


def test_an_operator_disables_schedules_with_a_reason(operator_client) -> None:
    schedule = schedule_create(owner_id="bob", name="spam", endpoint="/agents/assistant/runs", cron_expr="* * * * *", payload={"message": "x"})
    response = operator_client.post(
        reverse("admin:scheduler_schedule_changelist"),
        {"action": "disable_with_reason", "_selected_action": [schedule.pk], "reason": "fires every minute for nothing"},
    )
    assert response.status_code == 302
    stored = Schedule.objects.for_user("bob").get(pk=schedule.pk)
    assert (stored.enabled, stored.disabled_reason, stored.next_run_at) == (False, "fires every minute for nothing", None)
    assert PeriodicTask.objects.get(name=f"schedule:{schedule.pk}").enabled is False
