"""Reads of schedules and their runs, each through the caller's scope (core.tenancy): another
user's schedule is a missing one."""
from __future__ import annotations

from typing import Any

from core.errors import DomainError
from core.querysets import window
from core.tenancy import scope_queryset

from .models import Schedule, ScheduleRun
from .services.schedules import ScheduleNotFound, schedule_get


class ScheduleRunNotFound(DomainError):
    status_code, error_code = 404, "schedule_run_not_found"

    def __init__(self) -> None:
        super().__init__("Schedule run not found")


def schedule_list(*, user: Any, enabled: bool | None, offset: int, limit: int) -> tuple[list[Schedule], int]:
    """One page of the caller's schedules, newest first, and how many there are (two queries)."""
    schedules = scope_queryset(Schedule.objects, user)
    if enabled is not None:
        schedules = schedules.filter(enabled=enabled)
    return window(schedules.order_by("-created_at", "-id"), offset=offset, limit=limit), schedules.count()


def schedule_run_list(*, user: Any, schedule_id: str, offset: int, limit: int) -> tuple[list[ScheduleRun], int]:
    """One page of a schedule's fires, latest first (ScheduleNotFound for one the caller may not see)."""
    schedule = schedule_get(user=user, schedule_id=schedule_id)
    runs = scope_queryset(ScheduleRun.objects, user).filter(schedule_id=schedule.pk)
    return window(runs.order_by("-scheduled_for", "-id"), offset=offset, limit=limit), runs.count()


def schedule_run_get(*, user: Any, schedule_id: str, run_id: str) -> ScheduleRun:
    run = scope_queryset(ScheduleRun.objects, user).filter(pk=run_id, schedule_id=schedule_id).first()
    if run is None:
        raise ScheduleRunNotFound()
    return run


def owned_service_account(principal: Any, requested_user_id: str) -> str | None:
    """``sa:<id>`` when ``requested_user_id`` names a service account the caller owns (its
    schedules are then theirs to see and stop), else None."""
    from core.models import AccessToken, TokenKind

    if not requested_user_id.startswith("sa:") or not principal.user_id:
        return None
    token_id = requested_user_id[3:]
    if not token_id.isdigit():
        return None
    owned = AccessToken.objects.for_user(principal.user_id).filter(pk=int(token_id), kind=TokenKind.SERVICE).exists()
    return requested_user_id if owned else None


__all__ = ["owned_service_account", "ScheduleNotFound", "ScheduleRunNotFound", "schedule_list", "schedule_run_get", "schedule_run_list"]
