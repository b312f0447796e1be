"""Sessions, runs (one row per run), run events and user memories: Agno v3's storage design.

Every table here is owned (``core.tenancy.OwnedModel``): ``Model.objects`` refuses unscoped
queries. Child rows (runs, events) carry their own ``user_id``, copied from the session owner,
so they can be scoped without joining.
"""
from __future__ import annotations

from django.db import models
from django.utils import timezone

from core.tenancy import OwnedModel


class SessionType(models.TextChoices):
    AGENT = "agent"
    TEAM = "team"
    WORKFLOW = "workflow"


class RunStatus(models.TextChoices):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    COMPLETED = "COMPLETED"
    ERROR = "ERROR"
    CANCELLED = "CANCELLED"
    REGENERATED = "REGENERATED"


class RunOrigin(models.TextChoices):
    """Where a run came from. Conversations are the runs people start (the chat, an API
    client); evals and schedules make sessions of their own, kept out of the conversation list;
    a team's member runs and a workflow's steps are made inside another run."""

    CHAT = "chat"
    API = "api"
    EVAL = "eval"
    SCHEDULE = "schedule"
    WORKFLOW_STEP = "workflow_step"
    TEAM_MEMBER = "team_member"


# The origins of the sessions the chat lists as conversations.
CONVERSATION_ORIGINS = (RunOrigin.CHAT, RunOrigin.API)


TERMINAL_STATUSES = frozenset({RunStatus.COMPLETED, RunStatus.ERROR, RunStatus.CANCELLED, RunStatus.REGENERATED})


class Session(OwnedModel):
    session_id = models.CharField(max_length=255, primary_key=True)
    session_type = models.CharField(max_length=16, choices=SessionType.choices, default=SessionType.AGENT)
    component_id = models.CharField(max_length=255, blank=True, default="", db_index=True)
    session_name = models.CharField(max_length=500, blank=True, default="")
    session_state = models.JSONField(default=dict, blank=True)
    metadata = models.JSONField(null=True, blank=True)
    summary = models.JSONField(null=True, blank=True)
    # Snapshot of the component that owns the session ({name, model: {id, provider, name}}).
    component_data = models.JSONField(null=True, blank=True)
    metrics = models.JSONField(default=dict, blank=True)
    total_tokens = models.BigIntegerField(default=0)
    # Where its first run came from (RunOrigin): the chat lists chat and API sessions only.
    origin = models.CharField(max_length=16, choices=RunOrigin.choices, default=RunOrigin.API)
    # The next run_index to hand out; bumped atomically by run_create, so two runs starting
    # on one session at once get different indexes without reading the session's runs.
    next_run_index = models.PositiveIntegerField(default=0, editable=False)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "agno_sessions"
        indexes = [
            models.Index(fields=["user_id", "-created_at"], name="session_user_created"),
            models.Index(fields=["user_id", "-updated_at"], name="session_user_updated"),
            models.Index(fields=["session_type", "-created_at"], name="session_type_created"),
            models.Index(fields=["user_id", "origin", "-updated_at"], name="session_user_origin_updated"),
        ]

    def __str__(self) -> str:
        return self.session_name or self.session_id


class SessionCount(models.Model):
    """How many sessions an owner holds: what ``MAX_SESSIONS_PER_USER`` is checked against.

    Kept by the database itself (triggers on ``agno_sessions``, migration 0006): a session
    inserted, deleted or given to another owner, by any path (a run, a fork, the importer, the
    admin, ``reassign_owner``, raw SQL), moves its owner's count in the same transaction, and an
    owner's row goes when their last session does (erasing a user's data leaves none behind). So
    the check before a new session reads one row, where counting the owner's sessions read up to
    the limit's worth of index entries on every new session (about 1 ms a run near the default
    10,000). Sessions without an owner are not counted.

    Not an ``OwnedModel``: it is derived from the owner's sessions, not data of theirs that moves,
    is exported or is erased on its own; nothing in the application writes it, and the one reader
    (``sessions.services.runs``) reads one owner's row.
    """

    user_id = models.CharField(max_length=255, primary_key=True)
    sessions = models.BigIntegerField(default=0)

    class Meta:
        db_table = "agno_session_counts"

    def __str__(self) -> str:
        return f"{self.user_id}: {self.sessions}"


