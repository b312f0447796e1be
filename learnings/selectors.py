"""Reads of learning records, scoped to whom the caller may see (core.tenancy)."""
from __future__ import annotations

from typing import Any

from django.db.models import Max

from core.tenancy import scope_queryset
from core.querysets import window
from engine.learning import ENTITY_MEMORY, USER_MEMORY, USER_NAMESPACE, USER_PROFILE, learning_id_for

from .models import Learning

SORT_COLUMNS = {"created_at": "created_at", "updated_at": "updated_at"}
USER_SORT_COLUMNS = {"user_id": "user_id", "last_learning_updated_at": "last_learning_updated_at"}


def learnings_visible(*, user: Any, include_shared: bool = False):
    """The records ``user`` (a core.tenancy read scope) may read; with ``include_shared`` an
    isolated user also reads the records no one owns (global, agent, entity learnings), as
    AgentOS's ``include_global``."""
    if include_shared and isinstance(user, str):
        return Learning.objects.for_user_or_shared(user)
    return scope_queryset(Learning.objects, user)


def learning_list(
    *,
    user: Any,
    include_shared: bool = False,
    filters: dict[str, str | None],
    sort_by: str | None = None,
    descending: bool = True,
    offset: int = 0,
    limit: int = 100,
) -> tuple[list[Learning], int]:
    """One page of records and the total count (two queries). ``filters`` are exact matches on
    learning_type, agent_id, team_id, session_id, namespace, entity_id and entity_type."""
    rows = learnings_visible(user=user, include_shared=include_shared)
    rows = rows.filter(**{field: value for field, value in filters.items() if value})
    total = rows.count()
    column = SORT_COLUMNS.get(sort_by or "", "updated_at")
    order = [f"-{column}", "-learning_id"] if descending else [column, "learning_id"]
    return window(rows.order_by(*order), offset=offset, limit=limit), total


def learning_get(*, user: Any, learning_id: str, include_shared: bool = False) -> Learning | None:
    return learnings_visible(user=user, include_shared=include_shared).filter(pk=learning_id).first()


def learning_owner(*, learning_id: str) -> str | None:
    """Whose record ``learning_id`` is (None: no one's, or no such record), for a guest's access
    check by id; the caller then reads the record through that owner's scope (one query)."""
    return (
        Learning.objects.unscoped("the owner of a record by id, checked by the caller before it reads the record")
        .filter(pk=learning_id).values_list("user_id", flat=True).first()
    )


def learning_users(
    *, user: Any, learning_type: str | None, sort_by: str | None, descending: bool, offset: int, limit: int
) -> tuple[list[dict[str, Any]], int]:
    """Owners of records with their last update, and how many owners there are (two queries)."""
    owned = scope_queryset(Learning.objects, user).filter(user_id__isnull=False)
    if learning_type:
        owned = owned.filter(learning_type=learning_type)
    grouped = owned.values("user_id").annotate(last_learning_updated_at=Max("updated_at"))
    total = grouped.count()
    column = USER_SORT_COLUMNS.get(sort_by or "", "last_learning_updated_at")
    order = [f"-{column}", "-user_id"] if descending else [column, "user_id"]
    return window(grouped.order_by(*order), offset=offset, limit=limit), total


def learned_records_for_run(*, user_id: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The user's ``user_memory`` and ``user_profile`` records as the engine reads them (one query)."""
    keys = {learning_id_for(USER_MEMORY, user_id=user_id): 0, learning_id_for(USER_PROFILE, user_id=user_id): 1}
    found: list[dict[str, Any] | None] = [None, None]
    for row in Learning.objects.for_user(user_id).filter(pk__in=list(keys)):
        found[keys[row.learning_id]] = {"learning_id": row.learning_id, "agent_id": row.agent_id, "content": row.content}
    return found[0], found[1]


def entity_get(*, user_id: str | None, namespace: str, entity_type: str, entity_id: str) -> Learning | None:
    """An entity record by its identity. Under ``namespace="user"`` the user id is part of the
    key and is required (v3: ``get`` no longer returns an arbitrary user's row)."""
    if namespace == USER_NAMESPACE:
        if not user_id:
            raise ValueError('entity memory under namespace="user" needs the user_id')
        rows = Learning.objects.for_user(user_id)
    else:
        rows = Learning.objects.for_user_or_shared(user_id) if user_id else Learning.objects.unscoped(
            "an entity outside namespace='user' is shared by its key"
        )
    key = learning_id_for(ENTITY_MEMORY, user_id=user_id, entity_id=entity_id, entity_type=entity_type, namespace=namespace)
    return rows.filter(pk=key).first()

