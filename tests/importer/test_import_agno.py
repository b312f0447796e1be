"""``manage.py import_agno``: an Agno database written by agno's own storage classes
(tests/importer/make_fixtures.py, committed as fixtures/agno3.db) imports losslessly, once, read-only,
per user; the 2.x blob and the half-migrated layouts give the same rows (issue 36 part 1)."""
from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from importer.services import agno_import
from sessions.models import Run, RunEvent, Session, UserMemory
from tests.factories import make_session
from tests.importer.counting import source_counts
from tests.importer.make_fixtures import EXPECTED, EXPECTED_REAL
from tests.security.conftest import auth, jwt_server, token  # noqa: F401 (jwt_server: a fixture)

FIXTURE = Path(__file__).parent / "fixtures" / "agno3.db"
REAL_FIXTURE = Path(__file__).parent / "fixtures" / "agno3_real.db"
pytestmark = pytest.mark.django_db


@pytest.fixture
def source(tmp_path) -> Path:
    copy = tmp_path / "agno.db"
    shutil.copy(FIXTURE, copy)
    return copy


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def all_runs() -> list[Run]:
    return list(Run.all_users.order_by("session_id", "run_index"))


def to_v2(path: Path, *, keep_runs_table: bool) -> None:
    """Give the file the 2.x blob: ``agno_sessions.runs`` as 2.x SQLite writes it (a JSON string
    holding the JSON list, in run order), with the runs table dropped (2.x) or kept (half-migrated)."""
    with sqlite3.connect(path) as conn:
        conn.execute("ALTER TABLE agno_sessions ADD COLUMN runs JSON")
        for (session_id,) in conn.execute("SELECT session_id FROM agno_sessions").fetchall():
            runs = [json.loads(data) for (data,) in conn.execute(
                "SELECT run_data FROM agno_runs WHERE session_id = ? ORDER BY run_index", (session_id,))]
            conn.execute("UPDATE agno_sessions SET runs = ? WHERE session_id = ?", (json.dumps(json.dumps(runs)), session_id))
        # 2.x SQLite encodes every session JSON cell twice (a JSON string holding the JSON).
        for column in ("session_data", "agent_data", "team_data", "workflow_data", "metadata", "summary"):
            conn.execute(f"UPDATE agno_sessions SET {column} = json_quote({column}) WHERE {column} IS NOT NULL")
        if not keep_runs_table:
            conn.execute("DROP TABLE agno_runs")


