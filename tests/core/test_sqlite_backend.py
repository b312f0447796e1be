"""core.db.sqlite3: a process's SQLite transactions take turns on a lock, not in SQLite's sleeps."""
from __future__ import annotations

import sqlite3
import sys
import threading

import pytest
from django.db import OperationalError, connection, connections, transaction

from core.db.sqlite3.base import writer_lock
from sessions.models import Session

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def sqlite_only():
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's backend (this run is on PostgreSQL)")
    assert connection.settings_dict["ENGINE"] == "core.db.sqlite3"


def lock():
    return writer_lock(connection.settings_dict["NAME"])


def in_thread(fn, *, options: dict | None = None):
    """``fn`` in a thread of its own, with its own connection (its OPTIONS changed if given)."""
    outcome: dict = {}

    def target() -> None:
        own = connections["default"]
        if options is not None:
            own.settings_dict = {**own.settings_dict, "OPTIONS": {**own.settings_dict["OPTIONS"], **options}}
        try:
            outcome["value"] = fn()
        except BaseException as exc:
            outcome["error"] = exc
        finally:
            own.close()

    thread = threading.Thread(target=target)
    thread.start()
    return thread, outcome


def innermost_frame(thread: threading.Thread):
    return sys._current_frames()[thread.ident]


def new_session(session_id: str) -> None:
    Session.objects.unscoped("test").create(session_id=session_id, user_id="u1")


def test_a_transaction_holds_the_writer_lock_until_it_commits_or_rolls_back():
    with transaction.atomic():
        new_session("s1")
        assert lock().locked()
    assert not lock().locked()

    with pytest.raises(RuntimeError):
        with transaction.atomic():
            new_session("s2")
            assert lock().locked()
            raise RuntimeError("undo")
    assert not lock().locked()
    assert list(Session.objects.unscoped("test").values_list("pk", flat=True)) == ["s1"]


def test_a_second_writer_waits_for_the_lock_and_starts_when_the_first_commits():
    steps: list[str] = []
    entered = threading.Event()

    def second() -> None:
        entered.set()
        with transaction.atomic():
            steps.append("second began")
            new_session("s2")

    with transaction.atomic():
        new_session("s1")
        thread, outcome = in_thread(second)
        assert entered.wait(10)
        thread.join(0.3)
        assert thread.is_alive() and steps == []
        # It waits on the process's lock, before its BEGIN: not in SQLite's sleeping busy handler.
        assert innermost_frame(thread).f_code.co_name == "_start_transaction_under_autocommit"
        steps.append("first commits")
    thread.join(10)
    assert "error" not in outcome, outcome
    assert steps == ["first commits", "second began"]
    assert sorted(Session.objects.unscoped("test").values_list("pk", flat=True)) == ["s1", "s2"]


def test_many_writers_at_once_all_commit():
    def writer(number: int):
        def write() -> None:
            for index in range(10):
                with transaction.atomic():
                    new_session(f"w{number}-{index}")

        return write

    started = [in_thread(writer(number)) for number in range(8)]
    for thread, outcome in started:
        thread.join(30)
        assert not thread.is_alive() and "error" not in outcome, outcome
    assert Session.objects.unscoped("test").count() == 80
    assert not lock().locked()


def test_a_writer_past_its_timeout_goes_ahead_and_lets_sqlite_decide():
    # The lock held by something that is not a transaction: SQLite's own lock is free, so the
    # writer that gave up waiting commits, and does not release a lock it never took.
    def write() -> None:
        with transaction.atomic():
            new_session("late")

    assert lock().acquire(timeout=5)
    try:
        thread, outcome = in_thread(write, options={"timeout": 0.2})
        thread.join(10)
        assert not thread.is_alive() and "error" not in outcome, outcome
        assert lock().locked()
    finally:
        lock().release()
    assert Session.objects.unscoped("test").filter(pk="late").exists()


def test_a_begin_that_fails_releases_the_lock():
    # Another process (a raw connection) holds SQLite's write lock; this one's BEGIN gives up
    # after its busy timeout with "database is locked", and must not keep the process's lock.
    other = sqlite3.connect(connection.settings_dict["NAME"], timeout=0, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        def write() -> None:
            with transaction.atomic():
                new_session("never")

        thread, outcome = in_thread(write, options={"timeout": 0.2})
        thread.join(10)
        assert isinstance(outcome.get("error"), OperationalError), outcome
        assert "locked" in str(outcome["error"])
        assert not lock().locked()
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert not Session.objects.unscoped("test").filter(pk="never").exists()


def test_a_forked_child_does_not_inherit_a_lock_held_in_the_parent():
    import os

    with transaction.atomic():
        new_session("parent")
        assert lock().locked()
        pid = os.fork()
        if pid == 0:  # the child: the parent's transaction is not its own
            os._exit(0 if not writer_lock(connection.settings_dict["NAME"]).locked() else 1)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_placeholders_and_literal_percent_signs_reach_sqlite_as_django_writes_them():
    # A statement's qmark text is kept after its first execution: each statement's second pass
    # runs from the kept text, with other parameters.
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE percents (v TEXT)")
        for number, text in ((1, "a%s"), (2, "b%%")):
            cursor.execute("SELECT %s, '100%%', '%%s', %s", [number, text])
            assert cursor.fetchone() == (number, "100%", "%s", text)
            cursor.execute("SELECT %(n)s, '5%%'", {"n": number})
            assert cursor.fetchone() == (number, "5%")
            cursor.executemany("INSERT INTO percents (v) VALUES ('%%' || %s)", [(text,), (str(number),)])
        cursor.execute("SELECT v FROM percents ORDER BY rowid")
        assert [row[0] for row in cursor.fetchall()] == ["%a%s", "%1", "%b%%", "%2"]
    Session.objects.unscoped("test").create(session_id="s1", user_id="u1", session_name="50% off")
    Session.objects.unscoped("test").create(session_id="s2", user_id="u1", session_name="50 off")
    found = Session.objects.unscoped("test").filter(session_name__contains="%")
    assert list(found.values_list("pk", flat=True)) == ["s1"]
