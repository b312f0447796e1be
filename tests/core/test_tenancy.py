"""Every owned model refuses unscoped use, through every way a queryset reaches the database."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ObjectDoesNotExist
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Exists, Subquery
from django.test.utils import CaptureQueriesContext

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


# ---------------------------------------------------------------------------------------------
# Side doors: ways into an owned table that do not evaluate the owned queryset itself.

def _table(model: type) -> str:
    return model._meta.db_table


# Each compiles an unscoped owned queryset into other SQL (or runs SQL beside it); all must refuse.
SIDE_DOORS: dict[str, Callable[[Any, Any], Any]] = {
    "raw": lambda model, row: list(model.objects.raw(f"SELECT * FROM {_table(model)}")),
    "raw-after-for_user": lambda model, row: list(model.objects.for_user("bob").raw(f"SELECT * FROM {_table(model)}")),
    "__in": lambda model, row: list(get_user_model().objects.filter(username__in=model.objects.values("user_id"))),
    "Subquery": lambda model, row: list(model.objects.for_user("bob").annotate(stolen=Subquery(model.objects.values("pk")[:1]))),
    "Exists": lambda model, row: list(model.objects.for_user("bob").filter(Exists(model.objects.filter(pk=row.pk)))),
    "union": lambda model, row: list(model.objects.for_user("bob").union(model.objects.all())),
    "or": lambda model, row: list(model.objects.for_user("bob") | model.objects.all()),
    "xor": lambda model, row: list(model.objects.for_user("bob") ^ model.objects.all()),
}


@pytest.mark.parametrize("door", sorted(SIDE_DOORS))
@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.__name__)
def test_an_unscoped_queryset_compiled_into_other_sql_is_refused(model: type[OwnedModel], door: str) -> None:
    row = OWNED_FACTORIES[model]("alice")
    with pytest.raises(UnscopedQueryError, match=model.__name__):
        SIDE_DOORS[door](model, row)


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.__name__)
def test_scoped_subqueries_and_unscoped_raw_still_work(model: type[OwnedModel]) -> None:
    from core.tenancy import current_unscoped_reason

    alice_row, bob_row = OWNED_FACTORIES[model]("alice"), OWNED_FACTORIES[model]("bob")
    assert list(model.objects.for_user("bob").filter(pk__in=model.objects.for_user("bob").values("pk")).values_list("pk", flat=True)) == [bob_row.pk]
    assert not model.objects.for_user("bob").filter(Exists(model.objects.for_user("bob").filter(pk=alice_row.pk))).exists()
    reasons: list[str | None] = []

    def record(execute, sql, params, many, context):
        reasons.append(current_unscoped_reason())
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        rows = list(model.objects.unscoped("test: an operator's raw read").raw(f"SELECT * FROM {_table(model)} WHERE user_id = %s", ["alice"]))
    assert [r.pk for r in rows] == [alice_row.pk]
    assert reasons == ["test: an operator's raw read"]


def _forward_relations() -> list[tuple[type, str]]:
    return [
        (model, field.name)
        for model in MODELS
        for field in model._meta.concrete_fields
        if field.many_to_one and issubclass(field.related_model, OwnedModel)
    ]


FORWARD_RELATIONS = _forward_relations()


def _child_pointing_at_another_users_parent(child: type, accessor: str) -> tuple[Any, Any]:
    """bob's child row whose parent is alice's (an inconsistent row: what a bug or a hand edit leaves)."""
    row = OWNED_FACTORIES[child]("bob")
    parent = OWNED_FACTORIES[child._meta.get_field(accessor).related_model]("alice")
    child.all_users.filter(pk=row.pk).update(**{accessor: parent.pk})
    return child.objects.for_user("bob").get(pk=row.pk), parent


def test_there_are_forward_relations_to_check() -> None:
    assert {(model.__name__, name) for model, name in FORWARD_RELATIONS} >= {("Run", "session"), ("RunEvent", "run")}


@pytest.mark.parametrize(("child", "accessor"), FORWARD_RELATIONS, ids=[f"{m.__name__}.{a}" for m, a in FORWARD_RELATIONS])
def test_a_forward_relation_reads_as_the_rows_owner(child: type, accessor: str) -> None:
    own = OWNED_FACTORIES[child]("alice")
    with CaptureQueriesContext(connection) as queries:
        parent = getattr(child.objects.for_user("alice").get(pk=own.pk), accessor)
    assert parent.user_id == "alice"
    assert "user_id" in queries.captured_queries[-1]["sql"].split("WHERE", 1)[1]

    stray, alices = _child_pointing_at_another_users_parent(child, accessor)
    with pytest.raises(ObjectDoesNotExist):
        getattr(stray, accessor)


@pytest.mark.parametrize(("child", "accessor"), FORWARD_RELATIONS, ids=[f"{m.__name__}.{a}" for m, a in FORWARD_RELATIONS])
def test_select_related_returns_no_row_joined_to_another_users_row(child: type, accessor: str) -> None:
    own = OWNED_FACTORIES[child]("bob")
    stray, alices = _child_pointing_at_another_users_parent(child, accessor)
    for queryset in (
        child.objects.for_user("bob").select_related(accessor),
        child.objects.select_related(accessor).for_user("bob"),  # either order
        child.objects.for_user("bob").select_related(),  # every non-null foreign key
        child.objects.for_user_or_shared("bob").select_related(accessor),
    ):
        rows = list(queryset)
        assert [row.pk for row in rows] == [own.pk]
        assert all(getattr(row, accessor).user_id == "bob" for row in rows)


@pytest.mark.parametrize(("child", "accessor"), FORWARD_RELATIONS, ids=[f"{m.__name__}.{a}" for m, a in FORWARD_RELATIONS])
def test_prefetching_a_forward_relation_needs_a_scoped_queryset(child: type, accessor: str) -> None:
    from django.db.models import Prefetch

    OWNED_FACTORIES[child]("alice")
    with pytest.raises(UnscopedQueryError):
        list(child.objects.for_user("alice").prefetch_related(accessor))
    target = child._meta.get_field(accessor).related_model
    rows = list(child.objects.for_user("alice").prefetch_related(Prefetch(accessor, queryset=target.objects.for_user("alice"))))
    assert {getattr(row, accessor).user_id for row in rows} == {"alice"}


def _made_up(model: type, row: Any, owner: str) -> Any:
    """An instance carrying ``row``'s primary key and values but claiming another owner, built
    without reading the row (what a caller could make from an id it saw)."""
    values = {field.attname: getattr(row, field.attname) for field in model._meta.concrete_fields}
    return model(**{**values, "user_id": owner})


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.__name__)
def test_saving_an_instance_is_keyed_by_its_owner(model: type[OwnedModel]) -> None:
    row = OWNED_FACTORIES[model]("alice")
    with pytest.raises(IntegrityError), transaction.atomic():
        _made_up(model, row, "bob").save()  # the UPDATE finds nothing of bob's; the INSERT hits the key
    assert model.all_users.filter(pk=row.pk, user_id="alice").count() == 1
    # An operator may still reassign a row they read: the UPDATE is keyed by the owner it was read with.
    loaded = model.all_users.get(pk=row.pk)
    loaded.user_id = "bob"
    loaded.save()
    loaded.save()
    assert model.all_users.filter(pk=row.pk, user_id="bob").count() == 1


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.__name__)
def test_reloading_an_instance_is_keyed_by_its_owner(model: type[OwnedModel]) -> None:
    row = OWNED_FACTORIES[model]("alice")
    with pytest.raises(model.DoesNotExist):
        _made_up(model, row, "bob").refresh_from_db()
    own = model.objects.for_user("alice").get(pk=row.pk)
    own.refresh_from_db()
    assert own.user_id == "alice"


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.__name__)
def test_deleting_an_instance_is_keyed_by_its_owner(model: type[OwnedModel]) -> None:
    row = OWNED_FACTORIES[model]("alice")
    assert _made_up(model, row, "bob").delete() == (0, {})
    assert model.all_users.filter(pk=row.pk, user_id="alice").count() == 1
    model.objects.for_user("alice").get(pk=row.pk).delete()
    assert not model.all_users.filter(pk=row.pk).exists()


@pytest.mark.parametrize("reason", ["", "   ", None, 42])
def test_unscoped_needs_a_reason(reason: Any) -> None:
    from core import tenancy

    model = MODELS[0]
    with pytest.raises(TypeError, match="reason"):
        model.objects.unscoped(reason)
    with pytest.raises(TypeError):
        model.objects.unscoped()
    with pytest.raises(TypeError, match="reason"):
        with tenancy.unscoped(reason):
            pass


def test_the_all_users_scope_is_an_unscoped_read_that_says_why() -> None:
    from core.tenancy import current_unscoped_reason
    from sessions.models import Session

    OWNED_FACTORIES[Session]("alice")
    seen: list[str | None] = []

    def record(execute, sql, params, many, context):
        seen.append(current_unscoped_reason())
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        list(scope_queryset(Session.objects, ALL_USERS))
        list(scope_queryset(Session.objects, "alice"))
    assert seen == ["scope_queryset(ALL_USERS): an admin's or an open server's read scope", None]


def test_hand_written_session_updates_are_keyed_by_the_owner() -> None:
    from sessions.models import Run, RunStatus, Session
    from sessions.services.runs import RunRecord, SessionNotFound, run_create, run_finish

    alices = OWNED_FACTORIES[Run]("alice")
    session = Session.all_users.get(pk=alices.session_id)
    before = (session.next_run_index, session.session_state, session.total_tokens, session.metrics)
    # bob's objects carrying alice's keys (never read: made up from ids).
    with pytest.raises(SessionNotFound), transaction.atomic():
        run_create(session=Session(session_id=session.pk, user_id="bob", component_id="demo"))
    run_finish(
        Run(run_id=alices.pk, session_id=session.pk, user_id="bob", total_tokens=0),
        RunRecord(
            run_id=alices.pk, session_id=session.pk, owner_id="bob", component_id="demo", status=RunStatus.COMPLETED,
            output={"content": "stolen", "metrics": {"input_tokens": 5, "output_tokens": 5}}, session_state={"stolen": True},
        ),
    )
    session.refresh_from_db()
    assert (session.next_run_index, session.session_state, session.total_tokens, session.metrics) == before
    assert Run.all_users.get(pk=alices.pk).content == ""
    assert Run.all_users.filter(session_id=session.pk).count() == 1


# ---------------------------------------------------------------------------------------------
# The test suite's guard (tests/tenancy_guard.py): SQL on an owned table carries its owner clause.

def test_the_guard_fails_a_statement_without_an_owner_clause() -> None:
    from core.tenancy import unscoped
    from tests import tenancy_guard

    row = OWNED_FACTORIES[MODELS[0]]("alice")
    table = _table(MODELS[0])
    with connection.cursor() as cursor:
        with pytest.raises(tenancy_guard.OwnerClauseMissing, match=table):
            cursor.execute(f"SELECT * FROM {table} WHERE {MODELS[0]._meta.pk.column} = %s", [row.pk])
        assert tenancy_guard.take_violations()  # recorded too (a worker thread may swallow the error)
        cursor.execute(f"SELECT * FROM {table} WHERE {MODELS[0]._meta.pk.column} = %s AND user_id = %s", [row.pk, "alice"])
        with unscoped("test: an explicit every-user statement"):
            cursor.execute(f"SELECT COUNT(*) FROM {table}")


def test_the_guard_covers_connections_opened_in_other_threads() -> None:
    import threading

    from django.db import connections

    from tests import tenancy_guard

    errors: list[BaseException] = []

    def other_thread() -> None:
        try:
            with connections["default"].cursor() as cursor:
                cursor.execute(f"SELECT COUNT(*) FROM {_table(MODELS[0])}")
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join(30)
    assert [type(error) for error in errors] == [tenancy_guard.OwnerClauseMissing]
    assert len(tenancy_guard.take_violations()) == 1


@pytest.mark.parametrize(
    ("sql", "missing"),
    [
        ('SELECT "agno_sessions"."user_id" FROM "agno_sessions" WHERE "agno_sessions"."session_id" = %s', ["agno_sessions"]),
        ('SELECT * FROM "agno_sessions" WHERE "agno_sessions"."user_id" = %s', []),
        ('SELECT * FROM "agno_sessions" WHERE ("agno_sessions"."user_id" = %s OR "agno_sessions"."user_id" IS NULL)', []),
        ('SELECT * FROM "agno_sessions" WHERE "agno_sessions"."user_id" IN (%s, %s)', []),
        ('UPDATE "agno_runs" SET "user_id" = %s WHERE "agno_runs"."run_id" = %s', ["agno_runs"]),
        ('DELETE FROM "agno_runs" WHERE "agno_runs"."run_id" IN (%s)', ["agno_runs"]),
        # A subquery needs its own owner clause: the outer one does not cover it.
        ('SELECT * FROM "agno_sessions" WHERE "agno_sessions"."user_id" = %s AND "agno_sessions"."session_id" IN (SELECT U0."session_id" FROM "agno_runs" U0)', ["agno_sessions", "agno_runs"]),
        ('SELECT * FROM "agno_sessions" WHERE "user_id" = %s AND "session_id" IN (SELECT U0."session_id" FROM "agno_runs" U0 WHERE U0."user_id" = %s)', []),
        ('INSERT INTO "agno_sessions" ("session_id", "user_id") VALUES (%s, %s)', []),
        ('SELECT * FROM "auth_user" WHERE "id" = %s', []),
    ],
)
def test_the_guard_reads_owner_clauses_per_table(sql: str, missing: list[str]) -> None:
    from tests.tenancy_guard import missing_owner_clause

    owned = frozenset(_table(model) for model in MODELS)
    assert missing_owner_clause(sql, owned) == missing
