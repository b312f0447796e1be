from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

import pytest
from django.db import IntegrityError, connection, connections, transaction
from django.test.utils import CaptureQueriesContext

from core.tenancy import ALL_USERS
from sessions.models import Run, RunEvent, RunStatus, Session
from sessions.selectors import run_events_after, run_get, run_history
from sessions.services import (
    SessionExists,
    SessionNotFound,
    run_create,
    run_events_append,
    run_transition,
    session_create,
    session_get_or_create,
)
from tests.factories import make_run, make_session


@pytest.mark.django_db
class TestSessionGetOrCreate:
    def test_creates_then_returns_the_same_session(self) -> None:
        session, created = session_get_or_create(user="alice", owner_id="alice", session_id="s1", component_id="demo")
        again, created_again = session_get_or_create(user="alice", owner_id="alice", session_id="s1", component_id="demo")
        assert (created, created_again) == (True, False)
        assert again.pk == session.pk == "s1"
        assert again.user_id == "alice"

    def test_mints_an_id_when_none_is_given(self) -> None:
        session, created = session_get_or_create(user="alice", owner_id="alice", session_id=None)
        assert created and len(session.session_id) == 36

    def test_another_users_session_is_not_found_and_untouched(self) -> None:
        session_get_or_create(user="alice", owner_id="alice", session_id="s1")
        with pytest.raises(SessionNotFound, match="'s1' not found"):
            session_get_or_create(user="bob", owner_id="bob", session_id="s1")
        assert Session.all_users.get(pk="s1").user_id == "alice"

    def test_an_admin_scope_reaches_any_session(self) -> None:
        session_get_or_create(user="alice", owner_id="alice", session_id="s1")
        session, created = session_get_or_create(user=ALL_USERS, owner_id="root", session_id="s1")
        assert (session.user_id, created) == ("alice", False)

    def test_create_refuses_a_duplicate_id(self) -> None:
        session_create(session_id="dup", user_id="alice")
        with pytest.raises(SessionExists):
            session_create(session_id="dup", user_id="bob")


@pytest.mark.django_db
class TestRunCreate:
    def test_indexes_runs_in_order_and_names_the_session(self) -> None:
        session = make_session("alice", session_name="")
        runs = [make_run("alice", session=session, input={"input_content": f"message {i}"}) for i in range(3)]
        assert [run.run_index for run in runs] == [0, 1, 2]
        assert all(run.user_id == "alice" for run in runs)
        session.refresh_from_db()
        assert session.session_name == "message 0"
        assert session.next_run_index == 3

    def test_run_write_is_a_fixed_number_of_statements(self) -> None:
        session = make_session("alice")
        for _ in range(5):
            make_run("alice", session=session)
        with CaptureQueriesContext(connection) as early:
            make_run("alice", session=session)
        for _ in range(30):
            make_run("alice", session=session)
        with CaptureQueriesContext(connection) as late:
            make_run("alice", session=session)
        statements = [q["sql"].split()[0] for q in late.captured_queries]
        assert len(early.captured_queries) == len(late.captured_queries)
        assert "SELECT" not in statements, statements


@pytest.mark.django_db(transaction=True)
def test_concurrent_runs_on_one_session_get_distinct_indexes() -> None:
    session = make_session("alice")
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def start_runs() -> None:
        try:
            barrier.wait(timeout=10)
            for _ in range(5):
                run_create(session=session, input={"input_content": "x"})
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=start_runs) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    indexes = sorted(Run.objects.for_user("alice").filter(session=session).values_list("run_index", flat=True))
    assert indexes == list(range(20))


@pytest.mark.django_db
class TestRunTransition:
    def test_moves_only_from_the_expected_status(self) -> None:
        run = make_run("alice")
        assert run_transition(run_id=run.pk, expected=RunStatus.PENDING, to=RunStatus.RUNNING) is True
        assert run_transition(run_id=run.pk, expected=RunStatus.PENDING, to=RunStatus.RUNNING) is False
        assert run_transition(
            run_id=run.pk, expected=[RunStatus.RUNNING], to=RunStatus.ERROR, error="model unreachable"
        ) is True
        run.refresh_from_db()
        assert (run.status, run.error) == (RunStatus.ERROR, "model unreachable")
        assert run.started_at is not None and run.finished_at is not None


