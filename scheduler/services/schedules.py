"""Writing schedules: create, the allow-listed update, enable, disable, delete.

Each write is one transaction with the schedule's PeriodicTask (services.beat), so beat never
sees a schedule the database does not hold, or misses one it does. What a schedule calls is
checked when it is written, the way its fire would be checked: its endpoint must be the run route
of an agent, team or workflow the owner may run, and its payload must be a form that route
accepts, so a schedule that could only fail on every fire is refused (422) instead of saved.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.auth import Principal
from core.errors import DomainError
from core.tenancy import ALL_USERS, scope_queryset

from ..cron import cron_problem, next_tick, timezone_problem
from ..models import Schedule
from .beat import periodic_task_delete, periodic_task_sync

logger = logging.getLogger("agno_site.scheduler")

# v3's update allow-list: everything else (ownership, provenance, lock state) moves only through
# the dedicated functions here, so a generic update cannot repoint whose a schedule is.
MUTABLE_COLUMNS = frozenset({
    "name", "description", "method", "endpoint", "payload", "cron_expr", "timezone", "timeout_seconds",
    "max_retries", "retry_delay_seconds", "enabled", "next_run_at", "disabled_reason",
})
RUN_ENDPOINT = re.compile(r"^/(agents|teams|workflows)/([^/]+)/runs/?\Z")
KINDS = {"agents": "agent", "teams": "team", "workflows": "workflow"}
# Form fields the fire sets itself: a background, non-streamed run of the owner's, live version.
FIRE_OWNED_FIELDS = ("stream", "background", "version", "user_id")
LIMITS = {"timeout_seconds": (1, 86400), "max_retries": (0, 10), "retry_delay_seconds": (1, 3600)}
LENGTHS = {"name": 255, "description": 1024, "method": 10, "endpoint": 512, "cron_expr": 128, "timezone": 64, "disabled_reason": 1024}


class ScheduleNotFound(DomainError):
    status_code, error_code = 404, "schedule_not_found"

    def __init__(self) -> None:
        super().__init__("Schedule not found")


class ScheduleInvalid(DomainError):
    """A 422: the reason, as AgentOS words it ("Invalid cron expression: nope")."""

    status_code, error_code = 422, "schedule_invalid"


class ScheduleConflict(DomainError):
    """A 409: a duplicate name, or a disabled schedule triggered."""

    status_code, error_code = 409, "schedule_conflict"


class ScheduleForbidden(DomainError):
    """A 403: the caller may not run what the schedule would call."""

    status_code, error_code = 403, "schedule_forbidden"


class ScheduleLimitReached(ScheduleConflict):
    """A 409: the owner holds SCHEDULES_MAX_PER_USER schedules already."""

    error_code = "schedule_limit_reached"


@dataclass(frozen=True)
class Provenance:
    """Who writes a schedule, when it is not a person through the API: an agent's run."""

    managed_by: str | None = None
    run_id: str | None = None
    session_id: str | None = None


@dataclass(frozen=True)
class Target:
    kind: str  # "agent" | "team" | "workflow"
    component_id: str

    @property
    def family(self) -> str:
        return f"{self.kind}s"


def _schedules(user: Any):
    return scope_queryset(Schedule.objects, user)


def schedule_get(*, user: Any, schedule_id: str) -> Schedule:
    schedule = _schedules(user).filter(pk=schedule_id).first()
    if schedule is None:
        raise ScheduleNotFound()
    return schedule


# ---- validation ---------------------------------------------------------------------------------


def endpoint_target(endpoint: str) -> Target | None:
    match = RUN_ENDPOINT.fullmatch(endpoint or "")
    return Target(KINDS[match.group(1)], match.group(2)) if match else None


def form_fields(payload: dict[str, Any] | None) -> dict[str, str]:
    """The payload as the run route's form fields (AgentOS's executor encodes it so)."""
    import json

    fields: dict[str, str] = {}
    for key, value in (payload or {}).items():
        if key in FIRE_OWNED_FIELDS or value is None:
            continue
        if isinstance(value, bool):
            fields[key] = "true" if value else "false"
        elif isinstance(value, (dict, list)):
            fields[key] = json.dumps(value)
        else:
            fields[key] = str(value)
    return fields


