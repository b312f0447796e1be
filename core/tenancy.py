"""Fail-closed tenancy: every owned row carries ``user_id``, and queries must say whose rows they want.

``Model.objects`` returns a queryset that refuses to touch the database until it is scoped with
``for_user(user_id)`` or released with ``unscoped(reason)``, the explicit, greppable escape hatch
for operators, migrations and workers. A forgotten filter is then an ``UnscopedQueryError`` in
tests, never a leak in production. Reverse relations are built from the default manager, so
``session.runs.all()`` refuses too: query children through their own scoped manager.

``Model.all_users`` is a plain manager for the admin and migrations.
"""
from __future__ import annotations

import contextvars
from contextlib import contextmanager
from typing import Any, Iterator

from django.db import models


class UnscopedQueryError(RuntimeError):
    """A query on an owned model ran without ``for_user()`` or ``unscoped()``."""


# Set only while Django's own model validation runs (uniqueness is global, not per user).
_validation_bypass: contextvars.ContextVar[bool] = contextvars.ContextVar("tenancy_validation", default=False)


class OwnedQuerySet(models.QuerySet):
    _scoped: bool = False

    def for_user(self, user_id: str) -> OwnedQuerySet:
        """Only ``user_id``'s rows."""
        if not isinstance(user_id, str) or not user_id:
            raise TypeError(f"for_user() needs a non-empty user id string, got {user_id!r}")
        clone = self.filter(user_id=user_id)
        clone._scoped = True
        return clone

    def for_user_or_shared(self, user_id: str) -> OwnedQuerySet:
        """``user_id``'s rows and shared rows (``user_id IS NULL``), where the behaviour allows sharing."""
        if not isinstance(user_id, str) or not user_id:
            raise TypeError(f"for_user_or_shared() needs a non-empty user id string, got {user_id!r}")
        clone = self.filter(models.Q(user_id=user_id) | models.Q(user_id__isnull=True))
        clone._scoped = True
        return clone

    def unscoped(self, reason: str = "") -> OwnedQuerySet:
        """Every user's rows. Say why at the call site; grep for ``unscoped(`` to audit."""
        clone = self._chain()
        clone._scoped = True
        return clone

    @property
    def is_scoped(self) -> bool:
        return self._scoped

    def _check_scoped(self, operation: str) -> None:
        if not self._scoped and not _validation_bypass.get():
            raise UnscopedQueryError(
                f"{self.model.__name__}.{operation}() on an unscoped queryset: "
                f"call .for_user(user_id) or .unscoped(reason) first"
            )

    def _clone(self) -> OwnedQuerySet:
        clone = super()._clone()
        clone._scoped = self._scoped
        return clone

    # Every path that reaches the database goes through one of these.
    def _fetch_all(self) -> None:
        if self._result_cache is None:
            self._check_scoped("evaluate")
        super()._fetch_all()

    def iterator(self, chunk_size: int | None = None) -> Iterator[Any]:
        self._check_scoped("iterator")
        return super().iterator(chunk_size=chunk_size)

    async def aiterator(self, chunk_size: int = 2000):  # type: ignore[override]
        self._check_scoped("aiterator")
        async for item in super().aiterator(chunk_size=chunk_size):
            yield item

    def count(self) -> int:
        if self._result_cache is None:
            self._check_scoped("count")
        return super().count()

    def exists(self) -> bool:
        if self._result_cache is None:
            self._check_scoped("exists")
        return super().exists()

    def contains(self, obj: models.Model) -> bool:
        self._check_scoped("contains")
        return super().contains(obj)

    def aggregate(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self._check_scoped("aggregate")
        return super().aggregate(*args, **kwargs)

    def update(self, **kwargs: Any) -> int:
        self._check_scoped("update")
        return super().update(**kwargs)

    def _update(self, values: Any) -> Any:
        self._check_scoped("update")
        return super()._update(values)

    def delete(self) -> tuple[int, dict[str, int]]:
        self._check_scoped("delete")
        return super().delete()

    def _raw_delete(self, using: str) -> int:
        self._check_scoped("delete")
        return super()._raw_delete(using)

    def in_bulk(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        self._check_scoped("in_bulk")
        return super().in_bulk(*args, **kwargs)

    def explain(self, **options: Any) -> str:
        self._check_scoped("explain")
        return super().explain(**options)


class OwnedManager(models.Manager.from_queryset(OwnedQuerySet)):  # type: ignore[misc]
    pass


class OwnedModel(models.Model):
    """Base for every row that belongs to someone. ``user_id`` null means shared."""

    user_id = models.CharField(max_length=255, null=True, blank=True, db_index=True)

    objects = OwnedManager()
    all_users = models.Manager()

    class Meta:
        abstract = True

    # Django validates unique fields and constraints through the default manager; those checks
    # are about the whole table, so they run with the scope check lifted for their duration only.
    def validate_unique(self, exclude: Any = None) -> None:
        with _lift_for_validation():
            super().validate_unique(exclude=exclude)

    def validate_constraints(self, exclude: Any = None) -> None:
        with _lift_for_validation():
            super().validate_constraints(exclude=exclude)


@contextmanager
def _lift_for_validation() -> Iterator[None]:
    token = _validation_bypass.set(True)
    try:
        yield
    finally:
        _validation_bypass.reset(token)


def owned_models() -> list[type[OwnedModel]]:
    from django.apps import apps

    return [model for model in apps.get_models() if issubclass(model, OwnedModel)]


class _AllUsers:
    """The scope of a caller allowed to see every user's rows (an admin, or an open server)."""

    _instance: _AllUsers | None = None

    def __new__(cls) -> _AllUsers:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ALL_USERS"


ALL_USERS = _AllUsers()

# Who a read is for: a user id; None for an anonymous caller (rows without an owner only);
# or ALL_USERS, which the auth layer grants to admins and to open (no-auth) servers.
UserScope = "str | None | _AllUsers"


def scope_queryset(queryset: OwnedQuerySet, user: str | None | _AllUsers) -> OwnedQuerySet:
    if user is ALL_USERS:
        return queryset.unscoped("the caller's scope is every user")
    if user is None:
        return queryset.unscoped("anonymous caller: ownerless rows only").filter(user_id__isnull=True)
    return queryset.for_user(user)


def in_scope(user: str | None | _AllUsers, owner_id: str | None) -> bool:
    """Whether a row owned by ``owner_id`` is one ``scope_queryset(..., user)`` would return."""
    return user is ALL_USERS or owner_id == user