class TestImportAgno3:
    def test_the_counts_match_the_source_and_every_run_keeps_its_place(self, source) -> None:
        before = digest(source)
        report = agno_import(str(source))
        assert report.layout == "3.x"
        assert report.imported == EXPECTED == source_counts(source)
        assert not any(report.failed.values()) and not report.failures
        assert digest(source) == before

        assert [(r.session_id, r.run_index, r.run_id, r.parent_run_id, r.run_type, r.user_id) for r in all_runs()] == [
            ("s-alice-agent", 0, "r-a1", None, "agent", "alice"),
            ("s-alice-agent", 1, "r-a2", None, "agent", "alice"),
            ("s-alice-team", 0, "r-t1-m", "r-t1", "agent", "alice"),
            ("s-alice-team", 1, "r-t1", None, "team", "alice"),
            ("s-bob-agent", 0, "r-b1", None, "agent", "bob"),
            ("s-bob-flow", 0, "r-w1", None, "workflow", "bob"),
            ("s-bob-flow", 1, "r-w1-s1", "r-w1", "agent", "bob"),
            ("s-bob-flow", 2, "r-w1-s2", "r-w1", "agent", "bob"),
        ]
        # An imported conversation is one branch: each top-level run follows the one before it.
        assert [(r.run_id, r.previous_run_id) for r in all_runs() if r.session_id == "s-alice-agent"] == [("r-a1", None), ("r-a2", "r-a1")]
        tool_run = Run.objects.for_user("alice").get(pk="r-a2")
        assert tool_run.input == {"input_content": "Weather?"} and tool_run.content == "It is sunny"
        assert tool_run.status == "COMPLETED" and tool_run.total_tokens == 15 and tool_run.model == "gpt-4o-mini"
        assert tool_run.run_data["tools"][0]["tool_name"] == "get_weather"
        assert tool_run.run_data["metrics"]["details"]["model"][0]["id"] == "gpt-4o-mini"
        assert tool_run.created_at.timestamp() == 1_790_000_002
        assert list(RunEvent.objects.for_user("alice").filter(run_id="r-a2").order_by("event_index").values_list("event", flat=True)) == [
            "RunStarted", "ToolCallCompleted", "RunCompleted"]
        workflow = Run.objects.for_user("bob").get(pk="r-w1")
        assert workflow.input == {"input_content": "Write about dogs"} and workflow.run_data["input"] == "Write about dogs"

        session = Session.objects.for_user("alice").get(pk="s-alice-agent")
        assert (session.session_type, session.component_id, session.session_name) == ("agent", "helper", "Weather chat")
        assert session.session_state == {"city": "Paris"} and session.summary is None and session.metadata is None
        assert session.component_data["name"] == "Helper" and session.next_run_index == 2
        # The fixture stores no session metrics: they are the runs' summed, per model too.
        assert session.total_tokens == 30 and session.metrics["total_tokens"] == 30
        assert session.metrics["details"]["model"][0]["id"] == "gpt-4o-mini"
        assert Session.objects.for_user("bob").get(pk="s-bob-flow").metadata == {}

        memory = UserMemory.objects.for_user("alice").get(pk="mem-a2")
        assert (memory.memory, memory.topics, memory.topics_key) == ("Alice likes cats", ["pets", "preferences"], ",pets,preferences,")

    def test_a_second_import_adds_nothing(self, source) -> None:
        agno_import(str(source))
        rows = (Session.all_users.count(), Run.all_users.count(), RunEvent.all_users.count(), UserMemory.all_users.count())
        again = agno_import(f"sqlite:///{source}")
        assert not any(again.imported.values()) and not any(again.failed.values())
        assert again.skipped == EXPECTED
        assert (Session.all_users.count(), Run.all_users.count(), RunEvent.all_users.count(), UserMemory.all_users.count()) == rows

    def test_a_run_added_to_the_source_since_is_appended_once(self, source) -> None:
        agno_import(str(source))
        with sqlite3.connect(source) as conn:
            conn.execute(
                "INSERT INTO agno_runs (run_id, session_id, run_type, agent_id, user_id, status, run_index, run_data, created_at) "
                "VALUES ('r-b2', 's-bob-agent', 'agent', 'helper', 'bob', 'COMPLETED', 1, ?, 1790000050)",
                (json.dumps({"run_id": "r-b2", "agent_id": "helper", "input": {"input_content": "Again"}, "content": "Again, bob",
                            "metrics": {"input_tokens": 4, "output_tokens": 1, "total_tokens": 5}}),),
            )
        report = agno_import(str(source))
        assert report.imported["runs"] == 1 and report.skipped["runs"] == EXPECTED["runs"]
        assert list(Run.objects.for_user("bob").filter(session_id="s-bob-agent").order_by("run_index").values_list("run_id", "run_index", "previous_run_id")) == [
            ("r-b1", 0, None), ("r-b2", 1, "r-b1")]  # one branch: the appended run follows the last one
        assert Session.objects.for_user("bob").get(pk="s-bob-agent").total_tokens == 15 + 5  # r-b2's tokens added

    def test_the_source_file_is_opened_read_only(self, source) -> None:
        source.chmod(0o444)
        before, mtime = digest(source), source.stat().st_mtime_ns
        assert agno_import(str(source)).imported == EXPECTED
        assert digest(source) == before and source.stat().st_mtime_ns == mtime
        assert sorted(path.name for path in source.parent.iterdir()) == ["agno.db"]  # no journal, WAL or shm left

    def test_a_malformed_row_is_reported_by_id_and_its_session_is_not_half_written(self, source) -> None:
        with sqlite3.connect(source) as conn:
            conn.execute("UPDATE agno_runs SET run_data = '{not json' WHERE run_id = 'r-w1'")
            conn.execute("UPDATE agno_memories SET topics = '[broken' WHERE memory_id = 'mem-b1'")
            conn.execute("UPDATE agno_sessions SET summary = '{\"summary\": ' WHERE session_id = 's-alice-team'")
        report = agno_import(str(source))
        assert report.failed["sessions"] == 2 and report.failed["memories"] == 1
        assert [(kind, source_id, users) for kind, source_id, _, users in report.failures] == [
            ("sessions", "s-alice-team", ("alice",)), ("sessions", "s-bob-flow", ("bob",)), ("memories", "mem-b1", ("bob",))]
        assert "summary" in report.failures[0].reason and "r-w1" in report.failures[1].reason
        assert [line.split(":")[0] for line in report.lines() if line.startswith("failed")] == [
            "failed session s-alice-team", "failed session s-bob-flow", "failed memory mem-b1"]
        assert not Session.all_users.filter(pk="s-alice-team").exists() and not Run.all_users.filter(session_id="s-alice-team").exists()
        assert not Session.all_users.filter(pk="s-bob-flow").exists()
        assert not Run.all_users.filter(session_id="s-bob-flow").exists()
        assert not UserMemory.all_users.filter(pk="mem-b1").exists()
        assert report.imported["sessions"] == EXPECTED["sessions"] - 2 and report.imported["memories"] == EXPECTED["memories"] - 1

    def test_a_run_whose_session_is_missing_is_reported(self, source) -> None:
        with sqlite3.connect(source) as conn:
            conn.execute(
                "INSERT INTO agno_runs (run_id, session_id, run_type, agent_id, user_id, status, run_index, run_data, created_at) "
                "VALUES ('r-lost', 's-gone', 'agent', 'helper', 'bob', 'COMPLETED', 0, '{}', 1790000050)"
            )
        report = agno_import(str(source))
        assert report.failed["runs"] == 1 and report.failures == [
            ("runs", "r-lost", "its session s-gone is not in the source's sessions table", ("bob",))]
        assert report.imported == EXPECTED and not Run.all_users.filter(pk="r-lost").exists()

    def test_a_user_id_that_is_already_ours_is_reported_and_not_merged_unless_asked(self, source) -> None:
        make_session("alice", session_id="native-alice")
        report = agno_import(str(source))
        assert report.colliding_users == ["alice"]
        assert any("alice" in line and "--merge-user" in line for line in report.lines())
        assert list(Session.objects.for_user("alice").values_list("pk", flat=True)) == ["native-alice"]
        assert not UserMemory.objects.for_user("alice").exists()
        assert Session.objects.for_user("bob").count() == 2  # bob does not collide

        merged = agno_import(str(source), merge_users=["alice"])
        assert merged.colliding_users == [] and merged.imported["sessions"] == 2 and merged.imported["memories"] == 2
        assert Session.objects.for_user("alice").count() == 3
        # alice still holds a native session, so a later import says so again; bob, whose rows all
        # came from an import, never collides with himself.
        again = agno_import(str(source))
        assert again.colliding_users == ["alice"] and not any(again.imported.values())

    def test_an_unowned_agno_session_stays_unowned_and_imports_once(self, source) -> None:
        with sqlite3.connect(source) as conn:
            conn.execute("UPDATE agno_sessions SET user_id = NULL WHERE session_id = 's-bob-agent'")
            conn.execute("UPDATE agno_runs SET user_id = NULL WHERE session_id = 's-bob-agent'")
        assert agno_import(str(source)).imported == EXPECTED
        assert Session.all_users.get(pk="s-bob-agent").user_id is None
        assert list(Run.all_users.filter(session_id="s-bob-agent").values_list("user_id", flat=True)) == [None]
        again = agno_import(str(source))
        assert not any(again.imported.values()) and not again.failures

    def test_a_session_id_held_by_another_user_fails_that_session(self, source) -> None:
        make_session("carol", session_id="s-bob-agent")
        report = agno_import(str(source))
        # The failure names the source row's owner and the holder here (an erasure of either anonymises it).
        assert ("sessions", "s-bob-agent", ("bob", "carol")) in [(kind, source_id, users) for kind, source_id, _, users in report.failures]
        assert Session.all_users.get(pk="s-bob-agent").user_id == "carol"
        assert not Run.all_users.filter(session_id="s-bob-agent").exists()

    def test_the_command_prints_the_report(self, source) -> None:
        out = StringIO()
        call_command("import_agno", str(source), stdout=out)
        text = out.getvalue()
        assert "Agno 3.x layout" in text
        assert f"{'sessions':14}{4:>10}{0:>10}{0:>10}" in text and f"{'steps':14}{2:>10}{0:>10}{0:>10}" in text
        with pytest.raises(CommandError, match="No such SQLite file"):
            call_command("import_agno", str(source.parent / "missing.db"))
        with pytest.raises(CommandError, match="Unsupported database URL"):
            call_command("import_agno", "mysql://somewhere/db")