def run_request_for(payload: dict[str, Any] | None) -> Any:
    """The RunRequest the schedule's fire submits, built from its payload as the fields of
    ``POST …/runs`` by the run pipeline's one builder, or ScheduleInvalid saying what the route
    would refuse."""
    from agents.pipeline.run_requests import run_request_build
    from core.api.errors import APIError

    try:
        request, _background = run_request_build(form_fields(payload))
    except APIError as exc:
        raise ScheduleInvalid(f"Invalid payload for this run endpoint: {_detail_text(exc.detail)}") from None
    request.stream = False
    request.user_id = None  # the owner is the schedule's, never the payload's
    return request


def _detail_text(detail: Any) -> str:
    if isinstance(detail, list):
        return "; ".join(f"{'.'.join(str(part) for part in item.get('loc', [])[1:]) or 'body'}: {item.get('msg')}" for item in detail if isinstance(item, dict))
    return str(detail)


def check_target(target: Target, *, principal: Principal | None) -> None:
    """The target exists and, when a principal writes it, the one authority lets them run it."""
    from agents.pipeline.authority import ComponentNotFound, RunForbidden, component_entry, run_authorize

    try:
        if principal is not None:
            run_authorize(principal, target.kind, target.component_id)
        else:
            component_entry(target.component_id, kind=target.kind)
    except RunForbidden as exc:
        raise ScheduleForbidden(str(exc)) from None
    except ComponentNotFound:
        raise ScheduleInvalid(f"Invalid endpoint: {target.kind} '{target.component_id}' not found") from None


def check_scope(principal: Principal | None, action: str) -> None:
    """``schedules:<action>`` for a principal that writes through something other than the API's
    route gate (an agent's ``schedules`` tool acts with its run's principal)."""
    if principal is not None and not principal.can("schedules", action):
        raise ScheduleForbidden(f"Insufficient permissions. Required scope(s): schedules:{action}")


def _grant(principal: Principal | None) -> dict[str, Any] | None:
    from core.auth import principal_grant

    return principal_grant(principal) if principal is not None else None


def _check_limits(values: dict[str, Any], *, owner_id: str | None, creating: bool) -> None:
    """SCHEDULES_MAX_PER_USER schedules per owner, and no two ticks closer than
    SCHEDULE_MIN_INTERVAL_SECONDS (a ScheduleInvalid, 422, saying which)."""
    from django.conf import settings

    from ..cron import min_interval_seconds

    least = settings.SCHEDULE_MIN_INTERVAL_SECONDS
    if least and values.get("cron_expr"):
        gap = min_interval_seconds(values["cron_expr"], values.get("timezone") or "UTC")
        if gap is not None and gap < least:
            raise ScheduleInvalid(f"Invalid cron expression: it fires every {gap} seconds; schedules fire at most every {least} seconds (SCHEDULE_MIN_INTERVAL_SECONDS)")
    most = settings.SCHEDULES_MAX_PER_USER
    if creating and most and _schedules(owner_id).count() >= most:
        raise ScheduleLimitReached(f"Schedule limit reached: at most {most} schedules per user (SCHEDULES_MAX_PER_USER); delete one first")


def _check_session(request: Any, owner_id: str | None) -> None:
    """A payload's ``session_id`` must be the owner's session, or a new one: the run route
    answers another user's with "Session not found" on every fire."""
    from sessions.models import Session

    session_id = request.session_id
    if not session_id or scope_queryset(Session.objects, owner_id).filter(pk=session_id).exists():
        return
    if Session.objects.unscoped("whether a session id is taken, as the run route checks it").filter(pk=session_id).exists():
        raise ScheduleInvalid("Invalid payload for this run endpoint: Session not found")


