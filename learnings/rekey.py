"""The v3 re-key of entity memory under ``namespace="user"`` (Agno's
``agno.learn.migrations.rekey_user_entity_learnings``), for learnings imported from before v3.

Pre-v3 rows carry a key with no user in it (``entity_user_<type>_<id>``), so two users who
recorded the same entity shared one row. Each such row moves to its owner's user-scoped key
(``entity_user_<digest>_<type>_<id>``). Buckets of the report:

- ``keyed`` (a count): already on a user-scoped key;
- ``rekeyed``: moved to the owner's key; ``merged``: that key was taken (the upgraded application
  wrote it first): folded together, the newer row winning every conflict;
- ``quarantined``: the content records a different user than the owner column, so the row held two
  users' data and cannot be separated: moved to ``namespace="quarantined_user"``, which no agent
  reads, and still listed and mutable for the owner column's user through /learnings;
- ``contaminated`` (those rows), ``contaminated_keyed`` (the same on a user-scoped key: report
  only, it holds its owner's own writes too), ``unowned`` (no owner), ``malformed`` (no entity
  identity, or content that is not an object);
- ``conflicts``: the target or quarantine key holds something that cannot be merged;
  ``failed``: a row that raised; ``purged``: deleted by ``purge_unrecoverable`` (contaminated
  and unowned rows) instead of quarantined.

A dry run (the default) writes nothing. There is no reverse: the old key collides users by design.
"""
from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.utils import timezone

from engine.learning import ENTITY_MEMORY, QUARANTINE_NAMESPACE, USER_NAMESPACE, learning_id_for, legacy_entity_id

from .models import Learning

logger = logging.getLogger(__name__)

BUCKETS = (
    "rekeyed", "merged", "quarantined", "contaminated", "contaminated_keyed", "unowned", "malformed",
    "conflicts", "failed", "purged",
)
REASON = "the re-key migration walks every user's entity rows (an operator's command)"


def _all() -> Any:
    return Learning.objects.unscoped(REASON)


def classify(row: Learning) -> str:
    if not (row.entity_id and row.entity_type) or not isinstance(row.content, dict):
        return "malformed"
    recorded = row.content.get("user_id")
    contaminated = bool(row.user_id) and recorded is not None and str(recorded) != str(row.user_id)
    if row.learning_id != legacy_entity_id(row.entity_id, row.entity_type, USER_NAMESPACE):
        return "contaminated_keyed" if contaminated else "keyed"
    if not row.user_id:
        return "unowned"
    return "contaminated" if contaminated else "legacy"


def _fact_key(field: str, entry: Any) -> Any:
    if not isinstance(entry, dict):
        return " ".join(str(entry).split()).casefold()
    if field == "facts":
        return " ".join(str(entry.get("content", "")).split()).casefold() or entry.get("id")
    if field == "events":
        return (entry.get("content"), entry.get("date"))
    return (entry.get("entity_id"), entry.get("entity_type"), entry.get("relation"), entry.get("direction"))


def merge_contents(source: dict[str, Any], target: dict[str, Any]) -> dict[str, Any]:
    """Fold a pre-v3 row into the newer row on its key: the target wins every conflict; the
    source's facts, events and relationships it lacks go first (later entries are more recent)."""
    merged = {**source, **target}
    for field in ("facts", "events", "relationships"):
        target_entries = list(target.get(field) or [])
        seen = {_fact_key(field, entry) for entry in target_entries}
        carried = [entry for entry in source.get(field) or [] if _fact_key(field, entry) not in seen]
        if carried or target_entries:
            merged[field] = carried + target_entries
    merged["properties"] = {**(source.get("properties") or {}), **(target.get("properties") or {})}
    if not merged["properties"]:
        del merged["properties"]
    return merged


def _move(row: Learning, *, learning_id: str, namespace: str, content: dict[str, Any]) -> None:
    now = timezone.now()
    Learning.objects.create(
        learning_id=learning_id, learning_type=ENTITY_MEMORY, user_id=row.user_id, namespace=namespace,
        agent_id=row.agent_id, team_id=row.team_id, session_id=row.session_id, entity_id=row.entity_id,
        entity_type=row.entity_type, content=content, metadata=row.metadata, created_at=row.created_at, updated_at=now,
    )
    _all().filter(pk=row.pk).delete()


def _rekey(row: Learning, *, dry_run: bool) -> str:
    new_id = learning_id_for(ENTITY_MEMORY, user_id=row.user_id, entity_id=row.entity_id, entity_type=row.entity_type, namespace=USER_NAMESPACE)
    target = _all().filter(pk=new_id).first()
    if target is not None and not isinstance(target.content, dict):
        return "conflicts"
    if dry_run:
        return "merged" if target is not None else "rekeyed"
    if target is None:
        _move(row, learning_id=new_id, namespace=USER_NAMESPACE, content=row.content)
        return "rekeyed"
    target.content = merge_contents(row.content, target.content)
    target.metadata = target.metadata or row.metadata
    target.updated_at = timezone.now()
    target.save(update_fields=["content", "metadata", "updated_at"])
    _all().filter(pk=row.pk).delete()
    return "merged"


def _quarantine(row: Learning, *, dry_run: bool) -> str:
    new_id = legacy_entity_id(row.entity_id, row.entity_type, QUARANTINE_NAMESPACE)
    if _all().filter(pk=new_id).exists():
        return "conflicts"
    if not dry_run:
        _move(row, learning_id=new_id, namespace=QUARANTINE_NAMESPACE, content=row.content)
    return "quarantined"


def rekey_user_entity_learnings(*, dry_run: bool = True, purge_unrecoverable: bool = False) -> dict[str, Any]:
    """Re-key every ``namespace="user"`` entity row; each row in its own transaction, so one
    failure leaves that row as it was and the walk goes on. Returns the report."""
    report: dict[str, Any] = {"scanned": 0, "keyed": 0, "dry_run": dry_run, **{name: [] for name in BUCKETS}}
    rows = list(_all().filter(learning_type=ENTITY_MEMORY, namespace=USER_NAMESPACE).order_by("learning_id"))
    report["scanned"] = len(rows)
    for row in rows:
        try:
            with transaction.atomic():
                bucket = classify(row)
                if bucket == "keyed":
                    report["keyed"] += 1
                    continue
                if bucket in ("contaminated", "unowned") and purge_unrecoverable:
                    report[bucket].append(row.learning_id)
                    if not dry_run:
                        _all().filter(pk=row.pk).delete()
                    report["purged"].append(row.learning_id)
                    continue
                if bucket == "contaminated":
                    report["contaminated"].append(row.learning_id)
                    report[_quarantine(row, dry_run=dry_run)].append(row.learning_id)
                    continue
                if bucket in ("contaminated_keyed", "unowned", "malformed"):
                    report[bucket].append(row.learning_id)
                    continue
                report[_rekey(row, dry_run=dry_run)].append(row.learning_id)
        except Exception as exc:  # reported with its id; the walk goes on
            logger.warning("rekey failed", extra={"learning_id": row.learning_id, "error": type(exc).__name__})
            report["failed"].append(row.learning_id)
    return report
