"""Firing schedules: claimed once in the database, submitted as a background run of the owner.

``fire(schedule_id, scheduled_for)`` is the one way a schedule runs, whoever calls it: beat's
per-schedule task (scheduler.tasks.fire_schedule), the embedded ticker (scheduler.ticker), the
sweep both run (``scheduler_tick``) and ``POST /schedules/{id}/trigger``. It inserts the
``(schedule, scheduled_for)`` ScheduleRun row and submits the run in that same transaction: of
two beats, two workers or two web processes firing one tick, the second insert waits on the
first and then fails on the unique constraint (or finds it committed), and does nothing; a
process that dies before committing leaves neither the claim nor the run, and the tick is still
due for the next sweep.

Missed fires (the policy): a schedule whose ``next_run_at`` has passed fires once, for its latest
tick at or before now, and its ``next_run_at`` moves past now. A beat (or a whole deployment)
that was down for three hours runs an hourly schedule once when it is back, not three times;
the skipped ticks have no rows. Beat's own catch-up (django-celery-beat fires a crontab once
when it is overdue) and the sweep agree on that tick, so they cannot both run it.

A ScheduleRun follows its run (``schedule_runs_settle``): success, failed with the run's error,
paused or cancelled; a paused one follows its run again when the run is continued or cancelled
(``schedule_runs_follow_paused``). A failed attempt is tried again ``retry_delay_seconds`` later, up to
``max_retries`` times, in place (``attempt`` counts). A schedule whose agent, team or workflow no
longer exists fails that fire visibly and is disabled, with the reason in ``disabled_reason``.
"""
from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.db import DatabaseError, IntegrityError, transaction
from django.utils import timezone

from core.errors import domain_errors, refusal_of
from core.tenancy import scope_queryset
from sessions.models import Run, RunStatus

from ..cron import latest_tick, next_tick
from ..models import OPEN_STATUSES, Schedule, ScheduleRun, ScheduleRunStatus
from .schedules import ScheduleConflict, ScheduleInvalid, ScheduleNotFound, endpoint_target, run_request_for, schedule_row_disable

logger = logging.getLogger("agno_site.scheduler")

# A beat task may reach its worker before the tick by the worker's clock (clocks differ; a beat
# restarted mid-minute sends at once): up to this early, it waits for its tick (``early_tick``).
CLOCK_SKEW = timedelta(seconds=30)
RUN_STATUS_TO_SCHEDULE = {
    RunStatus.COMPLETED: ScheduleRunStatus.SUCCESS,
    RunStatus.ERROR: ScheduleRunStatus.FAILED,
    RunStatus.CANCELLED: ScheduleRunStatus.CANCELLED,
    RunStatus.PAUSED: ScheduleRunStatus.PAUSED,
    RunStatus.REGENERATED: ScheduleRunStatus.SUCCESS,
}


def _all_schedules():
    return Schedule.objects.unscoped("the scheduler fires every user's schedules, each as its owner")


def _all_runs():
    return ScheduleRun.objects.unscoped("the scheduler settles every user's schedule runs, each under its schedule's owner")


def owner_principal(user_id: str | None):
    from approvals.services import owner_principal as principal_of

    return principal_of(user_id)


