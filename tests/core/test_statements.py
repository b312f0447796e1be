"""core.statements: Django's INSERT and SELECT, compiled once, and plain UPDATEs, with values bound
and rows read back as Django would."""
from __future__ import annotations

from datetime import datetime, timedelta
from datetime import timezone as dt_timezone
from zoneinfo import ZoneInfo

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import JSONField, Value
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.statements import Insert, Select, Update, instances, pipelined
from core.tenancy import UnscopedQueryError, scope_queryset
from sessions.models import Run, RunEvent, RunStatus, Session
from tests.factories import make_run, make_session

SESSION_FIELDS = [field.attname for field in Session._meta.concrete_fields]


def session_values(session_id: str, user_id: str | None = "alice"):
    now = timezone.now()
    values = {
        "session_id": session_id, "user_id": user_id, "session_type": "agent", "component_id": "demo",
        "session_name": "", "session_state": {"cart": ["tea", 2], "nested": {"ok": True}}, "metadata": None,
        "summary": None, "component_data": {"name": "Demo"}, "metrics": {}, "total_tokens": 0, "next_run_index": 0, "origin": "api",
        "created_at": now - timedelta(minutes=5), "updated_at": now,
    }
    return [values[name] for name in SESSION_FIELDS]


@pytest.mark.django_db
def test_a_row_round_trips_json_datetimes_and_nulls() -> None:
    values = session_values("s1")
    assert Insert(Session, SESSION_FIELDS).row(values) == 1
    stored = Session.all_users.get(pk="s1")
    assert stored.session_state == {"cart": ["tea", 2], "nested": {"ok": True}}
    assert stored.metadata is None
    assert stored.component_data == {"name": "Demo"}
    created = SESSION_FIELDS.index("created_at")
    assert (stored.created_at, stored.updated_at) == (values[created], values[created + 1])
    assert (stored.user_id, stored.session_type, stored.component_id) == ("alice", "agent", "demo")


@pytest.mark.django_db
def test_a_taken_key_is_skipped_without_breaking_the_transaction() -> None:
    insert = Insert(Session, SESSION_FIELDS, skip_conflict=True)
    with transaction.atomic():
        assert insert.row(session_values("s1", "alice")) == 1
        assert insert.row(session_values("s1", "bob")) == 0
        # PostgreSQL would refuse every later statement of a transaction whose INSERT failed.
        assert Session.all_users.filter(pk="s1").values_list("user_id", flat=True).get() == "alice"


@pytest.mark.django_db
def test_without_skip_conflict_a_taken_key_raises() -> None:
    insert = Insert(Session, SESSION_FIELDS)
    insert.row(session_values("s1"))
    with pytest.raises(IntegrityError), transaction.atomic():
        insert.row(session_values("s1"))


@pytest.mark.django_db
def test_skip_conflict_only_skips_the_primary_key() -> None:
    run = make_run("alice")
    insert = Insert(RunEvent, ["run_id", "user_id", "event_index", "event", "payload", "created_at"], skip_conflict=True)
    insert.row([run.pk, "alice", 0, "RunStarted", {}, timezone.now()])
    # (run, event_index) is unique too, but it is not the key being skipped: that still raises.
    with pytest.raises(IntegrityError), transaction.atomic():
        insert.row([run.pk, "alice", 0, "RunStarted", {}, timezone.now()])


@pytest.mark.django_db
def test_many_rows_are_one_statement_in_order() -> None:
    run = make_run("alice")
    insert = Insert(RunEvent, ["run_id", "user_id", "event_index", "event", "payload", "created_at"])
    now = timezone.now()
    with CaptureQueriesContext(connection) as captured:
        insert.rows([run.pk, "alice", i, f"E{i}", {"i": i, "text": "é\u2028"}, now] for i in range(5))
    assert len(captured.captured_queries) == 1
    stored = list(RunEvent.all_users.filter(run_id=run.pk).order_by("event_index").values_list("event_index", "event", "payload"))
    assert stored == [(i, f"E{i}", {"i": i, "text": "é\u2028"}) for i in range(5)]
    with CaptureQueriesContext(connection) as nothing:
        insert.rows([])
    assert nothing.captured_queries == []


