"""Knowledge bases and the access rule every knowledge service shares.

A user reads their own rows and the shared ones (``user_id`` None); they change only their own.
An anonymous caller (None) reads and changes only shared rows; ``ALL_USERS`` (an admin, an open
server) reaches every row. Missing and forbidden are the same ``DoesNotExist``.
"""
from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from core.tenancy import ALL_USERS, scope_queryset

from ..embedders import EmbedderError, default_embedder_id, embedder_get
from ..models import VECTOR_DIMENSIONS, KnowledgeBase

User = Any  # str | None | core.tenancy.ALL_USERS


def readable(queryset: Any, user: User) -> Any:
    """``user``'s rows and the shared rows of an owned queryset."""
    if user is ALL_USERS:
        return queryset.unscoped("an admin's or an open server's read of every user's knowledge")
    if user is None:
        return queryset.unscoped("an anonymous caller reads shared knowledge only").filter(user_id__isnull=True)
    return queryset.for_user_or_shared(user)


def writable(queryset: Any, user: User) -> Any:
    """The rows ``user`` may change: their own (None: the shared ones; ALL_USERS: every one)."""
    return scope_queryset(queryset, user)


def base_get_or_create(*, name: str, user_id: str | None = None, description: str = "", embedder_id: str | None = None) -> KnowledgeBase:
    """The base called ``name`` of ``user_id`` (None: the shared one), created if missing."""
    existing = writable(KnowledgeBase.objects, user_id).filter(name=name).first()
    if existing is not None:
        return existing
    embedder_id = embedder_id or default_embedder_id()
    embedder = embedder_get(embedder_id)
    if embedder.dimensions != VECTOR_DIMENSIONS:
        raise EmbedderError(f"{embedder_id} gives {embedder.dimensions}-dimensional vectors; the knowledge store holds {VECTOR_DIMENSIONS}")
    now = timezone.now()
    try:
        with transaction.atomic():
            return KnowledgeBase.objects.create(
                user_id=user_id, name=name, description=description, embedder_id=embedder_id, dimensions=embedder.dimensions,
                created_at=now, updated_at=now,
            )
    except IntegrityError:  # created meanwhile by another process
        return writable(KnowledgeBase.objects, user_id).get(name=name)


def base_get_for_user(*, user: User, base_id: str) -> KnowledgeBase:
    """A base ``user`` may use (their own or a shared one); ``KnowledgeBase.DoesNotExist`` if not."""
    return readable(KnowledgeBase.objects, user).get(pk=base_id)


def base_get_by_name(*, user: User, name: str) -> KnowledgeBase | None:
    """The base called ``name`` that ``user`` sees: their own first, else the shared one."""
    rows = list(readable(KnowledgeBase.objects, user).filter(name=name))
    rows.sort(key=lambda base: base.user_id is None)
    return rows[0] if rows else None


def base_list_for_user(*, user: User) -> list[KnowledgeBase]:
    return list(readable(KnowledgeBase.objects, user).order_by("name", "id"))