def test_runs_agno_itself_made_import_with_their_order_members_and_events(tmp_path) -> None:
    source = tmp_path / "real.db"
    shutil.copy(REAL_FIXTURE, source)
    report = agno_import(str(source))
    assert report.imported == EXPECTED_REAL == source_counts(source) and not report.failures
    with sqlite3.connect(source) as conn:
        order = conn.execute("SELECT session_id, run_index, run_id, parent_run_id, status FROM agno_runs ORDER BY session_id, run_index").fetchall()
        events = sum(len(json.loads(data).get("events") or []) for (data,) in conn.execute("SELECT run_data FROM agno_runs"))
    assert [(r.session_id, r.run_index, r.run_id, r.parent_run_id, r.status) for r in all_runs()] == order
    assert RunEvent.objects.for_user("carol").count() == events > 0
    first, second = Run.objects.for_user("carol").filter(session_id="s-carol-agent").order_by("run_index")
    assert (first.input, first.content, first.total_tokens > 0) == ({"input_content": "What is 2+3?"}, "2 + 3 = 5", True)
    assert [tool["tool_name"] for tool in first.run_data["tools"]] == ["add"] and second.content == "You asked about sums."
    team_run = Run.objects.for_user("carol").get(session_id="s-carol-team", parent_run_id=None)
    assert (team_run.run_type, team_run.component_id, team_run.content) == ("team", "crew", "Here is a haiku")
    assert Run.objects.for_user("carol").get(parent_run_id=team_run.run_id).component_id == "writer"
    assert agno_import(str(source)).skipped == EXPECTED_REAL


