"""Writes of learning records. The owner always comes from the caller (the view passes it)."""
from __future__ import annotations

import re
import uuid
from datetime import datetime
from datetime import timezone as tz
from typing import Any

from django.db import transaction
from django.utils import timezone

from engine.learning import (
    DEFAULT_NAMESPACE,
    ENTITY_MEMORY,
    IDENTITY_KEYED_TYPES,
    USER_NAMESPACE,
    LearnedMemoryStore,
    LearningMachine,
    learning_id_for,
)

from .models import Learning
from .records import RunLearningRecords
from .rekey import merge_contents

# A custom namespace opening on a user digest would reproduce some user's "user"-namespace key
# ("entity_user_<16 hex>_<type>_<id>"): entity creates refuse the whole family, as AgentOS does.
RESERVED_ENTITY_NAMESPACE = re.compile(r"user_[0-9a-f]{16}(_.*)?")


class LearningInvalid(ValueError):
    """The record cannot be keyed (a 422)."""


class LearningExists(Exception):
    """An identity-keyed record already exists (a 409: PATCH it instead)."""

    def __init__(self, learning_type: str, learning_id: str) -> None:
        super().__init__(
            f"A '{learning_type}' learning already exists for this identity (id '{learning_id}'). "
            f"Use PATCH /learnings/{learning_id} to update it."
        )


def learning_create(*, owner_id: str | None, fields: dict[str, Any]) -> Learning:
    learning_type = fields["learning_type"]
    namespace = fields.get("namespace")
    if learning_type == ENTITY_MEMORY:
        namespace = namespace or DEFAULT_NAMESPACE
        if RESERVED_ENTITY_NAMESPACE.fullmatch(namespace):
            raise LearningInvalid(f"namespace {namespace!r} is reserved: it would reproduce a user-scoped entity key")
    key = learning_id_for(
        learning_type,
        user_id=owner_id,
        session_id=fields.get("session_id"),
        entity_id=fields.get("entity_id"),
        entity_type=fields.get("entity_type"),
        namespace=namespace,
    )
    if learning_type in IDENTITY_KEYED_TYPES and key is None:
        if learning_type == ENTITY_MEMORY and namespace == USER_NAMESPACE:
            raise LearningInvalid(
                'entity_memory under namespace="user" is keyed by the owning user as well as the entity; '
                "provide user_id together with entity_id + entity_type so the record reconciles with the agent's store."
            )
        raise LearningInvalid(
            f"learning_type '{learning_type}' is keyed by its identity fields; provide the required field(s) "
            "(user_id, session_id, or entity_id + entity_type) so the record reconciles with the agent's store."
        )
    learning_id = key or str(uuid.uuid4())
    # Ids are global, as AgentOS keys them: a taken deterministic id is a conflict whoever holds it.
    taken = Learning.objects.unscoped("learning ids are global: a taken id is a conflict").filter(pk=learning_id)
    if key is not None and taken.exists():
        raise LearningExists(learning_type, learning_id)
    now = timezone.now()
    return Learning.objects.create(
        learning_id=learning_id,
        learning_type=learning_type,
        user_id=owner_id,
        namespace=namespace,
        agent_id=fields.get("agent_id"),
        team_id=fields.get("team_id"),
        session_id=fields.get("session_id"),
        entity_id=fields.get("entity_id"),
        entity_type=fields.get("entity_type"),
        content=fields["content"],
        metadata=fields.get("metadata"),
        created_at=now,
        updated_at=now,
    )


def learning_update(*, learning: Learning, changes: dict[str, Any]) -> Learning:
    """Replace content and/or metadata (identity fields are immutable)."""
    fields = [name for name in ("content", "metadata") if name in changes]
    if not fields:
        return learning
    for name in fields:
        setattr(learning, name, changes[name])
    learning.updated_at = timezone.now()
    learning.save(update_fields=[*fields, "updated_at"])
    return learning


def learning_delete(*, learning: Learning) -> None:
    if learning.user_id:
        Learning.objects.for_user(learning.user_id).filter(pk=learning.pk).delete()
    else:
        Learning.objects.unscoped("an admin deletes a record no one owns").filter(pk=learning.pk, user_id__isnull=True).delete()


def learnings_delete_for_user(*, user_id: str, learning_type: str | None = None) -> int:
    rows = Learning.objects.for_user(user_id)
    if learning_type:
        rows = rows.filter(learning_type=learning_type)
    deleted, _ = rows.delete()
    return deleted