@pytest.mark.django_db
class TestHistory:
    def test_last_n_finished_top_level_runs_oldest_first(self) -> None:
        session = make_session("alice")
        statuses = [RunStatus.COMPLETED, RunStatus.ERROR, RunStatus.COMPLETED, RunStatus.PAUSED, RunStatus.COMPLETED, RunStatus.COMPLETED]
        for i, status in enumerate(statuses):
            make_run("alice", session=session, status=status, run_data={"n": i})
        make_run("alice", session=session, status=RunStatus.COMPLETED, parent_run_id="team-run", run_data={"n": "member"})

        assert run_history(user="alice", session_id=session.pk, limit=3) == [{"n": 2}, {"n": 4}, {"n": 5}]
        assert run_history(user="alice", session_id=session.pk, limit=0) == []
        assert run_history(user="bob", session_id=session.pk, limit=3) == []

    def test_reads_a_bounded_number_of_rows(self) -> None:
        session = make_session("alice")
        for i in range(40):
            make_run("alice", session=session, status=RunStatus.COMPLETED, run_data={"n": i})
        with CaptureQueriesContext(connection) as queries:
            history = run_history(user="alice", session_id=session.pk, limit=2)
        assert history == [{"n": 38}, {"n": 39}]
        assert len(queries.captured_queries) == 1
        assert "LIMIT 2" in queries.captured_queries[0]["sql"]

    def test_the_compiled_read_keeps_scope_exclusion_and_limit_apart(self) -> None:
        """One statement compiled per limit serves every caller: each still gets its own rows."""
        from core.tenancy import ALL_USERS

        mine, ownerless = make_session("alice"), make_session(None)
        runs = [make_run("alice", session=mine, status=RunStatus.COMPLETED, run_data={"n": i}) for i in range(4)]
        make_run(None, session=ownerless, status=RunStatus.COMPLETED, run_data={"n": "shared"})

        assert run_history(user="alice", session_id=mine.pk, limit=2) == [{"n": 2}, {"n": 3}]
        assert run_history(user="alice", session_id=mine.pk, limit=2, before=runs[3]) == [{"n": 1}, {"n": 2}]
        assert run_history(user="alice", session_id=mine.pk, limit=3) == [{"n": 1}, {"n": 2}, {"n": 3}]
        assert run_history(user="bob", session_id=mine.pk, limit=2) == []
        assert run_history(user=None, session_id=mine.pk, limit=2) == []  # ownerless rows only
        assert run_history(user=None, session_id=ownerless.pk, limit=2) == [{"n": "shared"}]
        assert run_history(user=ALL_USERS, session_id=mine.pk, limit=2) == [{"n": 2}, {"n": 3}]


@pytest.mark.django_db
def test_events_append_and_replay_after_an_index() -> None:
    run = make_run("alice")
    events = [{"event": name, "run_id": run.pk} for name in ("RunStarted", "RunContent", "RunCompleted")]
    run_events_append(run=run, events=events)
    replay = run_events_after(user="alice", run_id=run.pk, after_index=0)
    assert [(e.event_index, e.event, e.payload) for e in replay] == [
        (1, "RunContent", events[1]),
        (2, "RunCompleted", events[2]),
    ]
    assert run_events_after(user="bob", run_id=run.pk, after_index=None) == []


@pytest.mark.django_db
def test_run_get_is_scoped_and_checks_the_session() -> None:
    run = make_run("alice")
    assert run_get(user="alice", run_id=run.pk) == run
    assert run_get(user="alice", run_id=run.pk, session_id=run.session_id) == run
    assert run_get(user="alice", run_id=run.pk, session_id="other") is None
    assert run_get(user="bob", run_id=run.pk) is None
    assert run_get(user=ALL_USERS, run_id=run.pk) == run