def fire(schedule_id: str, scheduled_for: datetime, *, trigger: str = "cron") -> ScheduleRun | None:
    """Claim the ``(schedule, scheduled_for)`` fire and submit its run; None if another process
    has claimed it already (or the schedule is gone). Returns the claimed ScheduleRun."""
    now = timezone.now()
    with transaction.atomic():
        schedule = _all_schedules().select_for_update().filter(pk=schedule_id).first()
        if schedule is None or (trigger == "cron" and not schedule.enabled):
            return None  # deleted, or disabled since the tick was found due
        run = ScheduleRun(
            user_id=schedule.user_id, schedule_id=schedule.pk, scheduled_for=scheduled_for, trigger=trigger,
            status=ScheduleRunStatus.PENDING, attempt=1, triggered_at=now, created_at=now,
        )
        try:
            with transaction.atomic():  # the claim: the unique insert; the loser stops here
                run.save(force_insert=True)
        except IntegrityError:
            logger.info("schedule %s: the fire for %s was claimed already", schedule_id, scheduled_for.isoformat())
            return None
        if trigger == "cron" and schedule.cron_expr and schedule.next_run_at is not None and schedule.next_run_at <= max(scheduled_for, now) + CLOCK_SKEW:
            # This tick is claimed: the schedule is due next after it, and after now (a missed
            # fire runs once, not once per missed tick).
            schedule.next_run_at = next_tick(schedule.cron_expr, schedule.timezone, max(scheduled_for, now))
            scope_queryset(Schedule.objects, schedule.user_id).filter(pk=schedule.pk).update(next_run_at=schedule.next_run_at)
        _submit(schedule, run, now)
    return run


def _submit(schedule: Schedule, run: ScheduleRun, now: datetime) -> None:
    """Submit the claimed attempt's run (in the claim's transaction); a refusal is the attempt's
    failure, written instead (its retry, or the schedule's disabling, follow)."""
    from agents.pipeline.authority import ComponentNotFound, RunForbidden
    from agents.pipeline.submit import submit_run
    from sessions.models import RunOrigin

    from .grants import CredentialWithdrawn, fire_principal

    target = endpoint_target(schedule.endpoint)
    try:
        if target is None:
            raise ScheduleInvalid(f"Invalid endpoint: {schedule.endpoint}")
        request = run_request_for(schedule.payload)
        request.origin = RunOrigin.SCHEDULE  # its session is the schedule's, not a conversation
        # The rights it was created under, as its credential stands now; the pipeline's one
        # authority then decides the run (agents.pipeline.authority).
        principal = fire_principal(schedule)
        with transaction.atomic():  # a refused submission leaves the claim to record it
            accepted = submit_run(
                principal=principal, component_id=target.component_id, kind=target.kind, request=request,
                background=True, timeout_seconds=schedule.timeout_seconds,
            )
    except CredentialWithdrawn as exc:
        _attempt_failed(schedule, run, str(exc), now, status_code=403, gone=True, disabled_reason=f"{exc} (disabled by the scheduler at {now:%Y-%m-%d %H:%M} UTC)")
        return
    except domain_errors() as exc:
        # The route's refusal, recorded with the status the route answers it with (core.errors).
        refusal = refusal_of(exc)
        assert refusal is not None
        if isinstance(exc, RunForbidden):
            reason = f"forbidden: {exc}"
            _attempt_failed(
                schedule, run, reason, now, status_code=refusal.status, gone=True, disabled_reason=f"{reason} (disabled by the scheduler at {now:%Y-%m-%d %H:%M} UTC)",
            )
        elif isinstance(exc, ComponentNotFound):
            _attempt_failed(schedule, run, f"{exc}: the schedule's target was deleted or deactivated", now, status_code=refusal.status, gone=True)
        else:
            _attempt_failed(schedule, run, str(exc) or refusal.code, now, status_code=refusal.status)
        return
    run.status, run.run_id, run.session_id, run.status_code = ScheduleRunStatus.RUNNING, accepted.job.pk, accepted.job.session_id, 202
    run.input = request.stored_input()
    run.retry_at = None
    scope_queryset(ScheduleRun.objects, run.user_id).filter(pk=run.pk).update(
        status=run.status, run_id=run.run_id, session_id=run.session_id, status_code=202, input=run.input, retry_at=None,
    )
    logger.info("schedule %s fired for %s (attempt %d): run %s", schedule.pk, run.scheduled_for.isoformat(), run.attempt, run.run_id)


