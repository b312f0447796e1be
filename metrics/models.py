"""Daily and monthly usage aggregates, and the refresh's watermark and status (Agno's ``agno_metrics``).

Rows are derived data: ``metrics.services.metrics_refresh`` recomputes them from the runs table.

One row per (user_id, date, aggregation_period). Agno stores the unowned bucket as ``''`` in a NOT
NULL column; here it is ``user_id`` NULL, the tenancy convention for rows nobody owns (so the
owner's scoped manager never returns it, and ``all_users`` / an admin's scope does). NULLs are
distinct in a unique constraint on both databases, so the shared bucket has a partial unique
index of its own, on (date, aggregation_period) where user_id IS NULL.
"""
from __future__ import annotations

from django.db import models
from django.utils import timezone

from core.tenancy import OwnedModel


class AggregationPeriod(models.TextChoices):
    DAILY = "daily"
    MONTHLY = "monthly"


class RefreshStatus(models.TextChoices):
    IDLE = "idle"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"


# Upper bounds (seconds) of the run-duration histogram each row keeps, so percentiles over many
# rows (every user's day on the dashboard) can be estimated without the runs; the last bucket is open.
DURATION_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 120.0, 300.0, 600.0)


class MetricsAggregate(OwnedModel):
    id = models.CharField(max_length=320, primary_key=True)  # "<date>_<period>" (+ "_<user_id>" when owned)
    date = models.DateField()  # the day, or the first day of the month, in METRICS_TIMEZONE
    aggregation_period = models.CharField(max_length=16, choices=AggregationPeriod.choices)
    agent_runs_count = models.PositiveIntegerField(default=0)
    team_runs_count = models.PositiveIntegerField(default=0)
    workflow_runs_count = models.PositiveIntegerField(default=0)
    agent_sessions_count = models.PositiveIntegerField(default=0)
    team_sessions_count = models.PositiveIntegerField(default=0)
    workflow_sessions_count = models.PositiveIntegerField(default=0)
    users_count = models.PositiveIntegerField(default=0)
    # AgentOS's shapes: token_metrics {input_tokens, output_tokens, total_tokens, ...};
    # model_metrics [{model_id, model_provider, count, input_tokens, output_tokens, total_tokens}].
    token_metrics = models.JSONField(default=dict)
    model_metrics = models.JSONField(default=list)
    # This server's extensions: [{component_type, component_id, runs, errors, total_tokens}].
    component_metrics = models.JSONField(default=list)
    errors_count = models.PositiveIntegerField(default=0)
    cost = models.FloatField(null=True, blank=True)  # None: no run of the period was priced
    duration_p50 = models.FloatField(null=True, blank=True)
    duration_p95 = models.FloatField(null=True, blank=True)
    duration_histogram = models.JSONField(default=list)  # counts per DURATION_BUCKETS (+ one open bucket)
    time_zone = models.CharField(max_length=64, default="UTC")
    completed = models.BooleanField(default=False)  # the period is over (its numbers will not change)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "agno_metrics"
        verbose_name = "metrics row"
        constraints = [
            models.UniqueConstraint(fields=["user_id", "date", "aggregation_period"], name="uq_metrics_user_date_period"),
            models.UniqueConstraint(
                fields=["date", "aggregation_period"], condition=models.Q(user_id__isnull=True), name="uq_metrics_shared_date_period",
            ),
        ]
        indexes = [models.Index(fields=["aggregation_period", "date"], name="metrics_period_date")]

    def __str__(self) -> str:
        return self.id


class MetricsRefreshState(OwnedModel):
    """One row per refresh scope: "all" (an operator's refresh: every user's rows and the shared
    bucket; user_id NULL), "user:<id>" (a user's refresh of their own rows) or "shared" (an
    anonymous caller's refresh of the shared bucket; user_id NULL).

    ``watermark``: runs updated before it are reflected in this scope's rows."""

    scope = models.CharField(max_length=300, primary_key=True)
    status = models.CharField(max_length=16, choices=RefreshStatus.choices, default=RefreshStatus.IDLE)
    job_id = models.CharField(max_length=64, blank=True, default="")
    watermark = models.DateTimeField(null=True, blank=True)
    time_zone = models.CharField(max_length=64, blank=True, default="")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    days_recomputed = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "agno_metrics_refresh"

    def __str__(self) -> str:
        return f"{self.scope} ({self.status})"