@pytest.mark.django_db
class TestRunRecord:
    def record(self, owner: str | None, session_id: str, create_session: bool = True) -> Run:
        from sessions.services.runs import RunRecord, run_record

        return run_record(RunRecord(
            session_id=session_id, owner_id=owner, component_id="demo",
            run_id=f"r-{owner}-{session_id}", status=RunStatus.COMPLETED, input={"input_content": "hi"},
            output={"content": "hello", "metrics": {"input_tokens": 3, "output_tokens": 4}},
            events=[{"event": "RunStarted"}, {"event": "RunCompleted"}],
        ), create_session=create_session)

    def test_a_new_session_is_written_with_its_run_and_events_without_a_savepoint(self) -> None:
        with CaptureQueriesContext(connection) as captured:
            run = self.record("alice", "s1")
        # The owner's session count (the quota), then the session, the run, the events (one
        # executemany); no SAVEPOINT, no other SELECT.
        sql = [q["sql"] for q in captured.captured_queries]
        assert len(sql) == 4 and sql[0].startswith('SELECT COALESCE(MAX(sessions), 0) FROM "agno_session_counts"'), sql
        assert all("INSERT INTO" in statement for statement in sql[1:]), sql
        session = Session.all_users.get(pk="s1")
        assert (session.user_id, session.session_name, session.total_tokens, session.next_run_index) == ("alice", "hi", 7, 1)
        assert (run.run_index, run.user_id) == (0, "alice")
        assert list(run_events_after(user="alice", run_id=run.pk, after_index=None)) != []

    def test_a_session_created_meanwhile_by_the_same_owner_is_appended_to(self) -> None:
        self.record("alice", "s1")
        second = self.record_as("alice", "s1", run_id="r-2")
        assert second.run_index == 1
        assert Session.all_users.get(pk="s1").next_run_index == 2

    def test_a_session_taken_meanwhile_by_someone_else_is_not_written_to(self) -> None:
        self.record("alice", "s1")
        with pytest.raises(SessionNotFound), transaction.atomic():
            self.record_as("bob", "s1", run_id="r-bob")
        assert not Run.all_users.filter(pk="r-bob").exists()
        assert Session.all_users.get(pk="s1").next_run_index == 1
        with pytest.raises(SessionNotFound), transaction.atomic():
            self.record_as(None, "s1", run_id="r-open")

    def record_as(self, owner: str | None, session_id: str, *, run_id: str) -> Run:
        from sessions.services.runs import RunRecord, run_record

        # create_session=True: the caller's access check found no such session (it was created
        # between that check and this write).
        return run_record(RunRecord(
            session_id=session_id, owner_id=owner, component_id="demo", run_id=run_id,
            status=RunStatus.COMPLETED, input={"input_content": "again"}, output={"content": "ok"},
        ), create_session=True)


