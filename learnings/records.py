"""The run user's learning rows as the engine's agentic stores read and write them
(``engine.learning_tools.LearningRecords``): entity memory and decision logs.

A tool's write is its own short transaction, at the moment the agent calls it (as Agno's): the row
is read under a lock, the engine's change applied to its content, and stored. Tenancy fails
closed: a row is written only when it is the run user's, or no one's under a shared entity
namespace (``global`` or custom, which every user's agents share, as in Agno); another user's row
with the same id (learning ids are global) is refused, never overwritten, and reads see only the
user's own rows under ``namespace="user"`` and for decision logs.
"""
from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from engine.learning import DECISION_LOG, ENTITY_MEMORY, USER_NAMESPACE, LearningMachine
from engine.learning_tools import Change, LearningRefused

from .models import Learning

REFUSED = "that record is not this user's to change"


class RunLearningRecords:
    """Mixed into the run's learned-memory store (``learnings.services.LearnedMemoryBuffer``)."""

    user_id: str
    agent_id: str | None
    entity_directory: list[dict[str, Any]]
    recent_decisions: list[dict[str, Any]]

    def load_context(self, machine: LearningMachine) -> None:
        """Read what the system prompt shows of the agentic stores (one query each)."""
        self.entity_directory = [
            row["content"] for row in self.rows(learning_type=ENTITY_MEMORY, namespace=machine.entity_namespace)
        ] if machine.entity_namespace is not None else []
        self.recent_decisions = [
            row["content"] for row in self.rows(learning_type=DECISION_LOG, limit=5)
        ] if machine.decision_log else []

    def rows(
        self, *, learning_type: str, namespace: str | None = None, entity_id: str | None = None, limit: int = 100,
    ) -> list[dict[str, Any]]:
        if learning_type == ENTITY_MEMORY:
            # Under "user" only the user's own rows; a shared namespace also holds rows no one owns.
            scope = Learning.objects.for_user(self.user_id) if namespace == USER_NAMESPACE else Learning.objects.for_user_or_shared(self.user_id)
            rows = scope.filter(learning_type=ENTITY_MEMORY, namespace=namespace)
            if entity_id is not None:
                rows = rows.filter(entity_id=entity_id)
        else:
            # Decision logs are the user's own, of this agent (Agno recalls them by agent).
            rows = Learning.objects.for_user(self.user_id).filter(learning_type=learning_type, agent_id=self.agent_id)
        found = rows.order_by("-updated_at", "-learning_id").values(
            "learning_id", "learning_type", "user_id", "namespace", "entity_id", "entity_type", "content",
        )[:limit]
        return [row for row in found if isinstance(row["content"], dict)]

    def change(self, *, learning_id: str, identity: dict[str, Any], change: Change) -> dict[str, Any] | None:
        try:
            return self._change(learning_id, identity, change)
        except IntegrityError:
            # Another run created the row between our read and our insert: apply to theirs.
            return self._change(learning_id, identity, change)

    def _change(self, learning_id: str, identity: dict[str, Any], change: Change) -> dict[str, Any] | None:
        with transaction.atomic():
            row = (
                Learning.objects.unscoped("learning ids are global: whoever holds this id decides whether the run may write it")
                .select_for_update().filter(pk=learning_id).first()
            )
            if row is not None and not self._writable(row, identity):
                raise LearningRefused(REFUSED)
            content = change(dict(row.content) if row is not None else None)
            if content is None:
                return None
            now = timezone.now()
            if row is None:
                Learning.objects.create(
                    learning_id=learning_id, learning_type=identity["learning_type"], user_id=identity.get("user_id"),
                    namespace=identity.get("namespace"), agent_id=identity.get("agent_id"), team_id=identity.get("team_id"),
                    session_id=identity.get("session_id"), entity_id=identity.get("entity_id"),
                    entity_type=identity.get("entity_type"), content=content, created_at=now, updated_at=now,
                )
            else:
                row.content, row.updated_at = content, now
                row.save(update_fields=["content", "updated_at"])
            return content

    def _writable(self, row: Learning, identity: dict[str, Any]) -> bool:
        if row.learning_type != identity["learning_type"] or not isinstance(row.content, dict):
            return False
        if row.learning_type == ENTITY_MEMORY and row.namespace != identity.get("namespace"):
            return False
        if row.user_id == self.user_id:
            return True
        # No one's row: only where the write would leave it no one's (a shared entity namespace).
        return row.user_id is None and identity.get("user_id") is None