@pytest.mark.django_db
def test_converted_rows_are_bound_as_given_and_read_back_as_values() -> None:
    run = make_run("alice")
    insert = Insert(RunEvent, ["run_id", "user_id", "event_index", "event", "payload", "created_at"])
    when = timezone.now().replace(microsecond=123456)
    # What the fields' own conversions make for this database: encoded JSON, the stored datetime.
    payload = connection.ops.adapt_json_value({"text": "é", "n": [1, 2]}, None)
    stored_when = connection.ops.adapt_datetimefield_value(when)
    insert.rows([(run.pk, "alice", i, "E", payload, stored_when) for i in range(2)], converted=True)
    stored = list(RunEvent.all_users.filter(run_id=run.pk).order_by("event_index").values_list("event_index", "payload", "created_at"))
    assert stored == [(0, {"text": "é", "n": [1, 2]}, when), (1, {"text": "é", "n": [1, 2]}, when)]



@pytest.mark.django_db
def test_json_values_of_every_kind_are_stored_as_the_field_stores_them() -> None:
    # Dicts and lists take the short way to the backend's adapter; anything else the field's own.
    values = [{"a": [1, {"b": None}]}, [1, "two", {"3": 4.5}], "text", 7, True, {}, [], Value(None, JSONField()), None]
    update = Update(Session, ["metadata"], where=["user_id"])
    make_session("alice", session_id="s1")
    for value in values:
        assert update.row("s1", [value], ["alice"]) == 1
        stored = Session.all_users.filter(pk="s1").values_list("metadata", flat=True).get()
        expected = None if isinstance(value, Value) else value
        assert stored == expected
        with connection.cursor() as cursor:
            cursor.execute("SELECT metadata IS NULL FROM agno_sessions WHERE session_id = %s AND user_id = %s", ["s1", "alice"])
            assert bool(cursor.fetchone()[0]) == (value is None)  # JSON null is a value, None is SQL NULL

@pytest.mark.django_db
def test_text_choices_are_stored_as_their_plain_value() -> None:
    run = make_run("alice")
    fields = [field.attname for field in Run._meta.concrete_fields]
    values = {field: getattr(run, field) for field in fields}
    values.update(run_id="r2", run_index=1, status=RunStatus.COMPLETED)
    Insert(Run, fields).row([values[name] for name in fields])
    assert Run.all_users.filter(pk="r2", status="COMPLETED").exists()


def test_unknown_columns_and_wrong_value_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="no column"):
        Insert(Session, ["session_id", "nope"])
    with pytest.raises(ValueError, match=f"expected {len(SESSION_FIELDS)} values"):
        Insert(Session, SESSION_FIELDS).row(["s1"])


@pytest.mark.django_db
def test_an_instance_is_inserted_with_every_column_and_counts_as_saved() -> None:
    now = timezone.now()
    session = Session(session_id="s9", user_id="alice", component_id="demo", session_state={"a": 1}, created_at=now, updated_at=now)
    insert = Insert(Session, skip_conflict=True)
    assert insert.instance(session) is True
    assert (session._state.adding, session._state.db) == (False, "default")
    assert Session.all_users.get(pk="s9").session_state == {"a": 1}
    again = Session(session_id="s9", user_id="bob", created_at=now, updated_at=now)
    assert insert.instance(again) is False and again._state.adding


@pytest.mark.django_db
def test_an_update_by_key_binds_json_and_datetimes() -> None:
    run = make_run("alice")
    finished = timezone.now()
    update = Update(Run, ["status", "run_data", "finished_at"], where=["user_id"])
    assert update.row(run.pk, [RunStatus.COMPLETED, {"content": "done", "n": [1, 2]}, finished], ["alice"]) == 1
    stored = Run.all_users.get(pk=run.pk)
    assert (stored.status, stored.run_data, stored.finished_at) == ("COMPLETED", {"content": "done", "n": [1, 2]}, finished)
    assert update.row("no-such-run", [RunStatus.ERROR, {}, None], ["alice"]) == 0



