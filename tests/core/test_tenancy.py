"""Every owned model refuses unscoped use, through every way a queryset reaches the database."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db.models import Count

from core.tenancy import ALL_USERS, OwnedModel, UnscopedQueryError, owned_models, scope_queryset
from tests.factories import OWNED_FACTORIES

pytestmark = pytest.mark.django_db

MODELS = sorted(owned_models(), key=lambda model: model.__name__)

# Each entry reaches the database in its own way; all must refuse an unscoped queryset.
UNSCOPED_OPERATIONS: dict[str, Callable[[Any, Any], Any]] = {
    "list": lambda model, row: list(model.objects.all()),
    "filter-list": lambda model, row: list(model.objects.filter(pk=row.pk)),
    "get": lambda model, row: model.objects.get(pk=row.pk),
    "first": lambda model, row: model.objects.first(),
    "count": lambda model, row: model.objects.count(),
    "exists": lambda model, row: model.objects.filter(pk=row.pk).exists(),
    "values": lambda model, row: list(model.objects.values("pk")),
    "values_list": lambda model, row: list(model.objects.values_list("pk", flat=True)),
    "aggregate": lambda model, row: model.objects.aggregate(n=Count("pk")),
    "update": lambda model, row: model.objects.filter(pk=row.pk).update(user_id="mallory"),
    "delete": lambda model, row: model.objects.filter(pk=row.pk).delete(),
    "iteration": lambda model, row: [item for item in model.objects.all()],
    "iterator": lambda model, row: list(model.objects.iterator()),
    "bool": lambda model, row: bool(model.objects.all()),
    "len": lambda model, row: len(model.objects.all()),
    "slice": lambda model, row: model.objects.all()[0],
    "in_bulk": lambda model, row: model.objects.in_bulk([row.pk]),
    "get_or_create": lambda model, row: model.objects.get_or_create(pk=row.pk),
    "contains": lambda model, row: model.objects.all().contains(row),
}


def test_every_owned_model_has_a_factory() -> None:
    assert set(MODELS) == set(OWNED_FACTORIES), "add a factory for each OwnedModel to tests/factories.py"
    assert MODELS, "there are owned models"


@pytest.mark.parametrize("operation", sorted(UNSCOPED_OPERATIONS))
@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.__name__)
def test_unscoped_use_is_refused(model: type[OwnedModel], operation: str) -> None:
    row = OWNED_FACTORIES[model]("alice")
    with pytest.raises(UnscopedQueryError, match=model.__name__):
        UNSCOPED_OPERATIONS[operation](model, row)
    # Nothing was changed by the refused update/delete.
    assert model.all_users.filter(pk=row.pk, user_id="alice").count() == 1


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.__name__)
def test_for_user_returns_only_that_users_rows(model: type[OwnedModel]) -> None:
    alice_rows = {OWNED_FACTORIES[model]("alice").pk for _ in range(2)}
    bob_row = OWNED_FACTORIES[model]("bob").pk
    shared_row = OWNED_FACTORIES[model](None).pk

    assert set(model.objects.for_user("alice").values_list("pk", flat=True)) == alice_rows
    assert list(model.objects.for_user("bob").values_list("pk", flat=True)) == [bob_row]
    assert model.objects.for_user("carol").count() == 0
    assert set(model.objects.for_user_or_shared("bob").values_list("pk", flat=True)) == {bob_row, shared_row}
    # A scoped queryset stays scoped through further chaining.
    assert model.objects.for_user("alice").filter(pk=bob_row).exists() is False
    assert model.objects.for_user("alice").exclude(pk__in=alice_rows).count() == 0
    assert set(model.objects.unscoped("test").values_list("pk", flat=True)) >= alice_rows | {bob_row, shared_row}


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.__name__)
def test_scoped_update_and_delete_touch_only_own_rows(model: type[OwnedModel]) -> None:
    alice_row = OWNED_FACTORIES[model]("alice").pk
    bob_row = OWNED_FACTORIES[model]("bob").pk

    assert model.objects.for_user("bob").filter(pk=alice_row).update(user_id="bob") == 0
    model.objects.for_user("bob").filter(pk=alice_row).delete()
    assert model.all_users.filter(pk=alice_row, user_id="alice").exists()
    model.objects.for_user("bob").filter(pk=bob_row).delete()
    assert not model.all_users.filter(pk=bob_row).exists()


def _reverse_relations() -> list[tuple[type, str, type]]:
    relations = []
    for model in MODELS + [m for m in OWNED_FACTORIES if m not in MODELS]:
        for field in model._meta.get_fields():
            if field.one_to_many and field.auto_created and issubclass(field.related_model, OwnedModel):
                relations.append((model, field.get_accessor_name(), field.related_model))
    return relations


REVERSE_RELATIONS = _reverse_relations()


def test_there_are_reverse_relations_to_check() -> None:
    assert {(parent.__name__, accessor) for parent, accessor, _ in REVERSE_RELATIONS} >= {
        ("Session", "runs"),
        ("Run", "events"),
    }


@pytest.mark.parametrize(
    ("parent", "accessor", "child"),
    REVERSE_RELATIONS,
    ids=[f"{parent.__name__}.{accessor}" for parent, accessor, _ in REVERSE_RELATIONS],
)
def test_reverse_relations_refuse_unscoped_use(parent: type, accessor: str, child: type) -> None:
    instance = OWNED_FACTORIES[parent]("alice")
    related = getattr(instance, accessor)
    for reach in (lambda: list(related.all()), related.count, related.exists, lambda: related.first()):
        with pytest.raises(UnscopedQueryError):
            reach()
    assert related.all().for_user("alice").count() == related.all().unscoped("test").count()


def test_for_user_needs_a_user_id() -> None:
    model = MODELS[0]
    for bad in (None, "", 42):
        with pytest.raises(TypeError):
            model.objects.for_user(bad)


def test_scope_queryset_maps_scopes() -> None:
    from sessions.models import Session

    OWNED_FACTORIES[Session]("alice")
    OWNED_FACTORIES[Session](None)
    assert {s.user_id for s in scope_queryset(Session.objects, "alice")} == {"alice"}
    assert {s.user_id for s in scope_queryset(Session.objects, None)} == {None}
    assert {s.user_id for s in scope_queryset(Session.objects, ALL_USERS)} == {"alice", None}


def test_admin_manager_sees_every_user() -> None:
    model = MODELS[0]
    OWNED_FACTORIES[model]("alice")
    OWNED_FACTORIES[model]("bob")
    assert {row.user_id for row in model.all_users.all()} >= {"alice", "bob"}
