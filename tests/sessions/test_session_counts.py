"""Each owner's session count (``SessionCount``) is kept by the database, on both databases: every
way a session is written, removed or handed to another owner moves it, in the writer's
transaction, and the migration counts the sessions that were there before it."""
from __future__ import annotations

import io
from dataclasses import replace

import pytest
from django.core.management import call_command
from django.db import connection, transaction

from core.tenancy import unscoped
from sessions.models import RunStatus, Session, SessionCount
from sessions.services.runs import RunRecord, run_record
from tests.factories import make_run, make_session


def counts() -> dict[str, int]:
    """Every owner's stored count, beside what counting the sessions gives (both must agree)."""
    stored = dict(SessionCount.objects.values_list("user_id", "sessions"))
    with unscoped("the test compares every owner's count with the sessions"):
        with connection.cursor() as cursor:
            cursor.execute("SELECT user_id, COUNT(*) FROM agno_sessions WHERE user_id IS NOT NULL GROUP BY user_id")
            counted = dict(cursor.fetchall())
    assert stored == counted
    return stored


@pytest.mark.django_db
def test_sessions_written_removed_and_reassigned_move_their_owners_count() -> None:
    first = make_session("alice")
    make_session("alice")
    make_session("bob")
    make_session(None)  # an ownerless session is nobody's
    assert counts() == {"alice": 2, "bob": 1}

    make_run("alice", session=first)  # a run in an existing session is not a new session
    Session.all_users.create(session_id="bob-2", user_id="bob", component_id="demo")  # the ORM's own INSERT
    Session.all_users.bulk_create([Session(session_id=f"bulk-{n}", user_id="carol", component_id="demo") for n in range(3)])
    assert counts() == {"alice": 2, "bob": 2, "carol": 3}

    # An operator hands a session to someone else (one row, then many with one UPDATE).
    with unscoped("the test reassigns sessions as an operator would"):
        Session.all_users.filter(pk=first.pk).update(user_id="bob")
        Session.all_users.filter(user_id="carol").update(user_id="dave")
        Session.all_users.filter(pk="bulk-0").update(user_id=None)
    assert counts() == {"alice": 1, "bob": 3, "dave": 2}

    # An operator's reassign_owner moves every owned row, the sessions among them.
    call_command("reassign_owner", "--from", "dave", "--to", "erin", stdout=io.StringIO())
    assert counts() == {"alice": 1, "bob": 3, "erin": 2}
    call_command("reassign_owner", "--from", "erin", "--to", "dave", stdout=io.StringIO())

    # A save of every column (the admin's) that keeps the owner moves nothing.
    session = Session.objects.for_user("bob").get(pk="bob-2")
    session.session_name = "renamed"
    session.save()
    assert counts() == {"alice": 1, "bob": 3, "dave": 2}

    # Deleted one by one, in bulk, and with their runs (the cascade).
    Session.objects.for_user("bob").get(pk="bob-2").delete()
    Session.objects.for_user("dave").all().delete()
    Session.objects.for_user("bob").filter(pk=first.pk).delete()
    assert counts() == {"alice": 1, "bob": 1}
    # An owner's last session takes their row with it (nothing naming them is left).
    Session.objects.for_user("bob").all().delete()
    assert counts() == {"alice": 1} and not SessionCount.objects.filter(user_id__in=["bob", "carol", "dave"]).exists()


@pytest.mark.django_db
def test_a_creation_rolled_back_leaves_the_count_as_it_was() -> None:
    make_session("alice")
    with pytest.raises(RuntimeError), transaction.atomic():
        make_session("alice")
        assert counts() == {"alice": 2}  # seen inside the creating transaction
        raise RuntimeError("the run's writes fail after its session was inserted")
    assert counts() == {"alice": 1}


@pytest.mark.django_db
def test_a_session_taken_meanwhile_is_not_counted_twice() -> None:
    """The run's INSERT of a new session yields to one written meanwhile (ON CONFLICT DO NOTHING):
    a row not inserted is not counted."""
    record = RunRecord(run_id="r-1", session_id="s-same", owner_id="alice", component_id="agent", status=RunStatus.RUNNING)
    run_record(record, create_session=True)
    run_record(replace(record, run_id="r-2"), create_session=True)  # the same session id again
    assert counts() == {"alice": 1}


@pytest.mark.django_db(transaction=True)
def test_the_migration_counts_the_sessions_already_there() -> None:
    for owner, number in (("alice", 3), ("bob", 1)):
        for _ in range(number):
            make_session(owner)
    make_session(None)
    call_command("migrate", "agno_sessions", "0005", verbosity=0)  # before the counts existed
    Session.all_users.create(session_id="before-the-counts", user_id="alice", component_id="demo")  # written while nothing counts
    call_command("migrate", "agno_sessions", verbosity=0)
    assert counts() == {"alice": 4, "bob": 1}
    make_session("bob")  # and counted from then on
    assert counts() == {"alice": 4, "bob": 2}