class TestOtherLayouts:
    def test_agno_2_blob_only_gives_the_same_rows(self, source, tmp_path) -> None:
        agno_import(str(source))
        expected = [(r.session_id, r.run_index, r.run_id, r.parent_run_id, r.content) for r in all_runs()]
        Run.all_users.all().delete()
        Session.all_users.all().delete()
        UserMemory.all_users.all().delete()
        from importer.models import ImportedRecord
        ImportedRecord.all_users.all().delete()

        to_v2(source, keep_runs_table=False)
        report = agno_import(str(source))
        assert report.layout == "2.x" and report.imported == EXPECTED and not report.failures
        assert [(r.session_id, r.run_index, r.run_id, r.parent_run_id, r.content) for r in all_runs()] == expected
        session = Session.objects.for_user("alice").get(pk="s-alice-agent")
        assert (session.session_name, session.session_state, session.metadata) == ("Weather chat", {"city": "Paris"}, None)
        assert session.component_data["name"] == "Helper" and Session.objects.for_user("bob").get(pk="s-bob-flow").metadata == {}

    def test_half_migrated_the_table_wins_the_blob_fills_gaps_nothing_twice(self, source) -> None:
        to_v2(source, keep_runs_table=True)
        with sqlite3.connect(source) as conn:
            # A run only in the blob (the migration never copied it), and a table copy newer than the blob's.
            conn.execute("DELETE FROM agno_runs WHERE run_id = 'r-a1'")
            data = json.loads(conn.execute("SELECT run_data FROM agno_runs WHERE run_id = 'r-a2'").fetchone()[0])
            conn.execute("UPDATE agno_runs SET run_data = ? WHERE run_id = 'r-a2'", (json.dumps({**data, "content": "It is sunny (table)"}),))
        report = agno_import(str(source))
        assert report.layout == "2.x migrated by 3.x" and report.imported == EXPECTED and not report.failures
        assert list(Run.objects.for_user("alice").filter(session_id="s-alice-agent").order_by("run_index").values_list("run_id", "content")) == [
            ("r-a1", "Hi alice"), ("r-a2", "It is sunny (table)")]


