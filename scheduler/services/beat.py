"""django-celery-beat's side of a schedule: one PeriodicTask per cron schedule, kept in step.

Called inside the transaction that writes the schedule row, so the row and its PeriodicTask
commit (or roll back) together; beat's DatabaseScheduler notices the change through
django-celery-beat's own change tracking (``PeriodicTasks``), which ``save()`` and ``delete()``
update. An on-demand schedule (no cron) has no PeriodicTask.
"""
from __future__ import annotations

import json

from django_celery_beat.models import CrontabSchedule, PeriodicTask

from ..cron import crontab_fields
from ..models import Schedule

FIRE_TASK = "agno_site.scheduler.fire_schedule"


def periodic_task_sync(schedule: Schedule) -> PeriodicTask | None:
    """Create, update, enable or disable the schedule's PeriodicTask to match the row."""
    name = schedule.periodic_task_name
    if not schedule.cron_expr:
        periodic_task_delete(schedule_id=schedule.pk)
        return None
    crontab, _ = CrontabSchedule.objects.get_or_create(timezone=schedule.timezone, **crontab_fields(schedule.cron_expr))
    task = PeriodicTask.objects.filter(name=name).first() or PeriodicTask(name=name)
    task.task = FIRE_TASK
    task.crontab = crontab
    task.interval = task.solar = task.clocked = None
    task.args = json.dumps([schedule.pk])
    task.kwargs = "{}"
    task.enabled = bool(schedule.enabled)
    task.description = f"Fires schedule {schedule.name!r} of {schedule.user_id or '(no owner)'}; managed by the scheduler app, edit the schedule instead."
    task.save()
    return task


def periodic_task_delete(*, schedule_id: str) -> None:
    for task in PeriodicTask.objects.filter(name=f"schedule:{schedule_id}"):
        task.delete()  # one by one: delete() is what tells beat


def periodic_task_for(schedule: Schedule) -> PeriodicTask | None:
    return PeriodicTask.objects.filter(name=schedule.periodic_task_name).select_related("crontab").first()