@pytest.mark.django_db
def test_datetimes_are_bound_as_django_binds_them_however_often_they_repeat() -> None:
    # Equal UTC instants are converted once and reused: an instant given in another zone, two
    # instants an hour apart that a DST fold writes alike, and more distinct instants than are
    # kept (64) still reach the database as Django's own binding.
    run = make_run("alice")
    update = Update(Run, ["started_at", "finished_at"], where=["user_id"])
    utc = timezone.now().replace(microsecond=654321)
    kolkata = utc.astimezone(ZoneInfo("Asia/Kolkata"))
    # SQLite: the text stored, as Django's adapter makes it; PostgreSQL: the instant stored.
    column = "CAST({} AS TEXT)" if connection.vendor == "sqlite" else "{}"
    sql = f"SELECT {column.format('started_at')}, {column.format('finished_at')} FROM agno_runs WHERE run_id = %s AND user_id = %s"
    with connection.cursor() as cursor:
        for offset in [0, 0, *range(70), 0]:
            when = utc + timedelta(seconds=offset)
            assert update.row(run.pk, [when, when.astimezone(ZoneInfo("Asia/Kolkata"))], ["alice"]) == 1
            cursor.execute(sql, [run.pk, "alice"])
            expected = connection.ops.adapt_datetimefield_value(when) if connection.vendor == "sqlite" else when
            assert cursor.fetchone() == (expected, expected)
    read = Run.all_users.get(pk=run.pk)
    assert read.started_at == read.finished_at == kolkata == utc
    paris = ZoneInfo("Europe/Paris")
    early, late = (datetime(2026, 10, 25, 2, 30, fold=fold, tzinfo=paris) for fold in (0, 1))
    assert early == late and early.astimezone(dt_timezone.utc) != late.astimezone(dt_timezone.utc)
    for when in (early, late, early):
        assert update.row(run.pk, [when, when], ["alice"]) == 1
        assert Run.all_users.get(pk=run.pk).started_at.astimezone(dt_timezone.utc) == when.astimezone(dt_timezone.utc)

def test_an_update_of_an_owned_row_must_be_keyed_by_its_owner() -> None:
    with pytest.raises(ValueError, match="add 'user_id' to where"):
        Update(Run, ["status"], where=["status"])


@pytest.mark.django_db
def test_an_update_keyed_by_owner_leaves_another_owners_row_and_reaches_ownerless_ones() -> None:
    alices, shared = make_run("alice"), make_run(None)
    update = Update(Run, ["status"], where=["user_id"])
    assert update.row(alices.pk, [RunStatus.ERROR], ["bob"]) == 0
    assert update.row(alices.pk, [RunStatus.ERROR], [None]) == 0
    assert update.row(shared.pk, [RunStatus.ERROR], ["alice"]) == 0
    assert update.row(shared.pk, [RunStatus.ERROR], [None]) == 1  # None: "IS NULL"
    assert dict(Run.all_users.filter(pk__in=[alices.pk, shared.pk]).values_list("pk", "status")) == {
        alices.pk: RunStatus.PENDING, shared.pk: RunStatus.ERROR,
    }


@pytest.mark.django_db
def test_an_update_with_conditions_changes_nothing_unless_they_hold() -> None:
    run = make_run("alice")  # PENDING
    fenced = Update(Run, ["status", "error"], where=["status", "user_id"])
    assert fenced.row(run.pk, [RunStatus.ERROR, "x"], [RunStatus.RUNNING, "alice"]) == 0
    assert fenced.row(run.pk, [RunStatus.ERROR, "x"], [RunStatus.PENDING, "bob"]) == 0
    assert Run.all_users.get(pk=run.pk).status == RunStatus.PENDING
    assert fenced.row(run.pk, [RunStatus.ERROR, "boom"], [RunStatus.PENDING, "alice"]) == 1
    assert Run.all_users.filter(pk=run.pk).values_list("status", "error").get() == ("ERROR", "boom")
    with pytest.raises(ValueError, match="2 values and 2 conditions"):
        fenced.row(run.pk, [RunStatus.ERROR], [RunStatus.PENDING, "alice"])


@pytest.mark.django_db
def test_a_condition_given_several_values_is_an_in_list() -> None:
    run = make_run("alice")  # PENDING
    started = Update(Run, ["status"], where=["user_id", "status"])
    assert started.row(run.pk, [RunStatus.RUNNING], ["alice", (RunStatus.PAUSED, RunStatus.ERROR)]) == 0
    assert started.row(run.pk, [RunStatus.RUNNING], ["alice", (RunStatus.PENDING, RunStatus.RUNNING)]) == 1
    assert started.row(run.pk, [RunStatus.RUNNING], ["alice", (RunStatus.PENDING, RunStatus.RUNNING)]) == 1  # RUNNING matches too
    assert started.row(run.pk, [RunStatus.COMPLETED], ["alice", RunStatus.RUNNING]) == 1  # one value: "="
    assert Run.all_users.get(pk=run.pk).status == RunStatus.COMPLETED


RUN_WITH_SESSION = Select(lambda run_id, user_id: scope_queryset(Run.objects, user_id).select_related("session").filter(pk=run_id))


