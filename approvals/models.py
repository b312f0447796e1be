"""Approvals: a paused run's tool calls that an operator decides (Agno's ``@approval``).

A row is written with the pause of a run whose paused tool calls carry ``approval_type``
("required": the run waits for the row's resolution; "audit": a record of the human's decision,
written once it is made). The row belongs to the run's owner (the requester); who resolved it is
``resolved_by``, the authenticated subject of the resolve call, never the body's claim.
"""
from __future__ import annotations

from django.db import models
from django.utils import timezone

from core.tenancy import OwnedModel


class ApprovalStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


class ApprovalType(models.TextChoices):
    REQUIRED = "required"
    AUDIT = "audit"


class Approval(OwnedModel):
    id = models.CharField(max_length=64, primary_key=True)
    run_id = models.CharField(max_length=64)
    session_id = models.CharField(max_length=255, blank=True, default="")
    status = models.CharField(max_length=16, choices=ApprovalStatus.choices, default=ApprovalStatus.PENDING)
    # "agent" | "team" | "workflow": the kind of the run's component.
    source_type = models.CharField(max_length=16, default="agent")
    source_name = models.CharField(max_length=255, blank=True, default="")
    approval_type = models.CharField(max_length=16, choices=ApprovalType.choices, default=ApprovalType.REQUIRED)
    # "confirmation" | "user_input" | "external_execution": what the first approval tool asks for.
    pause_type = models.CharField(max_length=32, default="confirmation")
    tool_name = models.CharField(max_length=255, blank=True, default="")
    tool_args = models.JSONField(null=True, blank=True)
    agent_id = models.CharField(max_length=255, null=True, blank=True)
    team_id = models.CharField(max_length=255, null=True, blank=True)
    workflow_id = models.CharField(max_length=255, null=True, blank=True)
    schedule_id = models.CharField(max_length=255, null=True, blank=True)
    schedule_run_id = models.CharField(max_length=255, null=True, blank=True)
    # The run's RunRequirement dicts at the pause, as AgentOS keeps them for its UI.
    requirements = models.JSONField(null=True, blank=True)
    context = models.JSONField(null=True, blank=True)
    # What the resolver sent with the decision: {"note": ...}, user input {"values": ...}, {"result": ...}.
    resolution_data = models.JSONField(null=True, blank=True)
    resolved_by = models.CharField(max_length=255, null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "agno_approvals"
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["user_id", "status", "-created_at"], name="approval_owner_status"),
            models.Index(fields=["status", "-created_at"], name="approval_status_created"),
            models.Index(fields=["user_id", "run_id"], name="approval_owner_run"),
        ]

    def __str__(self) -> str:
        return f"{self.tool_name or 'approval'} ({self.status})"

    @property
    def pending(self) -> bool:
        return self.status == ApprovalStatus.PENDING

    @property
    def note(self) -> str:
        """The resolver's note, where Agno reads it (``note``, or ``reason``)."""
        data = self.resolution_data if isinstance(self.resolution_data, dict) else {}
        return str(data.get("note") or data.get("reason") or "")