@pytest.mark.django_db(transaction=True)
class TestImportedChatsOverTheApi:
    def test_an_imported_chat_opens_as_agentos_lists_it_and_users_stay_apart(self, client, jwt_server, source) -> None:
        agno_import(str(source))
        listed = client.get("/sessions/s-alice-agent/runs", {"type": "agent"}, **auth(token("alice")))
        assert listed.status_code == 200, listed.content
        runs = listed.json()
        assert [run["run_id"] for run in runs] == ["r-a1", "r-a2"]
        assert runs[0]["run_input"] == "Hello" and runs[0]["content"] == "Hi alice"
        assert runs[1]["tools"][0]["tool_name"] == "get_weather"
        assert [event["event"] for event in runs[1]["events"]] == ["RunStarted", "ToolCallCompleted", "RunCompleted"]

        team = client.get("/sessions/s-alice-team/runs", {"type": "team"}, **auth(token("alice"))).json()
        assert [(run["run_id"], run["parent_run_id"], run["run_input"]) for run in team] == [
            ("r-t1-m", "r-t1", "Research cats"), ("r-t1", "", "Tell me about cats")]
        assert team[0]["agent_id"] == "researcher" and team[1]["team_id"] == "crew"

        flow = client.get("/sessions/s-bob-flow/runs", {"type": "workflow"}, **auth(token("bob"))).json()
        # The workflow run, then its steps as child runs (as our own workflows store them).
        assert [(run["run_id"], run.get("parent_run_id")) for run in flow] == [("r-w1", None), ("r-w1-s1", "r-w1"), ("r-w1-s2", "r-w1")]
        assert flow[0]["run_input"] == "Write about dogs" and len(flow[0]["step_executor_runs"]) == 2

        # bob sees none of alice's: not her chat, not her sessions, not her memories.
        assert client.get("/sessions/s-alice-agent/runs", {"type": "agent"}, **auth(token("bob"))).status_code == 404
        bob_sessions = client.get("/sessions", {"type": "agent"}, **auth(token("bob"))).json()["data"]
        assert [s["session_id"] for s in bob_sessions] == ["s-bob-agent"]
        memories = client.get("/memories", **auth(token("bob"))).json()["data"]
        assert [m["memory_id"] for m in memories] == ["mem-b1"]