@pytest.mark.django_db
def test_a_compiled_select_reads_as_the_queryset_does() -> None:
    session = make_session("alice")
    Session.all_users.filter(pk=session.pk).update(session_state={"k": [1, 2]})
    run = make_run("alice", session=session)
    expected = Run.all_users.select_related("session").get(pk=run.pk)
    for _ in range(2):  # compiled on the first call, reused on the second
        read = RUN_WITH_SESSION.one(run.pk, "alice")
        assert [getattr(read, f.attname) for f in Run._meta.concrete_fields] == [getattr(expected, f.attname) for f in Run._meta.concrete_fields]
        assert isinstance(read.created_at, type(expected.created_at)) and read.created_at.tzinfo is not None
        with CaptureQueriesContext(connection) as queries:
            assert read.session.session_state == {"k": [1, 2]}  # attached by select_related: no query
        assert len(queries) == 0
        assert read._state.adding is False and read._state.db == "default"


@pytest.mark.django_db
def test_a_compiled_select_keeps_the_scope_it_was_built_with() -> None:
    run = make_run("alice")
    shared = make_run(None)
    with pytest.raises(Run.DoesNotExist):
        RUN_WITH_SESSION.one(run.pk, "bob")  # another user's run: as missing
    with pytest.raises(Run.DoesNotExist):
        RUN_WITH_SESSION.one(run.pk, None)  # None: ownerless rows only
    assert RUN_WITH_SESSION.one(shared.pk, None).pk == shared.pk
    assert RUN_WITH_SESSION.all("no-such-run", "alice") == []


def test_a_compiled_select_refuses_an_unscoped_owned_queryset() -> None:
    unscoped = Select(lambda run_id: Run.objects.filter(pk=run_id))
    with pytest.raises(UnscopedQueryError):
        unscoped.all("any")


def test_a_compiled_select_refuses_an_argument_that_is_not_a_parameter() -> None:
    ignored = Select(lambda run_id: Run.all_users.all())
    with pytest.raises(ValueError, match="did not reach"):
        ignored.all("any")


@pytest.mark.django_db
def test_returned_rows_become_instances_with_django_conversions() -> None:
    run = make_run("alice", run_data={"content": "hi"})
    with connection.cursor() as cursor:
        cursor.execute("UPDATE agno_runs SET status = %s WHERE run_id = %s AND user_id = %s RETURNING *", [RunStatus.RUNNING, run.pk, "alice"])
        [updated] = instances(Run, cursor)
    assert (updated.pk, updated.status, updated.run_data) == (run.pk, RunStatus.RUNNING, {"content": "hi"})
    assert updated.created_at == Run.all_users.get(pk=run.pk).created_at  # a datetime on SQLite too


@pytest.mark.django_db
def test_pipelined_statements_take_effect_and_counts_are_waited_for() -> None:
    first, second = make_run("alice"), make_run("alice")
    status = Update(Run, ["status"], where=["user_id", "status"])
    with transaction.atomic():
        with pipelined():
            if connection.vendor == "postgresql":  # really in pipeline mode there, a no-op elsewhere
                assert connection.connection.pgconn.pipeline_status != 0
            sent = status.send(first.pk, [RunStatus.RUNNING], ["alice", RunStatus.PENDING])
            assert status.row(second.pk, [RunStatus.RUNNING], ["alice", RunStatus.COMPLETED]) == 0  # waits for its answer
            assert status.row(second.pk, [RunStatus.RUNNING], ["alice", RunStatus.PENDING]) == 1
            assert sent.count() == 1
    assert {run.status for run in Run.all_users.filter(pk__in=[first.pk, second.pk])} == {RunStatus.RUNNING}


@pytest.mark.django_db(transaction=True)
def test_a_pipelined_error_is_djangos_and_rolls_the_transaction_back() -> None:
    run = make_run("alice")
    insert = Insert(Session, SESSION_FIELDS)
    with pytest.raises(IntegrityError):
        with transaction.atomic():
            with pipelined():
                Update(Run, ["status"], where=["user_id"]).send(run.pk, [RunStatus.RUNNING], ["alice"])
                insert.row(session_values(run.session_id))  # a taken key: fails where it is read
    assert Run.all_users.get(pk=run.pk).status == RunStatus.PENDING  # the update went with it
    with transaction.atomic(), pipelined():  # the connection is usable again
        assert Update(Run, ["status"], where=["user_id"]).row(run.pk, [RunStatus.RUNNING], ["alice"]) == 1
