"""Celery tasks of the scheduler: beat's per-schedule fire, and the sweep.

``celery -A agno_site beat -S django_celery_beat.schedulers:DatabaseScheduler`` sends
``fire_schedule`` at each schedule's cron ticks (its PeriodicTask, kept in step by
scheduler.services.beat) and ``scheduler_tick`` every SCHEDULER_TICK_SECONDS. Both carry ids
only; the claim in the database makes any number of deliveries of one tick fire it once.
"""
from __future__ import annotations

from celery import shared_task

from .services.firing import early_tick, fire_due, scheduler_tick


@shared_task(name="agno_site.scheduler.fire_schedule", ignore_result=True, soft_time_limit=60, time_limit=90)
def fire_schedule(schedule_id: str) -> bool:
    """Beat says the schedule's tick has come: fire it (once, whoever else does too). A delivery
    that arrives before the tick by this process's clock fires nothing then: it is sent again for
    the tick (an ETA), so the tick runs on time and never early."""
    if fire_due(schedule_id) is not None:
        return True
    tick = early_tick(schedule_id)
    if tick is not None:
        fire_schedule.apply_async((schedule_id,), eta=tick)
    return False


@shared_task(name="agno_site.scheduler.tick", ignore_result=True, soft_time_limit=120, time_limit=180)
def tick() -> dict[str, int]:
    """The safety net: fires a tick beat missed (beat down, a task lost), settles fires, retries."""
    return scheduler_tick()
