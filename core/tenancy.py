"""Fail-closed tenancy: every owned row carries ``user_id``, and queries must say whose rows they want.

``Model.objects`` returns a queryset that refuses to touch the database until it is scoped with
``for_user(user_id)`` or released with ``unscoped(reason)``, the explicit, greppable escape hatch
for operators, migrations and workers. A forgotten filter is then an ``UnscopedQueryError`` in
tests, never a leak in production. The refusal covers every way a queryset reaches SQL:
evaluation, ``raw()``, and use inside another query (``Subquery``, ``Exists``, ``__in=``,
``|``, ``union``), which compiles the queryset without evaluating it.

Relations follow the owner too. Reverse relations are built from the default manager, so
``session.runs.all()`` refuses: query children through their own scoped manager. A forward
foreign key read (``run.session``) reads through the owned target's scoped manager, keyed by the
row's own owner; ``select_related`` of an owned relation on a scoped queryset keeps only rows
whose related row has the same owner. Saving and reloading an instance are keyed by its owner,
so an instance made up with another user's primary key neither overwrites nor reads their row.

SQL that no queryset can scope (a worker's claim across users, a statement written by hand)
carries its owner clause (``owner_clause()``), or runs inside ``with unscoped(reason):``. The
test suite fails any statement on an owned table that has neither (tests/tenancy_guard.py).

``Model.all_users`` is a plain manager for the admin and migrations.
"""
from __future__ import annotations

import contextvars
from collections.abc import Iterable
from contextlib import contextmanager, nullcontext
from typing import Any, AsyncIterator, ContextManager, Iterator

from django.db import models
from django.db.models import signals, sql
from django.db.models.fields.related_descriptors import ForwardManyToOneDescriptor


class UnscopedQueryError(RuntimeError):
    """A query on an owned model ran without ``for_user()`` or ``unscoped()``."""


# Set only while Django's own model validation runs (uniqueness is global, not per user).
_validation_bypass: contextvars.ContextVar[bool] = contextvars.ContextVar("tenancy_validation", default=False)
# The reason of the explicit every-user path whose SQL is running now, if any (read by the test
# suite's SQL guard; it changes nothing in production).
_unscoped_reason: contextvars.ContextVar[str | None] = contextvars.ContextVar("tenancy_unscoped_reason", default=None)


def _require_reason(reason: Any) -> str:
    if not isinstance(reason, str) or not reason.strip():
        raise TypeError(f"unscoped() needs a one-line reason (a non-empty string), got {reason!r}")
    return reason


@contextmanager
def unscoped(reason: str) -> Iterator[None]:
    """Mark the block's SQL as an explicit every-user path: a statement no queryset can scope, such
    as the job queue's claim across users. Querysets inside still need ``for_user()`` or
    ``.unscoped(reason)``; hand-written SQL that can name its owner uses ``owner_clause()`` instead."""
    token = _unscoped_reason.set(_require_reason(reason))
    try:
        yield
    finally:
        _unscoped_reason.reset(token)


def current_unscoped_reason() -> str | None:
    """Why the SQL running now may span users (None: it must carry its owner clause)."""
    return _unscoped_reason.get()


def marked(reason: str | None) -> ContextManager[None]:
    """``unscoped(reason)``, or nothing for None (a scoped statement)."""
    return nullcontext() if reason is None else unscoped(reason)


def queryset_sql_reason(queryset: Any) -> str | None:
    """For code that runs a queryset's compiled SQL itself (core.statements.Select): refuses an
    unscoped owned queryset, and returns the reason an ``unscoped()`` one gave (None: scoped)."""
    if not isinstance(queryset, _TenancyQuerySet):
        return None
    queryset._check_scoped("evaluate")
    return queryset._sql_reason()


def owner_clause(owner: str | None, column: str = "user_id") -> tuple[str, list[str]]:
    """The condition (and its parameters) that keeps a hand-written statement to ``owner``'s rows;
    ``owner`` None means the ownerless (shared) rows."""
    if owner is None:
        return f"{column} IS NULL", []
    if not isinstance(owner, str) or not owner:
        raise TypeError(f"owner_clause() needs a user id string or None, got {owner!r}")
    return f"{column} = %s", [owner]