def learning_store(*, user_id: str, record: dict[str, Any]) -> None:
    """Write what a run learned (the engine's record dict) as the user's row; the run's record
    transaction calls this, so a failed run learns nothing."""
    now = timezone.now()
    with transaction.atomic():
        mine = Learning.objects.for_user(user_id)
        updated = mine.filter(pk=record["learning_id"]).update(content=record["content"], updated_at=now)
        if not updated:
            Learning.objects.create(
                learning_id=record["learning_id"],
                learning_type=record["learning_type"],
                user_id=user_id,
                agent_id=record.get("agent_id"),
                content=record["content"],
                created_at=now,
                updated_at=now,
            )


def entity_delete(*, user_id: str | None, namespace: str, entity_type: str, entity_id: str) -> bool:
    """Delete an entity record by its identity. Under ``namespace="user"`` the user id is
    required (v3: a caller could otherwise delete another user's entity by name)."""
    from .selectors import entity_get

    learning = entity_get(user_id=user_id, namespace=namespace, entity_type=entity_type, entity_id=entity_id)
    if learning is None:
        return False
    learning_delete(learning=learning)
    return True


class LearnedMemoryBuffer(RunLearningRecords, LearnedMemoryStore):
    """The engine's learning store for one run. What the memory model learned (user memory and
    profile) is written when the run is recorded (in its transaction, as the legacy
    ``BufferedMemoryStore``): a failed run learns nothing of it. Entity memory and decision logs
    are written by the agent's tools as it calls them (``learnings.records``)."""

    @classmethod
    def for_run(cls, *, user_id: str, agent_id: str | None, machine: LearningMachine) -> LearnedMemoryBuffer:
        from .selectors import learned_records_for_run

        memory, profile = learned_records_for_run(user_id=user_id)
        store = cls(
            user_id=user_id, agent_id=agent_id, existing=memory,
            profile=(profile or {}).get("content") if machine.user_profile else None, profile_enabled=machine.user_profile,
        )
        store.load_context(machine)
        return store

    def flush(self) -> None:
        for record in self.records():
            learning_store(user_id=self.user_id, record=record)
        self.changed = self.profile_changed = False


class LearningIdTaken(Exception):
    """An imported record's id is held here by another owner."""


def learning_import(*, row: dict[str, Any]) -> bool:
    """Write one ``agno_learnings`` row of an Agno database as it is, keys unchanged (pre-v3
    entity keys included: ``manage.py rekey_learnings`` re-keys them afterwards). ``content`` and
    ``metadata`` already decoded; timestamps in epoch seconds. True when written, False when the
    row is here already (a second import adds nothing); ``LearningIdTaken`` when another owner
    holds its id. For the Agno importer (importer/), which reads the source."""
    learning_id, owner = str(row["learning_id"]), row.get("user_id") or None
    holders = list(Learning.objects.unscoped("an imported id is global: who holds it here").filter(pk=learning_id).values_list("user_id", flat=True))
    if holders:
        if holders[0] != owner:
            raise LearningIdTaken(f"learning id {learning_id!r} is held here by another owner")
        return False
    if not isinstance(row.get("content"), dict):
        raise LearningInvalid(f"learning {learning_id!r}: content is not an object")

    def moment(seconds: Any) -> Any:
        return datetime.fromtimestamp(int(seconds), tz=tz.utc) if seconds not in (None, "") else timezone.now()

    Learning.objects.create(
        learning_id=learning_id, learning_type=str(row["learning_type"]), user_id=owner, namespace=row.get("namespace"),
        agent_id=row.get("agent_id"), team_id=row.get("team_id"), session_id=row.get("session_id"),
        entity_id=row.get("entity_id"), entity_type=row.get("entity_type"), content=row["content"],
        metadata=row.get("metadata") if isinstance(row.get("metadata"), dict) else None,
        created_at=moment(row.get("created_at")), updated_at=moment(row.get("updated_at") or row.get("created_at")),
    )
    return True


def learning_merge_imported(*, owner_id: str, learning_id: str, content: dict[str, Any]) -> bool:
    """Fold an imported pre-v3 entity into the owner's row on its user-scoped key, if there is one
    (the owner's agents wrote it here first): that row wins every conflict, the imported facts,
    events and relationships it lacks are added (``rekey.merge_contents``). False: no such row."""
    row = Learning.objects.for_user(owner_id).select_for_update().filter(pk=learning_id).first()
    if row is None:
        return False
    if not isinstance(row.content, dict):
        raise LearningInvalid(f"learning {learning_id!r} here has content that is not an object: it cannot be merged into")
    row.content = merge_contents(content, row.content)
    row.updated_at = timezone.now()
    row.save(update_fields=["content", "updated_at"])
    return True
