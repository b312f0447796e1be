"""The durable job queue's rows: a job (one background run, an ingestion, a refresh, ...), a
request to cancel a run, and a worker process's liveness.

The tables keep the names they had when these models lived in ``agents`` (``agno_jobs``,
``agno_cancel_intents``, ``agno_process_beats``): the move changed Django's state only.
"""
from __future__ import annotations

from django.db import models
from django.utils import timezone

from core.tenancy import OwnedModel


class CancelIntent(OwnedModel):
    """A request to cancel a run, readable by every process (the run may not exist yet:
    AgentOS records the intent so a cancel that races ahead of its run still applies).

    ``user_id`` binds the intent to runs of that user (an isolated caller can only stop their
    own run, even one not yet recorded); null applies to the run whoever owns it (an admin, an
    operator, the open server). Several callers may ask, so a run can have several intents.
    """

    run_id = models.CharField(max_length=64, db_index=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        db_table = "agno_cancel_intents"
        constraints = [models.UniqueConstraint(fields=["run_id", "user_id"], name="agno_cancel_intent_once_per_user")]

    def __str__(self) -> str:
        return f"cancel {self.run_id}"


class JobStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    PAUSED = "paused"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


# The run status a job's status reads as in API answers (AgentOS's mapping).
JOB_TO_RUN_STATUS = {
    JobStatus.QUEUED: "PENDING",
    JobStatus.RUNNING: "RUNNING",
    JobStatus.PAUSED: "PAUSED",
    JobStatus.COMPLETED: "COMPLETED",
    JobStatus.FAILED: "ERROR",
    JobStatus.CANCELLED: "CANCELLED",
}


class Job(OwnedModel):
    """A durable background run: accepted means this row (and the run's PENDING row) committed.

    Workers claim queued jobs with a conditional update under the queue lock, hold a lease they
    renew by heartbeats, and fence their final write on (locked_by, attempt): a worker that lost
    its lease cannot overwrite what its successor wrote. The id is the run id.
    """

    id = models.CharField(max_length=64, primary_key=True)
    # Which registered handler executes it (jobs.registry): "run", "continue"
    # and "branch" (a continuation in a new run) are runs; other kinds (knowledge ingestion, a
    # metrics refresh) have no run row, and may have no session.
    job_type = models.CharField(max_length=32, default="run")
    component_type = models.CharField(max_length=16, default="agent")
    component_id = models.CharField(max_length=255, blank=True, default="")
    # "" for a job outside any session. Jobs of one session run one at a time, in order, except
    # those of one group (a workflow run and its parallel steps), which run alongside each other.
    session_id = models.CharField(max_length=255, blank=True, default="", db_index=True)
    group_id = models.CharField(max_length=64, blank=True, default="")
    # A workflow's Parallel branch on the background path ("workflow-branch" jobs): the job of the
    # workflow run that waits for it, and its place among the branches. The parent already holds
    # its session's turn, so a branch never waits behind the session (the claim exempts it), and
    # its parent, which waits on it holding no thread, does not count against it under the caps.
    parent_job_id = models.CharField(max_length=64, blank=True, default="", db_index=True)
    branch_index = models.PositiveIntegerField(null=True, blank=True)
    # What a finished branch job hands its parent (its step output, executor runs, events,
    # session state changes, or its failure), written with its end, fenced.
    result = models.JSONField(default=dict, blank=True)
    # What a long job has done so far, for the UI and the admin (its handler writes it, fenced).
    progress = models.JSONField(default=dict, blank=True)
    payload = models.JSONField(default=dict)
    stream = models.BooleanField(default=False)
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED)
    attempt = models.PositiveIntegerField(default=0)
    max_attempts = models.PositiveIntegerField(default=1)
    # Per-user deduplication: the owner (or "" for anonymous callers) and the client's key.
    idempotency_scope = models.CharField(max_length=255, blank=True, default="")
    idempotency_key = models.CharField(max_length=512, null=True, blank=True)
    available_at = models.DateTimeField(default=timezone.now)
    locked_by = models.CharField(max_length=128, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "agno_jobs"
        indexes = [
            # The claim reads queued jobs oldest first and stops after a few: an ordered scan.
            models.Index(fields=["status", "created_at", "id"], name="job_claim_order"),
            models.Index(fields=["session_id", "status"], name="job_session_status"),
            models.Index(fields=["user_id", "status"], name="job_user_status"),
            models.Index(fields=["status", "lease_expires_at"], name="job_lease"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["idempotency_scope", "idempotency_key"],
                condition=models.Q(idempotency_key__isnull=False),
                name="job_idempotency_unique_per_user",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.component_id} {self.id} ({self.status})"


class ProcessBeat(models.Model):
    """A worker's liveness, one row per worker name (a process's job loop): the process's watch
    thread writes ``beat_at`` every AGENTOS_PROCESS_HEARTBEAT_SECONDS while it holds jobs, and the
    reaper gives up the jobs of a worker whose beat is older than AGENTOS_PROCESS_LOST_AFTER_SECONDS
    without waiting for each job's lease (jobs.services.liveness). The row named ``~reaper``
    holds the reaper's last pass. Nobody's data: no owner."""

    name = models.CharField(max_length=200, primary_key=True)
    beat_at = models.DateTimeField(db_index=True)

    class Meta:
        db_table = "agno_process_beats"

    def __str__(self) -> str:
        return f"{self.name} @ {self.beat_at:%H:%M:%S}"