# A queryset's scope, kept on its query (so a subquery knows it, and every clone inherits it):
# None (refuses), ("user", uid), ("user_or_shared", uid) or ("all", reason).
Scope = tuple[str, str]


class OwnedQuery(sql.Query):
    """The query of an owned queryset: it refuses to become a subquery of another until scoped."""

    tenancy_scope: Scope | None = None
    # select_related paths already restricted to the scope's owner (see OwnedQuerySet._scope_related).
    tenancy_related: frozenset[str] = frozenset()

    def resolve_expression(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        _refuse_unscoped(self.model, self.tenancy_scope, "subquery")
        return super().resolve_expression(query, *args, **kwargs)


def _refuse_unscoped(model: Any, scope: Scope | None, operation: str) -> None:
    if scope is None and not _validation_bypass.get():
        name = model.__name__ if model is not None else "owned model"
        raise UnscopedQueryError(
            f"{name}.{operation}() on an unscoped queryset: call .for_user(user_id) or .unscoped(reason) first"
        )


def _first_step_marked(iterable: Iterable[Any], reason: str | None) -> Iterator[Any]:
    """Iterate, with the SQL (run by the first step) marked: a context variable set across
    ``yield`` would leak into the consumer."""
    iterator = iter(iterable)
    with marked(reason):
        try:
            first = next(iterator)
        except StopIteration:
            return
    yield first
    yield from iterator


class _TenancyQuerySet(models.QuerySet):
    """Every path by which a queryset reaches the database passes ``_reaching_database``."""

    def _check_scoped(self, operation: str) -> None:
        raise NotImplementedError

    def _sql_reason(self) -> str | None:
        """The reason this queryset's SQL may span users (None: it is scoped to an owner)."""
        raise NotImplementedError

    @contextmanager
    def _reaching_database(self, operation: str) -> Iterator[None]:
        self._check_scoped(operation)
        with marked(self._sql_reason()):
            yield

    def _fetch_all(self) -> None:
        if self._result_cache is not None:
            return super()._fetch_all()
        with self._reaching_database("evaluate"):
            super()._fetch_all()

    def iterator(self, chunk_size: int | None = None) -> Iterator[Any]:
        self._check_scoped("iterator")
        return _first_step_marked(super().iterator(chunk_size=chunk_size), self._sql_reason())

    async def aiterator(self, chunk_size: int = 2000) -> AsyncIterator[Any]:  # type: ignore[override]
        self._check_scoped("aiterator")
        items = super().aiterator(chunk_size=chunk_size)
        with marked(self._sql_reason()):  # set and reset within one step of this generator
            try:
                first = await items.__anext__()
            except StopAsyncIteration:
                return
        yield first
        async for item in items:
            yield item

    def count(self) -> int:
        if self._result_cache is not None:
            return super().count()
        with self._reaching_database("count"):
            return super().count()

    def exists(self) -> bool:
        if self._result_cache is not None:
            return super().exists()
        with self._reaching_database("exists"):
            return super().exists()

    def contains(self, obj: models.Model) -> bool:
        with self._reaching_database("contains"):
            return super().contains(obj)

    def aggregate(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        with self._reaching_database("aggregate"):
            return super().aggregate(*args, **kwargs)

    def update(self, **kwargs: Any) -> int:
        with self._reaching_database("update"):
            return super().update(**kwargs)

    def _update(self, values: Any) -> Any:
        with self._reaching_database("update"):
            return super()._update(values)

    def delete(self) -> tuple[int, dict[str, int]]:
        self._check_scoped("delete")
        # Django's collector deletes by primary key the rows this (scoped) queryset found, and
        # their cascade, through the related models' base managers.
        with unscoped(self._sql_reason() or "the deletion collector: the rows a scoped query found, and their cascade"):
            return super().delete()

    def _raw_delete(self, using: str) -> int:
        with self._reaching_database("delete"):
            return super()._raw_delete(using)

    def in_bulk(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        with self._reaching_database("in_bulk"):
            return super().in_bulk(*args, **kwargs)

    def explain(self, **options: Any) -> str:
        with self._reaching_database("explain"):
            return super().explain(**options)


class _MarkedRawQuerySet(models.query.RawQuerySet):
    """``unscoped(reason).raw(...)``: its SQL runs marked with that reason."""

    tenancy_reason: str | None = None

    def iterator(self) -> Iterator[Any]:
        return _first_step_marked(super().iterator(), self.tenancy_reason)


class OwnedQuerySet(_TenancyQuerySet):
    def __init__(self, model: Any = None, query: Any = None, using: str | None = None, hints: Any = None) -> None:
        super().__init__(model=model, query=OwnedQuery(model) if query is None else query, using=using, hints=hints)

    @property
    def _scope(self) -> Scope | None:
        return getattr(self._query, "tenancy_scope", None)

    def _scoped_clone(self, clone: OwnedQuerySet, scope: Scope) -> OwnedQuerySet:
        clone._query.tenancy_scope = scope
        clone._query.tenancy_related = frozenset()
        clone._scope_related()
        return clone

    def for_user(self, user_id: str) -> OwnedQuerySet:
        """Only ``user_id``'s rows."""
        if not isinstance(user_id, str) or not user_id:
            raise TypeError(f"for_user() needs a non-empty user id string, got {user_id!r}")
        return self._scoped_clone(self.filter(user_id=user_id), ("user", user_id))

    def for_user_or_shared(self, user_id: str) -> OwnedQuerySet:
        """``user_id``'s rows and shared rows (``user_id IS NULL``), where the behaviour allows sharing."""
        if not isinstance(user_id, str) or not user_id:
            raise TypeError(f"for_user_or_shared() needs a non-empty user id string, got {user_id!r}")
        clone = self.filter(models.Q(user_id=user_id) | models.Q(user_id__isnull=True))
        return self._scoped_clone(clone, ("user_or_shared", user_id))

    def unscoped(self, reason: str) -> OwnedQuerySet:
        """Every user's rows. Say why at the call site (mandatory); grep for ``unscoped(`` to audit."""
        return self._scoped_clone(self._chain(), ("all", _require_reason(reason)))

    def select_related(self, *fields: Any) -> OwnedQuerySet:
        clone = super().select_related(*fields)
        clone._scope_related()
        return clone

    def _scope_related(self) -> None:
        """Keep only rows whose ``select_related`` owned rows have this queryset's owner: a row
        joined from another user's (a child pointing at someone else's parent) is not returned."""
        scope = self._scope
        if scope is None or scope[0] == "all" or not self._query.select_related:
            return
        kind, user_id = scope
        done = self._query.tenancy_related
        for path, nullable in _owned_related_paths(self.model, self._query.select_related):
            if path in done:
                continue
            condition = models.Q(**{f"{path}__user_id": user_id})
            if kind == "user_or_shared":
                condition |= models.Q(**{f"{path}__user_id__isnull": True})
            elif nullable:
                condition |= models.Q(**{f"{path}__isnull": True})
            self._query.add_q(condition)
            done = done | {path}
        self._query.tenancy_related = done

    def _check_scoped(self, operation: str) -> None:
        _refuse_unscoped(self.model, self._scope, operation)

    def _sql_reason(self) -> str | None:
        scope = self._scope
        return scope[1] if scope is not None and scope[0] == "all" else None

    def raw(self, raw_query: str, params: Any = (), translations: Any = None, using: str | None = None) -> Any:
        """Raw SQL carries no scope of its own: only ``unscoped(reason).raw(...)`` may run it, and
        the statement must then say itself whose rows it reads."""
        scope = self._scope
        if scope is None or scope[0] != "all":
            raise UnscopedQueryError(
                f"{self.model.__name__}.raw(): raw SQL is not scoped by for_user(); write the owner "
                f"clause into it and call it on .unscoped(reason)"
            )
        raw = _MarkedRawQuerySet(raw_query, model=self.model, params=params, translations=translations, using=using or self.db)
        raw.tenancy_reason = scope[1]
        return raw

    # An owned queryset combined with another must not pull in an unscoped one's rows.
    def _check_operand(self, other: Any, operation: str) -> None:
        if isinstance(other, OwnedQuerySet):
            other._check_scoped(operation)

    def __or__(self, other: Any) -> OwnedQuerySet:
        self._check_operand(other, "|")
        return super().__or__(other)

    def __xor__(self, other: Any) -> OwnedQuerySet:
        self._check_operand(other, "^")
        return super().__xor__(other)

    def union(self, *other_qs: Any, all: bool = False) -> OwnedQuerySet:
        for other in other_qs:
            self._check_operand(other, "union")
        return super().union(*other_qs, all=all)


def _owned_related_paths(model: Any, tree: Any, prefix: str = "", nullable: bool = False, depth: int = 0) -> Iterator[tuple[str, bool]]:
    """The owned models a ``select_related`` tree reaches: (lookup path, whether a hop is nullable)."""
    if tree is True:  # select_related() with no fields: Django follows the non-null foreign keys
        tree = {field.name: True for field in model._meta.concrete_fields if field.is_relation and not field.null} if depth < 5 else {}
    for name, subtree in tree.items():
        field = model._meta.get_field(name)
        related = field.related_model
        path = f"{prefix}{name}"
        hop_nullable = nullable or bool(getattr(field, "null", False)) or not field.concrete
        if isinstance(related, type) and issubclass(related, OwnedModel):
            yield path, hop_nullable
        yield from _owned_related_paths(related, subtree, f"{path}__", hop_nullable, depth + 1)


class OwnedManager(models.Manager.from_queryset(OwnedQuerySet)):  # type: ignore[misc]
    pass


class _AllUsersQuerySet(_TenancyQuerySet):
    """The admin's queryset: every row, its SQL marked as the admin's explicit every-user path."""

    def _check_scoped(self, operation: str) -> None:
        return None

    def _sql_reason(self) -> str | None:
        return "all_users: the admin's and operators' plain manager"


class AllUsersManager(models.Manager.from_queryset(_AllUsersQuerySet)):  # type: ignore[misc]
    pass


_NOT_LOADED = object()


class OwnedModel(models.Model):
    """Base for every row that belongs to someone. ``user_id`` null means shared."""

    user_id = models.CharField(max_length=255, null=True, blank=True, db_index=True)

    objects = OwnedManager()
    all_users = AllUsersManager()

    class Meta:
        abstract = True

    @classmethod
    def from_db(cls, db: str | None, field_names: Any, values: Any) -> OwnedModel:
        instance = super().from_db(db, field_names, values)
        # The owner the row had when read: saving and reloading are keyed by it (an operator
        # may reassign the row, and the UPDATE must still find it).
        instance._tenancy_owner = instance.__dict__.get("user_id", _NOT_LOADED)
        return instance

    def _owner_key(self) -> Any:
        owner = self.__dict__.get("_tenancy_owner", _NOT_LOADED)
        return self.__dict__.get("user_id", _NOT_LOADED) if owner is _NOT_LOADED else owner

    def save(self, *args: Any, **kwargs: Any) -> None:
        super().save(*args, **kwargs)
        self._tenancy_owner = self.__dict__.get("user_id", self._owner_key())

    def _do_update(self, base_qs: Any, *args: Any, **kwargs: Any) -> bool:
        # Django's UPDATE of a saved instance is keyed by primary key alone; keyed by the owner as
        # well, an instance made up with another user's key updates nothing (and its INSERT then
        # fails on the taken key).
        owner = self._owner_key()
        if owner is _NOT_LOADED:  # read without its owner column, through a scoped read
            with unscoped("saving a row read without its owner column, by primary key"):
                return super()._do_update(base_qs, *args, **kwargs)
        return super()._do_update(_filter_owner(base_qs, owner), *args, **kwargs)

    def refresh_from_db(self, using: str | None = None, fields: Any = None, from_queryset: Any = None) -> None:
        owner = self._owner_key()
        if from_queryset is not None:
            return super().refresh_from_db(using=using, fields=fields, from_queryset=from_queryset)
        if owner is _NOT_LOADED:  # loading the deferred owner column itself, by primary key
            with unscoped("loading a deferred owner column of a row already held"):
                return super().refresh_from_db(using=using, fields=fields)
        manager = type(self)._base_manager.db_manager(using, hints={"instance": self})
        return super().refresh_from_db(using=using, fields=fields, from_queryset=_filter_owner(manager.all(), owner))

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        # Django deletes an instance by primary key alone; as for saves, an instance made up with
        # another user's key must not reach their row: nothing is deleted unless the row is the
        # owner's the instance says it is (one read; deleting one instance is never a hot path).
        owner = self._owner_key()
        if owner is not _NOT_LOADED and not _filter_owner(type(self).all_users.filter(pk=self.pk), owner).exists():
            return 0, {}
        with unscoped("deleting a row already held, by primary key, and its cascade"):
            return super().delete(*args, **kwargs)

    # Django validates unique fields and constraints through the default manager (and foreign
    # keys through the target's base manager); those checks are about the whole table, so they
    # run with the scope check lifted for their duration only.
    def validate_unique(self, exclude: Any = None) -> None:
        with _lift_for_validation():
            super().validate_unique(exclude=exclude)

    def validate_constraints(self, exclude: Any = None) -> None:
        with _lift_for_validation():
            super().validate_constraints(exclude=exclude)

    def clean_fields(self, exclude: Any = None) -> None:
        with _lift_for_validation():
            super().clean_fields(exclude=exclude)


def _filter_owner(queryset: Any, owner: str | None) -> Any:
    return queryset.filter(user_id__isnull=True) if owner is None else queryset.filter(user_id=owner)


@contextmanager
def _lift_for_validation() -> Iterator[None]:
    token = _validation_bypass.set(True)
    try:
        with unscoped("Django's model validation: uniqueness and foreign keys are checked over every user's rows"):
            yield
    finally:
        _validation_bypass.reset(token)


class OwnerScopedForwardDescriptor(ForwardManyToOneDescriptor):
    """``child.parent`` for an owned parent: read as the child's owner sees it (another user's
    parent is missing), never through the parent's plain base manager. A child that is not owned
    itself cannot say whose parent it wants, so its read refuses; so does ``prefetch_related`` of
    the relation without a scoped ``Prefetch`` queryset."""

    def _owned_target(self) -> Any:
        target = self.field.remote_field.model
        return target if isinstance(target, type) and issubclass(target, OwnedModel) else None

    def get_queryset(self, **hints: Any) -> Any:
        target = self._owned_target()
        if target is None:
            return super().get_queryset(**hints)
        return target.objects.db_manager(hints=hints).all()

    def get_object(self, instance: Any) -> Any:
        target = self._owned_target()
        if target is None:
            return super().get_object(instance)
        queryset = self.get_queryset(instance=instance)
        owner = instance._owner_key() if isinstance(instance, OwnedModel) else _NOT_LOADED
        if owner is not _NOT_LOADED:
            queryset = (
                queryset.for_user(owner)
                if owner is not None
                else queryset.unscoped("an ownerless row's ownerless parent").filter(user_id__isnull=True)
            )
        return queryset.get(self.field.get_reverse_related_filter(instance))


def _scope_forward_relations(sender: type, **kwargs: Any) -> None:
    for field in sender._meta.local_fields:
        if field.many_to_one and type(sender.__dict__.get(field.name)) is ForwardManyToOneDescriptor:
            setattr(sender, field.name, OwnerScopedForwardDescriptor(field))


signals.class_prepared.connect(_scope_forward_relations, dispatch_uid="core.tenancy.forward_relations")


def owned_models() -> list[type[OwnedModel]]:
    from django.apps import apps

    return [model for model in apps.get_models() if issubclass(model, OwnedModel)]


class AllUsers:
    """The scope of a caller allowed to see every user's rows (an admin, or an open server)."""

    _instance: AllUsers | None = None

    def __new__(cls) -> AllUsers:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ALL_USERS"


# Granted only by core.auth.Principal.read_scope (an admin, an open server) and by admin actions:
# grep ``ALL_USERS`` to audit where every user's rows are read.
ALL_USERS = AllUsers()


# ``user``, who a read is for: a user id; None for an anonymous caller (rows without an owner
# only); or ALL_USERS, which the auth layer grants to admins and to open (no-auth) servers.
def scope_queryset(queryset: OwnedQuerySet, user: str | None | AllUsers) -> OwnedQuerySet:
    if user is ALL_USERS:
        return queryset.unscoped("scope_queryset(ALL_USERS): an admin's or an open server's read scope")
    if user is None:
        return queryset.unscoped("scope_queryset(None): an anonymous caller sees ownerless rows only").filter(user_id__isnull=True)
    return queryset.for_user(user)


def in_scope(user: str | None | AllUsers, owner_id: str | None) -> bool:
    """Whether a row owned by ``owner_id`` is one ``scope_queryset(..., user)`` would return."""
    return user is ALL_USERS or owner_id == user