@pytest.mark.django_db
class TestRunFamilies:
    """A run and the runs made inside it (a team's members, a workflow's steps) are one write."""

    def member(self, run_id: str, tokens: int) -> Any:
        from sessions.services.runs import RunRecord

        return RunRecord(
            run_id=run_id, session_id="s-team", owner_id="alice", component_id=f"agent-{run_id}", status=RunStatus.COMPLETED,
            input={"input_content": "sub-task"}, output={"content": run_id, "metrics": {"input_tokens": tokens, "output_tokens": 0}},
            events=[{"event": "RunStarted"}, {"event": "RunCompleted"}],
        )

    def test_children_are_written_with_their_parent_in_one_transaction(self) -> None:
        from sessions.services.runs import RunRecord, run_record

        nested = self.member("m2", 3)
        nested = RunRecord(**{**nested.__dict__, "children": [self.member("m2a", 1)]})
        team = RunRecord(
            run_id="t1", session_id="s-team", owner_id="alice", component_id="team", session_type="team", status=RunStatus.COMPLETED,
            input={"input_content": "plan a trip"}, output={"content": "done", "metrics": {"input_tokens": 10, "output_tokens": 5}},
            children=[self.member("m1", 2), nested],
        )
        with CaptureQueriesContext(connection) as captured:
            run_record(team, create_session=True)
        assert not any("SAVEPOINT" in query["sql"] for query in captured.captured_queries)
        rows = {run.pk: run for run in Run.objects.for_user("alice").filter(session_id="s-team")}
        assert {pk: (run.run_index, run.parent_run_id) for pk, run in rows.items()} == {
            "t1": (0, None), "m1": (1, "t1"), "m2": (2, "t1"), "m2a": (3, "m2"),
        }
        session = Session.objects.for_user("alice").get(pk="s-team")
        assert (session.next_run_index, session.total_tokens, session.session_type) == (4, 21, "team")
        assert RunEvent.objects.for_user("alice").filter(run_id="m2a").count() == 2

    def test_a_failed_child_write_leaves_no_part_of_the_family(self) -> None:
        from sessions.services.runs import RunRecord, run_record

        run_record(self.member("taken", 1), create_session=True)
        team = RunRecord(
            run_id="t2", session_id="s-team", owner_id="alice", component_id="team", status=RunStatus.COMPLETED,
            input={"input_content": "again"}, children=[self.member("taken", 1)],
        )
        with pytest.raises(IntegrityError), transaction.atomic():
            run_record(team)
        assert not Run.objects.for_user("alice").filter(pk="t2").exists()
        assert Session.objects.for_user("alice").get(pk="s-team").next_run_index == 1

    def test_finishing_a_run_adds_the_children_it_made(self) -> None:
        from sessions.services.runs import RunRecord, run_finish, run_record

        begun = run_record(RunRecord(
            run_id="t3", session_id="s-team", owner_id="alice", component_id="team", status=RunStatus.RUNNING, input={"input_content": "go"},
        ), create_session=True)
        finished = RunRecord(
            run_id="t3", session_id="s-team", owner_id="alice", component_id="team", status=RunStatus.COMPLETED,
            output={"content": "ok", "metrics": {"input_tokens": 4, "output_tokens": 0}}, children=[self.member("m9", 6)],
        )
        run_finish(begun, finished)
        child = Run.objects.for_user("alice").get(pk="m9")
        assert (child.parent_run_id, child.run_index, child.status) == ("t3", 1, RunStatus.COMPLETED)
        session = Session.objects.for_user("alice").get(pk="s-team")
        assert (session.next_run_index, session.total_tokens, session.metrics["input_tokens"]) == (2, 10, 10)


@pytest.mark.django_db
class TestSessionQuota:
    def test_one_statement_reads_the_owners_count_and_refuses_at_the_limit(self, settings, django_assert_num_queries) -> None:
        from sessions.services.runs import SessionLimitReached, session_quota_check

        settings.MAX_SESSIONS_PER_USER = 3
        for _ in range(2):
            make_session("quota-user")
        make_session("someone-else")
        make_session(None)  # ownerless sessions are nobody's quota
        with django_assert_num_queries(1) as captured:
            session_quota_check(owner_id="quota-user")
        assert "agno_session_counts" in captured.captured_queries[0]["sql"]  # one row, not the owner's sessions
        make_session("quota-user")
        with pytest.raises(SessionLimitReached):
            session_quota_check(owner_id="quota-user")
        session_quota_check(owner_id="someone-else")
        with django_assert_num_queries(0):
            session_quota_check(owner_id=None)

    def test_a_run_that_would_create_a_session_over_the_limit_stores_nothing(self, settings) -> None:
        from sessions.services.runs import RunRecord, SessionLimitReached, run_record

        settings.MAX_SESSIONS_PER_USER = 2
        for _ in range(2):
            make_session("quota-user")
        record = RunRecord(run_id="r-over", session_id="s-over", owner_id="quota-user", component_id="agent", status=RunStatus.RUNNING)
        with pytest.raises(SessionLimitReached), transaction.atomic():
            run_record(record, create_session=True)
        assert not Session.all_users.filter(pk="s-over").exists()
        assert not Run.all_users.filter(pk="r-over").exists()
        # An existing session takes new runs whatever its owner's count.
        run_record(replace(record, session_id=Session.objects.for_user("quota-user").first().pk))
        assert Run.all_users.filter(pk="r-over").exists()
