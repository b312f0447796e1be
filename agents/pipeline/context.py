"""Adapters from the runtime's storage protocols (engine.context) to the ORM."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from core.tenancy import scope_queryset
from sessions.models import Run, RunStatus, Session, UserMemory
from sessions.services.memories import memory_topics_key
from sessions.services.runs import new_id

MEMORIES_IN_CONTEXT = 50


def memories_for_context(*, user_id: str | None) -> list[dict[str, Any]]:
    if not user_id:
        return []
    rows = UserMemory.objects.for_user(user_id).order_by("-updated_at").values("memory_id", "memory", "topics")[:MEMORIES_IN_CONTEXT]
    return [dict(row) for row in rows]


@dataclass
class BufferedMemoryStore:
    """The memory manager's writes, held until the run is recorded, then applied in the same
    transaction. Only the user's own memories (those the run was given) can be changed."""

    user_id: str
    agent_id: str | None
    known: dict[str, dict[str, Any]]
    operations: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @classmethod
    def for_run(cls, *, user_id: str, agent_id: str | None, memories: list[dict[str, Any]]) -> BufferedMemoryStore:
        return cls(user_id=user_id, agent_id=agent_id, known={m["memory_id"]: dict(m) for m in memories})

    def add(self, *, memory: str, topics: list[str], input: str) -> dict[str, Any]:
        row = {"memory_id": new_id(), "memory": memory, "topics": list(topics), "input": input}
        self.known[row["memory_id"]] = row
        self.operations.append(("add", row))
        return dict(row)

    def update(self, *, memory_id: str, memory: str, topics: list[str]) -> dict[str, Any]:
        if memory_id not in self.known:
            raise KeyError(f"no memory {memory_id} for this user")
        row = {**self.known[memory_id], "memory": memory, "topics": list(topics)}
        self.known[memory_id] = row
        self.operations.append(("update", row))
        return dict(row)

    def delete(self, *, memory_id: str) -> None:
        if memory_id not in self.known:
            raise KeyError(f"no memory {memory_id} for this user")
        del self.known[memory_id]
        self.operations.append(("delete", {"memory_id": memory_id}))

    def flush(self) -> None:
        """Apply the buffered writes (call inside the run's recording transaction)."""
        now = timezone.now()
        mine = UserMemory.objects.for_user(self.user_id)
        for kind, row in self.operations:
            if kind == "add":
                UserMemory.objects.create(
                    memory_id=row["memory_id"], user_id=self.user_id, memory=row["memory"], topics=row["topics"],
                    topics_key=memory_topics_key(row["topics"]), input=row.get("input", ""), agent_id=self.agent_id,
                    created_at=now, updated_at=now,
                )
            elif kind == "update":
                mine.filter(pk=row["memory_id"]).update(memory=row["memory"], topics=row["topics"], topics_key=memory_topics_key(row["topics"]), updated_at=now)
            else:
                mine.filter(pk=row["memory_id"]).delete()
        self.operations.clear()


@dataclass
class StoredPastSessions:
    """The user's other recent sessions, for ``search_past_sessions`` (two queries)."""

    user: Any
    current_session_id: str

    def recent_runs(self, num_sessions: int, num_runs_per_session: int) -> list[dict[str, Any]]:
        session_ids = list(
            scope_queryset(Session.objects, self.user)
            .exclude(pk=self.current_session_id)
            .order_by("-updated_at")
            .values_list("pk", flat=True)[: max(0, num_sessions)]
        )
        if not session_ids:
            return []
        # One bounded query per session (a few sessions): the cost never depends on their length.
        runs: list[dict[str, Any]] = []
        for session_id in session_ids:
            rows = list(
                scope_queryset(Run.objects, self.user)
                .filter(session_id=session_id, parent_run_id__isnull=True, status=RunStatus.COMPLETED)
                .order_by("-run_index")
                .values_list("run_data", flat=True)[: max(0, num_runs_per_session)]
            )
            runs += [{**data, "session_id": session_id} for data in reversed(rows)]
        return runs
