"""The LearningMachine: what an agent learns about its user, kept per user (Agno v3's ``agno.learn``).

Agno v3 replaced agentic memory with a machine of stores in one table (``agno_learnings``): the
user's memories (``user_memory``), their profile (``user_profile``), entities they mention
(``entity_memory``, by namespace) and decision logs (``decision_log``). The engine keeps no
storage: the caller hands the run a learned-memory store (``LearnedMemoryStore``, and for the
agentic stores ``engine.learning_tools.LearningRecords``) scoped to the run's user.

With learning on, the agent reads the user's learned memories into its context and records new
ones when the run ends, through the same memory model (``MemoryManager``) as the legacy memory
pair, which learning replaces: both offer the model a tool to update the user's memory, and, as
Agno v3 says, the legacy one silently shadowed the store's, so turning learning on clears it.

Record ids are deterministic for the identity-keyed types, as Agno's ``build_learning_id``: the
REST API and the agent address the same row. Under ``namespace="user"`` an entity's id embeds a
fixed-width digest of the user id, so two users who record the same entity never share a row.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from engine.ids import new_uuid

USER_MEMORY = "user_memory"
USER_PROFILE = "user_profile"
ENTITY_MEMORY = "entity_memory"
SESSION_CONTEXT = "session_context"
DECISION_LOG = "decision_log"
IDENTITY_KEYED_TYPES = frozenset({USER_PROFILE, USER_MEMORY, SESSION_CONTEXT, ENTITY_MEMORY})

DEFAULT_NAMESPACE = "global"
USER_NAMESPACE = "user"
# Rows the re-key migration found holding two users' data: no store reads this namespace.
QUARANTINE_NAMESPACE = "quarantined_user"


def user_key_segment(user_id: str) -> str:
    """Fixed-width digest of a user id for the ``namespace="user"`` entity key: a crafted user id
    or entity type cannot shift the underscore-joined segments onto another user's key, and raw
    user ids (often e-mail addresses) stay out of ids that appear in URLs and logs."""
    return hashlib.sha256(str(user_id).encode("utf-8")).hexdigest()[:16]


def learning_id_for(
    learning_type: str,
    *,
    user_id: str | None = None,
    session_id: str | None = None,
    entity_id: str | None = None,
    entity_type: str | None = None,
    namespace: str | None = None,
) -> str | None:
    """The deterministic id of an identity-keyed record (Agno's ``build_learning_id``); None for
    the other types, or when the identity fields are missing."""
    if learning_type == USER_PROFILE:
        return f"user_profile_{user_id}" if user_id else None
    if learning_type == USER_MEMORY:
        return f"memories_{user_id}" if user_id else None
    if learning_type == SESSION_CONTEXT:
        return f"session_context_{session_id}" if session_id else None
    if learning_type == ENTITY_MEMORY:
        if not (entity_id and entity_type):
            return None
        effective = namespace or DEFAULT_NAMESPACE
        if effective == USER_NAMESPACE:
            return f"entity_user_{user_key_segment(user_id)}_{entity_type}_{entity_id}" if user_id else None
        return f"entity_{effective}_{entity_type}_{entity_id}"
    return None


def legacy_entity_id(entity_id: str, entity_type: str, namespace: str | None) -> str:
    """The pre-v3 entity id: no user component, so users collided under ``namespace="user"``."""
    return f"entity_{namespace or DEFAULT_NAMESPACE}_{entity_type}_{entity_id}"


@dataclass(frozen=True)
class LearningMachine:
    """Which stores an agent learns into. ``enable_learning=True`` builds the default machine
    (user memory and user profile); a registry declares named ones for ``learning_name``."""

    name: str = "default"
    user_memory: bool = True
    user_profile: bool = True
    # The namespace the agent's entity memory reads and writes; None: no entity memory.
    entity_namespace: str | None = None
    decision_log: bool = False

    @property
    def agentic(self) -> bool:
        """Whether it has a store the agent writes through tools (engine.learning_tools)."""
        return self.entity_namespace is not None or self.decision_log


DEFAULT_MACHINE = LearningMachine()


def memories_from_content(content: Any) -> list[dict[str, Any]]:
    """A ``user_memory`` record's memories as the memory manager's dicts
    (``{memory_id, memory, topics}``). Agno keeps them as ``{"memories": [{"id", "content"}]}``."""
    entries = content.get("memories") if isinstance(content, dict) else None
    memories = []
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("content"):
            memories.append(
                {"memory_id": str(entry.get("id") or ""), "memory": str(entry["content"]), "topics": list(entry.get("topics") or [])}
            )
        elif isinstance(entry, str) and entry:
            memories.append({"memory_id": "", "memory": entry, "topics": []})
    return memories


class LearnedMemoryStore:
    """The memory manager's ``MemoryStore`` over the user's ``user_memory`` learning record.

    Writes change a copy of the record's content; ``record()`` is the row to store once the run
    has completed (None when nothing changed), so a failed run learns nothing.
    """

    def __init__(
        self,
        *,
        user_id: str,
        agent_id: str | None,
        existing: dict[str, Any] | None,
        profile: dict[str, Any] | None = None,
        profile_enabled: bool = False,
    ) -> None:
        self.user_id = user_id
        self.agent_id = agent_id
        self.existing = existing
        # The user's user_profile record (its content), kept when the machine's profile is on.
        self.profile_enabled = profile_enabled
        self.profile: dict[str, Any] = dict(profile or {})
        self.profile_changed = False
        content = dict(existing.get("content") or {}) if existing else {}
        self.entries: list[dict[str, Any]] = [
            dict(entry) for entry in content.get("memories") or [] if isinstance(entry, dict)
        ]
        self.content = content
        self.changed = False

    @property
    def learning_id(self) -> str:
        return f"memories_{self.user_id}"

    def memories(self) -> list[dict[str, Any]]:
        return memories_from_content({"memories": self.entries})

    def add(self, *, memory: str, topics: list[str], input: str) -> dict[str, Any]:
        entry = {"id": new_uuid().hex[:12], "content": memory, "topics": list(topics)}
        self.entries.append(entry)
        self.changed = True
        return {"memory_id": entry["id"], "memory": memory, "topics": list(topics)}

    def update(self, *, memory_id: str, memory: str, topics: list[str]) -> dict[str, Any]:
        entry = self._entry(memory_id)
        entry.update(content=memory, topics=list(topics))
        self.changed = True
        return {"memory_id": memory_id, "memory": memory, "topics": list(topics)}

    def delete(self, *, memory_id: str) -> None:
        self.entries.remove(self._entry(memory_id))
        self.changed = True

    def update_profile(self, *, field: str, value: str) -> None:
        if not self.profile_enabled:
            raise PermissionError("this agent's learning machine keeps no profile")
        if self.profile.get(field) != value:
            self.profile[field] = value
            self.profile_changed = True

    def records(self) -> list[dict[str, Any]]:
        """The rows to store for what the run learned (none when nothing changed)."""
        rows = [row for row in (self.record(),) if row is not None]
        if self.profile_changed:
            rows.append({
                "learning_id": f"user_profile_{self.user_id}",
                "learning_type": USER_PROFILE,
                "user_id": self.user_id,
                "agent_id": self.agent_id,
                "content": {**self.profile, "user_id": self.user_id},
            })
        return rows

    def record(self) -> dict[str, Any] | None:
        if not self.changed:
            return None
        return {
            "learning_id": self.learning_id,
            "learning_type": USER_MEMORY,
            "user_id": self.user_id,
            "agent_id": (self.existing or {}).get("agent_id", self.agent_id),
            "content": {**self.content, "user_id": self.user_id, "memories": self.entries},
        }

    def _entry(self, memory_id: str) -> dict[str, Any]:
        for entry in self.entries:
            if str(entry.get("id")) == memory_id:
                return entry
        raise KeyError(f"No learned memory with id {memory_id!r}")