def _validated(values: dict[str, Any], *, principal: Principal | None, owner_id: Any = ALL_USERS) -> Target:
    """Check a schedule's whole state (after the change); its target."""
    for name, longest in LENGTHS.items():
        value = values.get(name)
        if value is not None and (not isinstance(value, str) or len(value) > longest):
            raise ScheduleInvalid(f"Invalid {name}: a string of at most {longest} characters")
    if not values["name"].strip():
        raise ScheduleInvalid("Invalid name: it must not be empty")
    for name, (low, high) in LIMITS.items():
        value = values[name]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ScheduleInvalid(f"Invalid {name}: an integer from {low} to {high}")
    if values["payload"] is not None and not isinstance(values["payload"], dict):
        raise ScheduleInvalid("Invalid payload: a JSON object")
    problem = cron_problem(values["cron_expr"]) or timezone_problem(values["timezone"])
    if problem:
        raise ScheduleInvalid(problem)
    endpoint = values["endpoint"]
    if not endpoint.startswith("/"):
        raise ScheduleInvalid("Invalid endpoint: it must start with '/'")
    target = endpoint_target(endpoint)
    if target is None:
        raise ScheduleInvalid(f"Invalid endpoint: {endpoint} is not the run route of an agent, team or workflow (/agents/<id>/runs, /teams/<id>/runs, /workflows/<id>/runs)")
    if values["method"].upper() != "POST":
        raise ScheduleInvalid(f"Invalid method: run routes take POST, not {values['method']}")
    check_target(target, principal=principal)
    request = run_request_for(values["payload"])
    if owner_id is not ALL_USERS:
        _check_session(request, owner_id)
    return target


def next_run_for(schedule: Schedule, *, after: datetime | None = None) -> datetime | None:
    if not schedule.enabled or not schedule.cron_expr:
        return None
    return next_tick(schedule.cron_expr, schedule.timezone, after or timezone.now())


# ---- writes -------------------------------------------------------------------------------------


def _saved(schedule: Schedule, *, fields: list[str] | None) -> None:
    """Save the row and its PeriodicTask; a taken name is a ScheduleConflict."""
    try:
        with transaction.atomic():  # a savepoint: a taken name leaves the outer transaction usable
            if fields is None:
                schedule.save(force_insert=True)
            else:
                schedule.save(update_fields=fields)
    except IntegrityError:
        raise ScheduleConflict(f"Schedule with name '{schedule.name}' already exists") from None
    periodic_task_sync(schedule)


def _name_taken(owner_id: str | None, name: str, *, other_than: str | None = None) -> bool:
    schedules = scope_queryset(Schedule.objects, owner_id).filter(name=name)
    if other_than:
        schedules = schedules.exclude(pk=other_than)
    return schedules.exists()


def schedule_create(
    *,
    owner_id: str | None,
    name: str,
    endpoint: str,
    cron_expr: str = "",
    method: str = "POST",
    description: str | None = None,
    payload: dict[str, Any] | None = None,
    timezone_name: str = "UTC",
    timeout_seconds: int = 3600,
    max_retries: int = 0,
    retry_delay_seconds: int = 60,
    principal: Principal | None = None,
    provenance: Provenance | None = None,
) -> Schedule:
    """A new schedule of ``owner_id`` (the caller, never the body), enabled, with its PeriodicTask,
    keeping ``principal``'s rights for its fires (``grant``)."""
    check_scope(principal, "write")
    values = {
        "name": name, "description": description, "method": method, "endpoint": endpoint, "payload": payload,
        "cron_expr": cron_expr, "timezone": timezone_name, "timeout_seconds": timeout_seconds, "max_retries": max_retries,
        "retry_delay_seconds": retry_delay_seconds,
    }
    target = _validated(values, principal=principal, owner_id=owner_id)
    _check_limits(values, owner_id=owner_id, creating=True)
    provenance = provenance or Provenance()
    now = timezone.now()
    schedule = Schedule(
        user_id=owner_id, **{**values, "method": method.upper()}, enabled=True, target_type=target.kind, target_id=target.component_id,
        managed_by=provenance.managed_by, created_by_run_id=provenance.run_id, created_by_session_id=provenance.session_id,
        grant=_grant(principal), created_at=now, updated_at=None,
    )
    schedule.next_run_at = next_run_for(schedule, after=now)
    with transaction.atomic():
        if settings.SCHEDULES_MAX_PER_USER:
            # Two creates at once must not both pass the cap: the owner's rows, locked, are counted again.
            list(_schedules(owner_id).select_for_update().values_list("pk", flat=True))
            _check_limits({}, owner_id=owner_id, creating=True)
        if _name_taken(owner_id, name):
            raise ScheduleConflict(f"Schedule with name '{name}' already exists")
        _saved(schedule, fields=None)
    logger.info("schedule %s created (%s, %s)", schedule.pk, schedule.cron_expr or "on demand", schedule.timezone)
    return schedule