@pytest.fixture
def postgres_source(settings, source):
    """The fixture's rows in a PostgreSQL database of their own, as agno's PostgresDb lays them out:
    schema ``ai``, JSON columns as JSONB (one encoding layer). Needs the tests' PostgreSQL."""
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        pytest.skip("the PostgreSQL source is built on the tests' PostgreSQL server: run with DATABASE_URL=postgres://...")
    import psycopg

    db = settings.DATABASES["default"]
    base = f"postgresql://{db['USER']}{':' + db['PASSWORD'] if db.get('PASSWORD') else ''}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
    name = f"{db['NAME']}_agno_src"[:63]
    with psycopg.connect(f"{base}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    url = f"{base}/{name}"
    json_columns = {"session_data", "agent_data", "team_data", "workflow_data", "metadata", "summary", "run_data", "memory", "topics"}
    with sqlite3.connect(source) as lite, psycopg.connect(url, autocommit=True) as pg:
        pg.execute("CREATE SCHEMA ai")
        for table in ("agno_sessions", "agno_runs", "agno_memories"):
            columns = [(row[1], row[2]) for row in lite.execute(f"PRAGMA table_info({table})")]
            ddl = ", ".join(f'"{c}" {"JSONB" if c in json_columns else ("BIGINT" if t == "BIGINT" else "VARCHAR")}' for c, t in columns)
            pg.execute(f"CREATE TABLE ai.{table} ({ddl})")
            names = [c for c, _ in columns]
            for values in lite.execute(f"SELECT {', '.join(names)} FROM {table}"):
                pg.execute(f"INSERT INTO ai.{table} ({', '.join(names)}) VALUES ({', '.join(['%s'] * len(names))})", values)
    yield url
    with psycopg.connect(f"{base}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_postgresql_source_imports_the_same_rows_read_only(postgres_source) -> None:
    import psycopg

    def snapshot() -> list:
        with psycopg.connect(postgres_source) as pg:
            return [pg.execute(f"SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM ai.{table} t").fetchone()
                    for table in ("agno_sessions", "agno_runs", "agno_memories")]

    before = snapshot()
    report = agno_import(postgres_source)
    assert report.layout == "3.x" and report.imported == EXPECTED and not report.failures
    assert "@" not in report.source  # the report names the database, not its credentials
    assert Run.objects.for_user("alice").get(pk="r-a2").run_data["tools"][0]["result"] == "sunny"
    assert agno_import(postgres_source).skipped == EXPECTED
    assert snapshot() == before


def test_the_postgresql_connection_refuses_writes(postgres_source) -> None:
    from importer.sources import open_source

    opened = open_source(postgres_source)
    try:
        with pytest.raises(Exception, match="read-only"):
            opened.connection.execute("DELETE FROM ai.agno_memories")
    finally:
        opened.close()


def test_agentos_client_reads_imported_sessions_as_agentos_would(live_api, source) -> None:
    """Agno's own AgentOSClient, against a live server, parses every imported session and its runs."""
    from agno.db.base import SessionType as AgnoSessionType
    from agno.os.schema import AgentSessionDetailSchema, RunSchema, TeamRunSchema, WorkflowRunSchema, WorkflowSessionDetailSchema

    from tests.api.test_sessions_conformance import drive

    agno_import(str(source))

    async def scenario(client):
        return [
            await client.get_session("s-alice-agent", user_id="alice"),
            await client.get_session_runs("s-alice-agent", user_id="alice"),
            await client.get_session_runs("s-alice-team", session_type=AgnoSessionType.TEAM, user_id="alice"),
            await client.get_session("s-bob-flow", user_id="bob"),
            await client.get_session_runs("s-bob-flow", session_type=AgnoSessionType.WORKFLOW, user_id="bob"),
        ]

    chat, chat_runs, team_runs, flow, flow_runs = drive(scenario, live_api)
    assert isinstance(chat, AgentSessionDetailSchema) and chat.session_name == "Weather chat"
    assert [(m["role"], m["content"]) for m in chat.chat_history] == [
        ("user", "Hello"), ("assistant", "Hi alice"), ("user", "Weather?"), ("assistant", "It is sunny")]
    assert [(type(r), r.run_id, r.content) for r in chat_runs] == [(RunSchema, "r-a1", "Hi alice"), (RunSchema, "r-a2", "It is sunny")]
    assert [(type(r), r.run_id) for r in team_runs] == [(RunSchema, "r-t1-m"), (TeamRunSchema, "r-t1")]
    assert isinstance(flow, WorkflowSessionDetailSchema) and flow.workflow_id == "pipeline"
    assert type(flow_runs[0]) is WorkflowRunSchema and flow_runs[0].run_id == "r-w1"