def _attempt_failed(
    schedule: Schedule, run: ScheduleRun, error: str, now: datetime, *, status_code: int | None = None, gone: bool = False,
    disabled_reason: str | None = None,
) -> None:
    """The attempt failed: try again later if retries remain, else the fire failed. A target that
    no longer exists (or rights that no longer let it run: ``disabled_reason``) fails it for good
    and disables the schedule, saying why."""
    retry = not gone and run.attempt <= schedule.max_retries
    run.error, run.status_code = error[:4000], status_code
    if retry:
        run.status, run.retry_at, run.completed_at = ScheduleRunStatus.PENDING, now + timedelta(seconds=schedule.retry_delay_seconds), None
    else:
        run.status, run.retry_at, run.completed_at = ScheduleRunStatus.FAILED, None, now
        run.duration_ms = max(0, int((now - run.triggered_at).total_seconds() * 1000))
    scope_queryset(ScheduleRun.objects, run.user_id).filter(pk=run.pk).update(
        status=run.status, error=run.error, status_code=status_code, retry_at=run.retry_at, completed_at=run.completed_at, duration_ms=run.duration_ms,
    )
    logger.warning("schedule %s attempt %d failed%s: %s", schedule.pk, run.attempt, " (retrying)" if retry else "", error)
    if gone and schedule.enabled and disabled_reason:
        schedule_row_disable(schedule, disabled_reason)
    elif gone and schedule.enabled:
        target = endpoint_target(schedule.endpoint)
        what = f"{target.kind} '{target.component_id}'" if target else schedule.endpoint
        schedule_row_disable(schedule, f"target_missing: {what} no longer exists (disabled by the scheduler at {now:%Y-%m-%d %H:%M} UTC)")


def _cron_schedule(schedule_id: str) -> Schedule | None:
    return _all_schedules().filter(pk=schedule_id, enabled=True).exclude(cron_expr="").only("id", "cron_expr", "timezone", "next_run_at").first()


def fire_due(schedule_id: str, *, now: datetime | None = None) -> ScheduleRun | None:
    """Fire the schedule's due tick, if it has one: the latest tick at or before now, once its
    ``next_run_at`` has come. A tick never fires before its time: a delivery that arrives early
    fires nothing (beat's task then waits for the tick: ``early_tick``). Beat's task and the
    sweep call this."""
    now = now or timezone.now()
    schedule = _cron_schedule(schedule_id)
    if schedule is None or schedule.next_run_at is None or schedule.next_run_at > now:
        return None
    # next_run_at is always a tick (services.schedules keeps it so) and it has come: the latest
    # tick at or before now is at or after it.
    return fire(schedule.pk, latest_tick(schedule.cron_expr, schedule.timezone, now))


def early_tick(schedule_id: str, *, now: datetime | None = None) -> datetime | None:
    """The schedule's next tick if it is still ahead but at most CLOCK_SKEW away: a beat delivery
    that came that early (beat's clock ahead of this one, or a beat restarted mid-minute sending at
    once) is for that tick, and waits for it. None: nothing is that close."""
    now = now or timezone.now()
    schedule = _cron_schedule(schedule_id)
    if schedule is None or schedule.next_run_at is None or not now < schedule.next_run_at <= now + CLOCK_SKEW:
        return None
    return schedule.next_run_at


def schedule_trigger(*, user: Any, schedule_id: str) -> ScheduleRun:
    """``POST /schedules/{id}/trigger``: fire now, as a fire of its own (its own row)."""
    schedule = scope_queryset(Schedule.objects, user).filter(pk=schedule_id).only("id", "enabled").first()
    if schedule is None:
        raise ScheduleNotFound()
    if not schedule.enabled:
        raise ScheduleConflict("Schedule is disabled")
    run = fire(schedule.pk, timezone.now(), trigger="trigger")
    if run is None:  # deleted meanwhile, or (within the same microsecond) triggered twice
        raise ScheduleNotFound()
    return run


# ---- following runs, retries, the sweep ---------------------------------------------------------