class Run(OwnedModel):
    run_id = models.CharField(max_length=64, primary_key=True)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="runs", db_column="session_id")
    run_type = models.CharField(max_length=16, choices=SessionType.choices, default=SessionType.AGENT)
    component_id = models.CharField(max_length=255, blank=True, default="")
    run_index = models.PositiveIntegerField()
    parent_run_id = models.CharField(max_length=64, null=True, blank=True, db_index=True)
    origin = models.CharField(max_length=16, choices=RunOrigin.choices, default=RunOrigin.API)
    # A conversation is a tree of top-level runs: each follows the run before it on its branch
    # (None: the first turn). An edit or a regeneration is a sibling of the run it redoes. The
    # active branch (``branch_active``) is one path from the first turn: what the chat shows,
    # and what a run's history is read from.
    previous_run_id = models.CharField(max_length=64, null=True, blank=True)
    branch_active = models.BooleanField(default=True)
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.PENDING, db_index=True)
    input = models.JSONField(default=dict, blank=True)
    content = models.TextField(blank=True, default="")
    # The full RunOutput (messages, tools, metrics, requirements...), as AgentOS stores it.
    run_data = models.JSONField(default=dict, blank=True)
    model = models.CharField(max_length=255, blank=True, default="")
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    total_tokens = models.BigIntegerField(default=0)
    duration = models.FloatField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "agno_runs"
        constraints = [
            models.UniqueConstraint(fields=["session", "run_index"], name="run_index_unique_per_session"),
        ]
        indexes = [
            models.Index(fields=["user_id", "-created_at"], name="run_user_created"),
            models.Index(fields=["component_id", "-created_at"], name="run_component_created"),
            models.Index(fields=["status", "-created_at"], name="run_status_created"),
            models.Index(fields=["-created_at"], name="run_created"),
            # The metrics refresh's scan for runs changed since its watermark (metrics.services).
            models.Index(fields=["updated_at"], name="run_updated"),
        ]

    def __str__(self) -> str:
        return self.run_id


class RunEvent(OwnedModel):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events", db_column="run_id")
    event_index = models.PositiveIntegerField()
    event = models.CharField(max_length=64)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "agno_run_events"
        constraints = [
            models.UniqueConstraint(fields=["run", "event_index"], name="event_index_unique_per_run"),
        ]

    def __str__(self) -> str:
        return f"{self.event} #{self.event_index}"


class UserMemory(OwnedModel):
    memory_id = models.CharField(max_length=64, primary_key=True)
    memory = models.TextField()
    topics = models.JSONField(default=list, blank=True)
    # ",topic-a,topic-b," so topic filters are a portable LIKE on SQLite and PostgreSQL alike.
    topics_key = models.TextField(blank=True, default="", editable=False)
    input = models.TextField(blank=True, default="")
    agent_id = models.CharField(max_length=255, null=True, blank=True)
    team_id = models.CharField(max_length=255, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "agno_memories"
        verbose_name_plural = "user memories"
        indexes = [models.Index(fields=["user_id", "-updated_at"], name="memory_user_updated")]

    def __str__(self) -> str:
        return self.memory[:80]


class FeedbackRating(models.TextChoices):
    UP = "up"
    DOWN = "down"


class RunFeedback(OwnedModel):
    """A person's thumbs up or down on one reply, with an optional comment: one per user per run,
    changed in place. Owned by the rater, who can only rate their own runs."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+", db_column="run_id")
    # Copied from the run when rated, so the admin and the dashboard filter without a join.
    session_id = models.CharField(max_length=255)
    component_id = models.CharField(max_length=255, blank=True, default="")
    rating = models.CharField(max_length=8, choices=FeedbackRating.choices)
    comment = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "agno_run_feedback"
        verbose_name = "reply feedback"
        verbose_name_plural = "reply feedback"
        constraints = [
            models.UniqueConstraint(fields=["user_id", "run"], name="feedback_one_per_user_per_run"),
        ]
        indexes = [
            models.Index(fields=["user_id", "session_id"], name="feedback_user_session"),
            models.Index(fields=["-updated_at"], name="feedback_updated"),
        ]

    def __str__(self) -> str:
        return f"{self.rating} on {self.run_id}"
