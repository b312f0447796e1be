"""Cron expressions in a schedule's time zone: validation and the ticks around a moment.

An expression must parse for both libraries that read it: croniter (the fire times, computed
in the schedule's zone, so 09:00 stays 09:00 across daylight-saving changes) and Celery's
``crontab`` (what django-celery-beat's CrontabSchedule holds). Five fields, minute precision.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

FIELDS = ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")


def cron_problem(expr: str) -> str | None:
    """Why ``expr`` is not a usable cron expression (None: it is; "" is on demand)."""
    if expr == "":
        return None
    parts = expr.split()
    if len(parts) != 5:
        return f"Invalid cron expression: {expr} (5 fields expected: minute hour day-of-month month day-of-week)"
    if not croniter.is_valid(expr):
        return f"Invalid cron expression: {expr}"
    from celery.schedules import crontab

    try:
        crontab(**crontab_fields(expr))
    except Exception as exc:  # Celery's parser raises ValueError and friends with the reason
        return f"Invalid cron expression: {expr} ({exc})"
    return None


def timezone_problem(name: str) -> str | None:
    try:
        zone(name)
    except (ZoneInfoNotFoundError, ValueError):
        return f"Invalid timezone: {name}"
    return None


def zone(name: str) -> ZoneInfo:
    if not name or name.startswith(("/", ".")) or ".." in name:
        raise ValueError(name)
    return ZoneInfo(name)


def crontab_fields(expr: str) -> dict[str, str]:
    """The expression as django-celery-beat's CrontabSchedule fields."""
    return dict(zip(FIELDS, expr.split()))


def next_tick(expr: str, tz: str, after: datetime) -> datetime:
    """The first fire time strictly after ``after`` (aware, in UTC)."""
    local = after.astimezone(zone(tz))
    return croniter(expr, local).get_next(datetime).astimezone(ZoneInfo("UTC"))


def latest_tick(expr: str, tz: str, at: datetime) -> datetime:
    """The last fire time at or before ``at`` (ticks are whole minutes)."""
    local = (at + timedelta(seconds=1)).astimezone(zone(tz))
    return croniter(expr, local).get_prev(datetime).astimezone(ZoneInfo("UTC"))


def next_ticks(expr: str, tz: str, after: datetime, count: int = 5) -> list[datetime]:
    """The next ``count`` fire times after ``after``, in the schedule's zone (the UI's helper)."""
    iterator = croniter(expr, after.astimezone(zone(tz)))
    return [iterator.get_next(datetime) for _ in range(count)]


# Where the gap between ticks is measured from: a fixed moment, so the answer never depends on
# the day it is asked; and how many ticks are looked at (a minute field repeats within an hour,
# an hour field within a day: an expression's closest ticks show within the first of them).
_GAP_FROM = datetime(2025, 1, 1)
_GAP_TICKS = 200


def min_interval_seconds(expr: str, tz: str = "UTC") -> int | None:
    """The shortest time between two consecutive ticks of ``expr`` (None: on demand)."""
    if not expr:
        return None
    iterator = croniter(expr, _GAP_FROM.replace(tzinfo=zone(tz)))
    previous = iterator.get_next(datetime)
    least: int | None = None
    for _ in range(_GAP_TICKS):
        tick = iterator.get_next(datetime)
        gap = int((tick - previous).total_seconds())
        least = gap if least is None else min(least, gap)
        previous = tick
        if least <= 60:
            break
    return least