def schedule_runs_settle(*, now: datetime | None = None, schedule_id: str | None = None) -> int:
    """Bring running ScheduleRuns up to their runs' statuses, and start the retries that are due.
    Returns how many rows changed. Cheap when nothing is open (one indexed read)."""
    now = now or timezone.now()
    open_runs = _all_runs().filter(status__in=OPEN_STATUSES)
    if schedule_id is not None:
        open_runs = open_runs.filter(schedule_id=schedule_id)
    changed = 0
    for row in list(open_runs.only("id", "user_id", "schedule_id", "status", "run_id", "attempt", "retry_at", "triggered_at")[:500]):
        if row.status == ScheduleRunStatus.RUNNING and row.run_id:
            changed += _follow(row, now)
        elif row.status == ScheduleRunStatus.PENDING and row.retry_at is not None and row.retry_at <= now:
            changed += _retry(row, now)
    return changed


_RUN_FIELDS = ("run_id", "status", "error", "content", "run_data", "input", "user_id", "finished_at")


def _outcome(run: Run) -> tuple[str, str | None, Any]:
    """What an ended (or paused) run makes of its schedule run: status, error, output."""
    status = RUN_STATUS_TO_SCHEDULE[run.status]
    error = None
    if status == ScheduleRunStatus.FAILED:
        error = run.error or run.content or "Run failed"
    elif status == ScheduleRunStatus.CANCELLED:
        error = run.error or run.content or "Run was cancelled"
    output = {"content": run.content, "content_type": (run.run_data or {}).get("content_type", "str")} if run.content else None
    return status, error, output


def _follow(row: ScheduleRun, now: datetime) -> int:
    run = scope_queryset(Run.objects, row.user_id).filter(pk=row.run_id).only(*_RUN_FIELDS).first()
    if run is None:
        status, error, output = ScheduleRunStatus.FAILED, "The run no longer exists (its session was deleted)", None
    elif run.status not in RUN_STATUS_TO_SCHEDULE:
        return 0  # still pending or running
    else:
        status, error, output = _outcome(run)
    if status not in (ScheduleRunStatus.FAILED, ScheduleRunStatus.CANCELLED):
        return _finish(row, status, error, output, now, run)
    # A failed or cancelled run (a timeout cancels it) is a failed attempt, as in AgentOS: it is
    # retried while retries remain, and fails the fire after.
    with transaction.atomic():
        schedule = _all_schedules().select_for_update().filter(pk=row.schedule_id).first()
        if schedule is None or not _all_runs().filter(pk=row.pk, status=ScheduleRunStatus.RUNNING, attempt=row.attempt).exists():
            return 0  # settled by another process meanwhile (the schedule's lock orders us)
        target = endpoint_target(schedule.endpoint)
        gone = target is not None and _target_missing(target)
        if gone:
            error = f"{error} ({target.kind} '{target.component_id}' no longer exists)"
        _attempt_failed(schedule, row, error or "Run failed", now, status_code=200, gone=gone)
        if output is not None:
            scope_queryset(ScheduleRun.objects, row.user_id).filter(pk=row.pk).update(output=output)
    return 1


def _finish(
    row: ScheduleRun, status: str, error: str | None, output: Any, now: datetime, run: Any, *, was: str = ScheduleRunStatus.RUNNING,
) -> int:
    completed = (run.finished_at if run is not None and run.finished_at else None) or now
    return scope_queryset(ScheduleRun.objects, row.user_id).filter(pk=row.pk, status=was, attempt=row.attempt).update(
        status=status, error=error, output=output, status_code=200, completed_at=completed,
        duration_ms=max(0, int((completed - row.triggered_at).total_seconds() * 1000)),
        requirements=((run.run_data or {}).get("requirements") if run is not None and status == ScheduleRunStatus.PAUSED else None),
    )