def schedule_update(
    *, user: Any, schedule_id: str, changes: dict[str, Any], principal: Principal | None = None, provenance: Provenance | None = None,
) -> Schedule:
    """Apply ``changes`` (only MUTABLE_COLUMNS; any other key is a ScheduleInvalid naming them all)."""
    check_scope(principal, "write")
    rejected = sorted(set(changes) - MUTABLE_COLUMNS)
    if rejected:
        raise ScheduleInvalid(
            f"Cannot update {', '.join(rejected)}: only {', '.join(sorted(MUTABLE_COLUMNS))} may be updated; "
            "ownership, provenance and lock state are not writable"
        )
    with transaction.atomic():
        schedule = _schedules(user).select_for_update().filter(pk=schedule_id).first()
        if schedule is None:
            raise ScheduleNotFound()
        if not changes:
            return schedule
        values = {name: getattr(schedule, name) for name in MUTABLE_COLUMNS if name not in ("enabled", "next_run_at", "disabled_reason")}
        values.update({name: value for name, value in changes.items() if name in values})
        execution_changed = any(name in changes for name in ("endpoint", "method", "payload"))
        # The caller's permission is checked when what the schedule runs changes (AgentOS).
        target = _validated(values, principal=principal if execution_changed else None, owner_id=schedule.user_id)
        if {"cron_expr", "timezone"} & set(changes):
            _check_limits(values, owner_id=schedule.user_id, creating=False)
        if "name" in changes and changes["name"] != schedule.name and _name_taken(schedule.user_id, changes["name"], other_than=schedule.pk):
            raise ScheduleConflict(f"Schedule with name '{changes['name']}' already exists")
        fields = set(changes) | {"updated_at"}
        for name, value in changes.items():
            setattr(schedule, name, value)
        if "method" in changes:
            schedule.method = schedule.method.upper()
        if "endpoint" in changes:
            # The target follows the endpoint it is derived from; it is never written on its own.
            schedule.target_type, schedule.target_id = target.kind, target.component_id
            fields |= {"target_type", "target_id"}
        if execution_changed and principal is not None:
            # What it runs changed, checked against this caller: its fires run with their rights now.
            schedule.grant = _grant(principal)
            fields.add("grant")
        if "enabled" in changes:
            schedule.enabled = bool(changes["enabled"])
            if schedule.enabled and "disabled_reason" not in changes:
                schedule.disabled_reason = None
                fields.add("disabled_reason")
        if "next_run_at" not in changes and ({"cron_expr", "timezone", "enabled"} & set(changes)):
            schedule.next_run_at = next_run_for(schedule)
            fields.add("next_run_at")
        elif "next_run_at" in changes:
            # Postponing (or advancing) the next fire: to the first tick at or after the time asked.
            wanted = changes["next_run_at"]
            if wanted is not None and not isinstance(wanted, datetime):
                raise ScheduleInvalid("Invalid next_run_at: a time")
            on = schedule.enabled and schedule.cron_expr and wanted is not None
            schedule.next_run_at = next_tick(schedule.cron_expr, schedule.timezone, wanted - timedelta(seconds=1)) if on else None
        if provenance is not None:
            schedule.updated_by_run_id, schedule.updated_by_session_id = provenance.run_id, provenance.session_id
            fields |= {"updated_by_run_id", "updated_by_session_id"}
        schedule.updated_at = timezone.now()
        _saved(schedule, fields=sorted(fields))
    return schedule


