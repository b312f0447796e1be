"""Schedules: cron runs per user (Agno v3's schedules and schedule runs, with provenance).

A schedule belongs to its owner (``user_id``) and names what it calls: a run route of an agent,
team or workflow (``endpoint``), with that route's form fields (``payload``). Every fire is one
``ScheduleRun`` row, unique per ``(schedule, scheduled_for)``: the row is inserted before the run
is submitted, so of any number of beats, workers or web processes firing the same tick exactly
one wins the insert and submits (scheduler.services.firing).
"""
from __future__ import annotations

import uuid

from django.db import models
from django.utils.timezone import now

from core.tenancy import OwnedModel


def new_id() -> str:
    return str(uuid.uuid4())


class ManagedBy(models.TextChoices):
    AGENT = "agent"
    STUDIO = "studio"


class Schedule(OwnedModel):
    id = models.CharField(max_length=64, primary_key=True, default=new_id)
    name = models.CharField(max_length=255)
    description = models.CharField(max_length=1024, null=True, blank=True)
    method = models.CharField(max_length=10, default="POST")
    endpoint = models.CharField(max_length=512)
    # The run route's form fields (AgentOS: {"message": ...}).
    payload = models.JSONField(null=True, blank=True)
    # "" is an on-demand schedule: it runs only when triggered.
    cron_expr = models.CharField(max_length=128, blank=True, default="")
    timezone = models.CharField(max_length=64, default="UTC")
    timeout_seconds = models.PositiveIntegerField(default=3600)
    max_retries = models.PositiveIntegerField(default=0)
    retry_delay_seconds = models.PositiveIntegerField(default=60)
    enabled = models.BooleanField(default=True)
    # The next tick that may fire (None: on demand, or disabled). Both drivers read it.
    next_run_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.CharField(max_length=1024, null=True, blank=True)
    # Provenance (v3): who manages the row, what it targets, and which runs wrote it.
    managed_by = models.CharField(max_length=32, null=True, blank=True, db_index=True)
    target_type = models.CharField(max_length=16, null=True, blank=True)
    target_id = models.CharField(max_length=255, null=True, blank=True, db_index=True)
    created_by_run_id = models.CharField(max_length=64, null=True, blank=True)
    created_by_session_id = models.CharField(max_length=255, null=True, blank=True)
    updated_by_run_id = models.CharField(max_length=64, null=True, blank=True)
    updated_by_session_id = models.CharField(max_length=255, null=True, blank=True)
    # The rights it was created (or last re-targeted or enabled) under: core.auth.principal_grant.
    # A fire runs with them, re-checked as the credential stands then (scheduler.services.firing);
    # None: a schedule from before grants were kept, which fires as its owner.
    grant = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=now)
    updated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "agno_schedules"
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["user_id", "name"], name="schedule_owner_name_unique")]
        indexes = [
            models.Index(fields=["enabled", "next_run_at"], name="schedule_due"),
            models.Index(fields=["user_id", "-created_at"], name="schedule_owner_created"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.cron_expr or 'on demand'})"

    @property
    def periodic_task_name(self) -> str:
        return f"schedule:{self.pk}"


class ScheduleRunStatus(models.TextChoices):
    # Claimed; its run is being submitted (or waits for a retry's turn: ``retry_at``).
    PENDING = "pending"
    RUNNING = "running"
    SUCCESS = "success"
    FAILED = "failed"
    PAUSED = "paused"
    CANCELLED = "cancelled"


OPEN_STATUSES = (ScheduleRunStatus.PENDING, ScheduleRunStatus.RUNNING)


class ScheduleRun(OwnedModel):
    """One fire of a schedule (its attempts update it in place). ``user_id`` is the schedule's."""

    id = models.CharField(max_length=64, primary_key=True, default=new_id)
    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="+")
    # The tick it fires for (a trigger's: the moment it was asked for).
    scheduled_for = models.DateTimeField()
    attempt = models.PositiveIntegerField(default=1)
    status = models.CharField(max_length=16, choices=ScheduleRunStatus.choices, default=ScheduleRunStatus.PENDING)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    # "cron" | "trigger" | "retry": what made it.
    trigger = models.CharField(max_length=16, default="cron")
    run_id = models.CharField(max_length=64, null=True, blank=True)
    session_id = models.CharField(max_length=255, null=True, blank=True)
    error = models.TextField(null=True, blank=True)
    input = models.JSONField(null=True, blank=True)
    output = models.JSONField(null=True, blank=True)
    requirements = models.JSONField(null=True, blank=True)
    # When a failed attempt is tried again (None: no retry is due).
    retry_at = models.DateTimeField(null=True, blank=True)
    triggered_at = models.DateTimeField(default=now)
    completed_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=now)

    class Meta:
        db_table = "agno_schedule_runs"
        ordering = ["-scheduled_for"]
        constraints = [models.UniqueConstraint(fields=["schedule", "scheduled_for"], name="schedule_run_once_per_tick")]
        indexes = [
            models.Index(fields=["user_id", "schedule", "-scheduled_for"], name="schedule_run_owner"),
            models.Index(fields=["status", "retry_at"], name="schedule_run_open"),
        ]

    def __str__(self) -> str:
        return f"{self.schedule_id} @ {self.scheduled_for:%Y-%m-%d %H:%M} ({self.status})"

    @property
    def open(self) -> bool:
        return self.status in OPEN_STATUSES