def schedule_runs_concern_run_end(end: Any) -> bool:
    """Whether a run's end may be a fired schedule run's: only a run that had paused goes on
    without its schedule run having been written already (what the pipeline asks before opening
    the observers' savepoint)."""
    return end.after_pause


def schedule_runs_on_run_end(end: Any) -> None:
    """The run-end observer the scheduler registers with the run pipeline (scheduler.apps): a
    run that had paused ended (``end``: its ``RunEnd``), and a schedule may have fired it."""
    if end.after_pause:
        schedule_runs_follow_paused(owner_id=end.owner_id, run_id=end.run_id)


def schedule_runs_follow_paused(*, owner_id: str | None, run_id: str) -> int:
    """A paused run has moved on: continued to its end (or to another pause), or cancelled. The
    schedule run it paused follows it (success, failed, cancelled, or paused with the new
    requirements), as AgentOS's run history shows it; no retry follows, a human having decided.

    Called where the end of a run that had paused is written, in that transaction (after the
    run's row): a continuation's end (the run pipeline's run-end observers: ``schedule_runs_on_run_end``)
    and a paused run's cancel, whatever surface asked for it (the API's continue or cancel, an
    approval's resolution, the admin). One indexed read when no schedule fired the run. Returns
    how many schedule runs changed."""
    rows = list(
        scope_queryset(ScheduleRun.objects, owner_id).filter(status=ScheduleRunStatus.PAUSED, run_id=run_id)
        .only("id", "user_id", "attempt", "triggered_at")
    )
    if not rows:
        return 0
    run = scope_queryset(Run.objects, owner_id).filter(pk=run_id).only(*_RUN_FIELDS).first()
    if run is None or run.status not in RUN_STATUS_TO_SCHEDULE:
        return 0  # continued, not ended yet: its end calls again
    status, error, output = _outcome(run)
    now = timezone.now()
    changed = sum(_finish(row, status, error, output, now, run, was=ScheduleRunStatus.PAUSED) for row in rows)
    logger.info("run %s: its paused schedule run(s) followed it to %s", run_id, status)
    return changed


def _target_missing(target: Any) -> bool:
    from agents.registry import entry_get

    return entry_get(target.kind, target.component_id) is None


def _retry(row: ScheduleRun, now: datetime) -> int:
    """Start a due retry: the conditional update is its claim (one process wins it)."""
    with transaction.atomic():
        schedule = _all_schedules().select_for_update().filter(pk=row.schedule_id).first()
        if schedule is None:
            return 0
        won = scope_queryset(ScheduleRun.objects, row.user_id).filter(
            pk=row.pk, status=ScheduleRunStatus.PENDING, attempt=row.attempt, retry_at__lte=now,
        ).update(attempt=row.attempt + 1, retry_at=None, triggered_at=now, run_id=None, session_id=None)
        if not won:
            return 0
        row.attempt, row.retry_at, row.triggered_at = row.attempt + 1, None, now
        _submit(schedule, row, now)
    return 1


def due_schedule_ids(*, now: datetime | None = None) -> list[str]:
    now = now or timezone.now()
    return list(
        _all_schedules().filter(enabled=True, next_run_at__lte=now).exclude(cron_expr="").order_by("next_run_at").values_list("id", flat=True)[:1000]
    )


def scheduler_tick(*, now: datetime | None = None) -> dict[str, int]:
    """One sweep: fire every due schedule, settle open fires, start due retries. The embedded
    ticker runs it every SCHEDULER_TICK_SECONDS; with a broker, beat runs it as a safety net next
    to the per-schedule tasks (a fire either of them claims first, the other finds claimed)."""
    now = now or timezone.now()
    fired = 0
    for schedule_id in due_schedule_ids(now=now):
        try:
            fired += fire_due(schedule_id, now=now) is not None
        except DatabaseError:
            raise
        except Exception:  # one broken schedule must not stop the others
            logger.exception("schedule %s could not be fired", schedule_id)
    return {"fired": fired, "settled": schedule_runs_settle(now=now)}