def schedule_enable(*, user: Any, schedule_id: str, principal: Principal | None = None) -> Schedule:
    """Enable it again (its next fire computed from now), once its target can run again."""
    with transaction.atomic():
        schedule = _schedules(user).select_for_update().filter(pk=schedule_id).first()
        if schedule is None:
            raise ScheduleNotFound()
        target = endpoint_target(schedule.endpoint)
        if target is not None:
            try:
                check_target(target, principal=principal)
            except ScheduleInvalid:
                raise ScheduleConflict(f"Cannot enable schedule '{schedule.name}': its target {target.kind} '{target.component_id}' does not exist") from None
        fields = ["enabled", "disabled_reason", "next_run_at", "updated_at"]
        if principal is not None:
            # Enabled by this caller, checked now: its fires run with their rights from here on.
            schedule.grant = _grant(principal)
            fields.append("grant")
        schedule.enabled, schedule.disabled_reason = True, None
        schedule.next_run_at = next_run_for(schedule)
        schedule.updated_at = timezone.now()
        _saved(schedule, fields=fields)
    return schedule


def schedule_disable(*, user: Any, schedule_id: str, reason: str | None = None) -> Schedule:
    with transaction.atomic():
        schedule = _schedules(user).select_for_update().filter(pk=schedule_id).first()
        if schedule is None:
            raise ScheduleNotFound()
        schedule_row_disable(schedule, reason)
    return schedule


def schedule_row_disable(schedule: Schedule, reason: str | None) -> None:
    """Disable ``schedule``, a row the caller holds (locked, or just claimed), saying why."""
    schedule.enabled, schedule.next_run_at = False, None
    schedule.disabled_reason = reason[: LENGTHS["disabled_reason"]] if reason else None
    schedule.updated_at = timezone.now()
    _saved(schedule, fields=["enabled", "next_run_at", "disabled_reason", "updated_at"])


def schedule_disable_for_operator(*, schedule_id: str, reason: str) -> Schedule:
    """An operator (the admin) or the scheduler itself disables any user's schedule, saying why."""
    return schedule_disable(user=ALL_USERS, schedule_id=schedule_id, reason=reason)


def schedule_delete(*, user: Any, schedule_id: str, principal: Principal | None = None) -> None:
    """The schedule, its history and its PeriodicTask, together."""
    check_scope(principal, "delete")
    with transaction.atomic():
        schedule = _schedules(user).select_for_update().filter(pk=schedule_id).first()
        if schedule is None:
            raise ScheduleNotFound()
        periodic_task_delete(schedule_id=schedule.pk)
        _schedules(user).filter(pk=schedule.pk).delete()


def schedules_disable_for_credential(*, reason: str, user_id: str | None = None, token_id: int | None = None) -> int:
    """Disable, saying why, every enabled schedule that fires with a credential that is gone: the
    schedules of ``user_id`` (a deleted user, a revoked service account ``sa:<id>``), and those
    created under access token ``token_id``. Returns how many."""
    from django.db.models import Q

    if user_id is None and token_id is None:
        return 0
    match = Q(pk__in=[])
    if user_id is not None:
        match |= Q(user_id=user_id)
    if token_id is not None:
        match |= Q(grant__token_id=token_id)
    disabled = 0
    with transaction.atomic():
        for schedule in Schedule.objects.unscoped("a withdrawn credential disables whoever's schedules it fires").select_for_update().filter(match, enabled=True):
            schedule_row_disable(schedule, reason)
            disabled += 1
    if disabled:
        logger.info("%d schedule(s) disabled: %s", disabled, reason)
    return disabled
