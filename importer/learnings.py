"""Agno 3.x's ``agno_learnings`` rows: what its agents learned, per user (the learnings app).

Each row comes in under its source id and owner, once (``learnings.services.learning_import``),
except entity memory under ``namespace="user"`` on a pre-v3 key (``entity_user_<type>_<id>``,
shared by every user who named that entity): it comes in on its owner's user-scoped key
(``entity_user_<digest>_<type>_<id>``), as the v3 migration re-keys it, and where that key holds a
row already (the owner's agents wrote it here first) the two are folded together, the row here
winning every conflict. A pre-v3 user-namespace row that cannot be keyed per user (no owner, or
content that records another user than its owner: it held two users' data) is reported with its
id and left out, as is a malformed row (content not a JSON object, no learning id or type, no
entity identity).
"""
from __future__ import annotations

from typing import Any

from django.db import transaction

from engine.learning import ENTITY_MEMORY, USER_NAMESPACE, learning_id_for, legacy_entity_id
from learnings.services import LearningIdTaken, LearningInvalid, learning_import, learning_merge_imported

from .extras import RowError, json_cell
from .models import ImportedRecord

TABLE = "agno_learnings"
ORDER = "created_at, learning_id"


def import_learning(row: dict[str, Any], label: str) -> bool:
    """One ``agno_learnings`` row; True when written (or folded into a row here), False when an
    earlier import wrote it."""
    source_id, owner = str(row.get("learning_id") or ""), row.get("user_id") or None
    if not source_id or not row.get("learning_type"):
        raise RowError("learning has no learning_id or learning_type")
    content, metadata = json_cell(row, "content", dict, None), json_cell(row, "metadata", dict, None)
    if content is None:
        raise RowError("content is not a JSON object")
    decoded = {**row, "learning_id": source_id, "user_id": owner, "content": content, "metadata": metadata}
    if ImportedRecord.all_users.filter(kind="learning", source_id=source_id).exists():
        return False
    target = _user_scoped_key(decoded)
    try:
        with transaction.atomic():
            if target is None or target == source_id:
                written = learning_import(row=decoded)
            elif learning_merge_imported(owner_id=owner, learning_id=target, content=content):
                written = True
            else:
                written = learning_import(row={**decoded, "learning_id": target})
            if written:
                ImportedRecord.all_users.create(kind="learning", source_id=source_id, user_id=owner, source=label)
    except LearningIdTaken as exc:
        raise RowError(str(exc)) from None
    except LearningInvalid as exc:
        raise RowError(str(exc)) from None
    return written


def _user_scoped_key(row: dict[str, Any]) -> str | None:
    """The owner's user-scoped key of a ``namespace="user"`` entity row (None: not such a row);
    RowError when a pre-v3 row cannot be keyed per user."""
    if row.get("learning_type") != ENTITY_MEMORY or row.get("namespace") != USER_NAMESPACE:
        return None
    entity_id, entity_type, owner = row.get("entity_id"), row.get("entity_type"), row.get("user_id")
    if not (entity_id and entity_type):
        raise RowError("entity memory without entity_id and entity_type")
    legacy = row["learning_id"] == legacy_entity_id(str(entity_id), str(entity_type), USER_NAMESPACE)
    if not owner:
        raise RowError('entity memory under namespace "user" has no owner: it cannot be keyed per user')
    recorded = row["content"].get("user_id")
    if legacy and recorded is not None and str(recorded) != str(owner):
        raise RowError(f"its content records another user than its owner ({owner!r}): it held two users' data", users=(owner,))
    target = learning_id_for(ENTITY_MEMORY, user_id=owner, entity_id=str(entity_id), entity_type=str(entity_type), namespace=USER_NAMESPACE)
    if not legacy and row["learning_id"] != target:
        raise RowError(f"its key is not its owner's ({owner!r}) user-scoped entity key", users=(owner,))
    return target
