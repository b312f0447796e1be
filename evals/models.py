"""Eval runs, eval datasets and batch runs over a dataset, each owned by its user (core.tenancy).

An eval run is keyed by its own ``run_id`` (Agno v3: "every eval run gets its own run_id, so
re-runs never overwrite each other"); the table is Agno's ``agno_eval_runs`` with the columns
of a background job on top (status, progress, error), since our evals run on the job queue.
"""
from __future__ import annotations

from django.db import models
from django.utils import timezone

from core.tenancy import OwnedModel


class EvalType(models.TextChoices):
    ACCURACY = "accuracy"
    AGENT_AS_JUDGE = "agent_as_judge"
    PERFORMANCE = "performance"
    RELIABILITY = "reliability"


class EvalStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"


class ComponentKind(models.TextChoices):
    AGENT = "agent"
    TEAM = "team"
    WORKFLOW = "workflow"


class EvalRun(OwnedModel):
    run_id = models.CharField(max_length=64, primary_key=True)
    eval_type = models.CharField(max_length=32, choices=EvalType.choices)
    name = models.CharField(max_length=255, null=True, blank=True)
    component_kind = models.CharField(max_length=16, choices=ComponentKind.choices, default=ComponentKind.AGENT)
    agent_id = models.CharField(max_length=255, null=True, blank=True)
    team_id = models.CharField(max_length=255, null=True, blank=True)
    workflow_id = models.CharField(max_length=255, null=True, blank=True)
    model_id = models.CharField(max_length=255, null=True, blank=True)
    model_provider = models.CharField(max_length=255, null=True, blank=True)
    evaluated_component_name = models.CharField(max_length=255, null=True, blank=True)
    # What was asked (EvalRunInput's fields, as Agno logs them) and what came out (Agno's result).
    eval_input = models.JSONField(default=dict)
    eval_data = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=EvalStatus.choices, default=EvalStatus.QUEUED)
    error = models.TextField(blank=True, default="")
    progress = models.JSONField(default=dict, blank=True)
    # A single number to compare runs by (accuracy and agent-as-judge: the average score;
    # reliability: 10 passed, 0 failed; performance: none), for the admin's trends.
    score = models.FloatField(null=True, blank=True)
    job_id = models.CharField(max_length=64, blank=True, default="")
    batch_id = models.CharField(max_length=64, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "agno_eval_runs"
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["user_id", "-created_at"], name="evalrun_owner_created"),
            models.Index(fields=["user_id", "agent_id", "-created_at"], name="evalrun_owner_agent"),
            models.Index(fields=["user_id", "batch_id"], name="evalrun_owner_batch"),
        ]

    def __str__(self) -> str:
        return f"{self.name or self.eval_type} ({self.status})"

    @property
    def component_id(self) -> str | None:
        return self.agent_id or self.team_id or self.workflow_id


class EvalDataset(OwnedModel):
    """Cases to run an eval over: ``[{"input": ..., "expected_output": ...}, ...]``."""

    id = models.CharField(max_length=64, primary_key=True)
    name = models.CharField(max_length=255)
    description = models.TextField(blank=True, default="")
    cases = models.JSONField(default=list)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "agno_eval_datasets"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["user_id", "-created_at"], name="evalds_owner_created")]

    def __str__(self) -> str:
        return f"{self.name} ({len(self.cases or [])} cases)"


class EvalBatch(OwnedModel):
    """One run of an eval over every case of a dataset: one EvalRun per case (``batch_id``) and
    their aggregate score."""

    id = models.CharField(max_length=64, primary_key=True)
    dataset_id = models.CharField(max_length=64)
    dataset_name = models.CharField(max_length=255, blank=True, default="")
    eval_type = models.CharField(max_length=32, choices=EvalType.choices, default=EvalType.ACCURACY)
    component_kind = models.CharField(max_length=16, choices=ComponentKind.choices, default=ComponentKind.AGENT)
    component_id = models.CharField(max_length=255)
    # The eval's options for every case (criteria, scoring_strategy, threshold, ...).
    options = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=EvalStatus.choices, default=EvalStatus.QUEUED)
    error = models.TextField(blank=True, default="")
    progress = models.JSONField(default=dict, blank=True)
    cases_total = models.IntegerField(default=0)
    cases_passed = models.IntegerField(default=0)
    aggregate_score = models.FloatField(null=True, blank=True)
    job_id = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "agno_eval_batches"
        verbose_name_plural = "eval batches"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["user_id", "-created_at"], name="evalbatch_owner_created")]

    def __str__(self) -> str:
        return f"{self.dataset_name or self.dataset_id} on {self.component_id} ({self.status})"
