"""Databases written by the real agno packages (tests/importer/make_fixtures.py ``write_full``): agno
2.x (every run in the sessions' blob), agno 3.x (``agno_runs``) and the 2.x file migrated by agno
3.x's own migration (both). Each imports every kind it holds, counted against the file itself, once,
read-only, per user; eval runs, metrics, knowledge contents and schedules included (issue 36 part 1)."""
from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from evals.models import EvalRun
from importer.extras import SCHEDULE_DISABLED
from importer.services import KINDS, agno_import
from knowledge.models import Content
from metrics.models import MetricsAggregate
from scheduler.models import Schedule, ScheduleRun
from sessions.models import Run, Session, UserMemory
from tests.factories import make_session
from tests.importer.counting import source_counts, source_runs
from tests.security.conftest import auth, jwt_server, token  # noqa: F401 (jwt_server: a fixture)

FIXTURES = Path(__file__).parent / "fixtures"
LAYOUTS = {"agno2.db": "2.x", "agno3_full.db": "3.x", "agno2_migrated.db": "2.x migrated by 3.x"}
pytestmark = pytest.mark.django_db


@pytest.fixture(params=sorted(LAYOUTS))
def written(request, tmp_path) -> tuple[Path, str]:
    copy = tmp_path / request.param
    shutil.copy(FIXTURES / request.param, copy)
    return copy, LAYOUTS[request.param]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_every_kind_is_counted_against_the_source_and_a_second_import_adds_nothing(written) -> None:
    path, layout = written
    before = digest(path)
    expected = source_counts(path)
    assert expected["sessions"] == 3 and expected["members"] == 1 and expected["steps"] == 2  # the generator's
    report = agno_import(str(path))
    assert report.layout == layout and not report.failures, report.lines()
    assert report.imported == expected
    # Every kind counted is in our tables under its owner.
    assert Session.all_users.count() == expected["sessions"]
    assert Run.all_users.filter(parent_run_id__isnull=True).count() == expected["runs"]
    assert Run.all_users.count() == expected["runs"] + expected["members"] + expected["steps"]
    assert UserMemory.all_users.count() == expected["memories"]
    assert EvalRun.all_users.count() == expected["evals"] == 1
    assert MetricsAggregate.all_users.count() == expected["metrics"]
    assert Content.all_users.count() == expected["knowledge"] == 2
    assert Schedule.all_users.count() == expected["schedules"] == 1
    assert ScheduleRun.all_users.count() == expected["schedule_runs"] == 1

    again = agno_import(str(path))
    assert again.imported == dict.fromkeys(KINDS, 0) and again.skipped == expected and not again.failures
    assert Run.all_users.count() == expected["runs"] + expected["members"] + expected["steps"]
    assert digest(path) == before  # opened read-only, never changed


def test_runs_keep_the_source_order_links_and_owners(written) -> None:
    path, _ = written
    agno_import(str(path))
    with sqlite3.connect(path) as conn:
        source = source_runs(conn)
    chat = list(Run.objects.for_user("carol").filter(session_id="s-carol-agent").order_by("run_index"))
    assert [run.input["input_content"] for run in chat] == ["What is 2+3?", "What did I ask?"]
    assert [run.content for run in chat] == ["2 + 3 = 5", "You asked about sums."]
    assert chat[0].run_data["tools"][0]["tool_name"] == "add" and chat[1].previous_run_id == chat[0].run_id
    # The whole source run is kept (its events become event rows of their own).
    for run in chat:
        kept = {key: value for key, value in source[run.run_id].items() if key != "events"}
        assert run.run_data == kept
    member, team = Run.objects.for_user("carol").filter(session_id="s-carol-team").order_by("run_index")
    assert (member.parent_run_id, team.run_type, team.parent_run_id) == (team.run_id, "team", None)
    flow = list(Run.objects.for_user("dave").filter(session_id="s-dave-flow").order_by("run_index"))
    assert [run.parent_run_id for run in flow] == [None, flow[0].run_id, flow[0].run_id]
    assert [run.content for run in flow[1:]] == ["Dogs bark", "Dogs bark loudly."]
    # One imported user sees none of another's.
    assert not Session.objects.for_user("dave").filter(session_id__startswith="s-carol").exists()
    assert list(UserMemory.objects.for_user("dave").values_list("memory", flat=True)) == ["Dave has a dog"]
    assert not UserMemory.objects.for_user("carol").exists()


def test_evals_knowledge_schedules_and_metrics_map_to_ours(written) -> None:
    path, layout = written
    agno_import(str(path))
    owner = None if layout.startswith("2.x") else "carol"  # agno 2.x has no owner on these tables
    evaluation = EvalRun.all_users.get(pk="ev-1")
    assert (evaluation.user_id, evaluation.eval_type, evaluation.name, evaluation.agent_id, evaluation.status) == (
        owner, "accuracy", "Sums", "adder", "completed")
    assert evaluation.score == 9.0 and evaluation.eval_input["expected_output"] == "5"
    assert evaluation.eval_data["results"][0]["reason"] == "right"

    url, file = Content.all_users.get(pk="kc-url"), Content.all_users.get(pk="kc-file")
    assert (url.user_id, url.source_type, url.url, url.status) == (owner, "url", "https://example.com/guide", "failed")
    assert "Refresh it" in url.status_message and url.metadata["topic"] == "guide" and url.metadata["agno"]["type"] == "url"
    assert (file.source_type, file.file_name, file.size) == ("upload", "notes.pdf", 3400) and "Upload it again" in file.status_message
    assert url.base.name == file.base.name == "Docs" and url.base.user_id == owner

    schedule = Schedule.all_users.get(pk="sch-1")
    assert (schedule.user_id, schedule.name, schedule.endpoint, schedule.cron_expr) == (owner, "daily sums", "/agents/adder/runs", "0 9 * * *")
    assert schedule.payload == {"message": "What is 2+3?"} and (schedule.timeout_seconds, schedule.max_retries) == (600, 1)
    assert not schedule.enabled and schedule.disabled_reason == SCHEDULE_DISABLED and schedule.grant is None
    fired = ScheduleRun.all_users.get(pk="sch-1-run-1")
    assert (fired.user_id, fired.schedule_id, fired.status, fired.status_code, fired.run_id, fired.attempt) == (
        owner, "sch-1", "success", 200, "r-scheduled", 1)
    assert fired.output == {"content": "5"} and fired.duration_ms == 2000 and fired.scheduled_for == fired.triggered_at

    with sqlite3.connect(path) as conn:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(agno_metrics)")}
        owner_column = "user_id" if "user_id" in columns else "''"  # 2.x metrics rows have no owner
        rows = conn.execute(f"SELECT {owner_column}, date, agent_runs_count, users_count FROM agno_metrics ORDER BY 1").fetchall()
    ours = sorted(MetricsAggregate.all_users.values_list("user_id", "date", "agent_runs_count", "users_count"), key=lambda r: r[0] or "")
    assert [(user or None, day, runs, users) for user, day, runs, users in rows] == [(u, d.isoformat(), r, n) for u, d, r, n in ours]


def test_a_malformed_eval_or_schedule_is_reported_by_id_and_skipped(tmp_path) -> None:
    path = tmp_path / "agno.db"
    shutil.copy(FIXTURES / "agno3_full.db", path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE agno_eval_runs SET eval_data = '{broken' WHERE run_id = 'ev-1'")
        conn.execute("UPDATE agno_schedules SET name = '' WHERE id = 'sch-1'")
    report = agno_import(str(path))
    assert (report.failed["evals"], report.failed["schedules"], report.imported["knowledge"]) == (1, 1, 2)
    reasons = {(kind, source_id): reason for kind, source_id, reason, _ in report.failures}
    assert {failure.users for failure in report.failures} == {("carol",)}  # whose rows they are
    assert "eval_data is not JSON" in reasons[("evals", "ev-1")] and "no name" in reasons[("schedules", "sch-1")]
    assert not EvalRun.all_users.exists() and not Schedule.all_users.exists()
    # The schedule's fire has no schedule here to belong to: reported, not written.
    assert "its schedule sch-1 is not here" in reasons[("schedule_runs", "sch-1-run-1")] and not ScheduleRun.all_users.exists()
    assert "failed eval run ev-1: eval_data is not JSON" in "\n".join(report.lines())


def test_a_colliding_user_keeps_their_evals_knowledge_and_schedules_out_too(tmp_path) -> None:
    path = tmp_path / "agno.db"
    shutil.copy(FIXTURES / "agno3_full.db", path)
    make_session("carol")  # a native carol here, who may be someone else
    report = agno_import(str(path))
    assert report.colliding_users == ["carol"]
    assert report.imported["evals"] == report.imported["knowledge"] == report.imported["schedules"] == 0
    assert report.skipped["knowledge"] == 2 and not Content.all_users.exists()
    merged = agno_import(str(path), merge_users=["carol"])
    assert merged.imported["evals"] == 1 and merged.imported["knowledge"] == 2 and merged.imported["schedules"] == 1


def _pg_value(value, declared: str):
    if value is None:
        return None
    if declared == "JSON":
        from psycopg.types.json import Jsonb

        decoded = json.loads(value)
        if isinstance(decoded, str) and decoded[:1] in ("{", "["):  # 2.x SQLite's second layer; PostgresDb stores one
            decoded = json.loads(decoded)
        return Jsonb(decoded)
    if declared == "BOOLEAN":
        return bool(value)
    return value


@pytest.fixture
def postgres_written(settings, written):
    """The fixture file's tables in a PostgreSQL database of their own, as agno's PostgresDb lays
    them out (schema ``ai``, JSONB, BOOLEAN, DATE). Needs the tests' PostgreSQL."""
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        pytest.skip("the PostgreSQL source is built on the tests' PostgreSQL server: run with DATABASE_URL=postgres://...")
    import psycopg

    path, layout = written
    db = settings.DATABASES["default"]
    base = f"postgresql://{db['USER']}{':' + db['PASSWORD'] if db.get('PASSWORD') else ''}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
    name = f"{db['NAME']}_agno_versions"[:63]
    with psycopg.connect(f"{base}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    url = f"{base}/{name}"
    types = {"JSON": "JSONB", "BIGINT": "BIGINT", "BOOLEAN": "BOOLEAN", "DATE": "DATE"}
    with sqlite3.connect(path) as lite, psycopg.connect(url, autocommit=True) as pg:
        pg.execute("CREATE SCHEMA ai")
        for (table,) in lite.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            columns = [(row[1], row[2]) for row in lite.execute(f"PRAGMA table_info({table})")]
            ddl = ", ".join(f"{column} {types.get(declared, 'TEXT')}" for column, declared in columns)
            pg.execute(f"CREATE TABLE ai.{table} ({ddl})")
            names = [c for c, _ in columns]
            for values in lite.execute(f"SELECT {', '.join(names)} FROM {table}").fetchall():
                pg.execute(f"INSERT INTO ai.{table} ({', '.join(names)}) VALUES ({', '.join(['%s'] * len(names))})",
                           [_pg_value(value, declared) for value, (_, declared) in zip(values, columns)])
    yield url, source_counts(path), layout
    with psycopg.connect(f"{base}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_postgresql_source_of_each_layout_imports_the_same_counts_once(postgres_written) -> None:
    url, expected, layout = postgres_written
    report = agno_import(url)
    assert report.layout == layout and not report.failures, report.lines()
    assert report.imported == expected
    assert Content.all_users.get(pk="kc-url").url == "https://example.com/guide"
    assert agno_import(url).skipped == expected


@pytest.mark.django_db(transaction=True)
def test_agentos_client_reads_what_each_layout_imported_as_agentos_would(live_api, written) -> None:
    """Agno's own AgentOSClient, against a live server, parses the imported sessions, runs (the team's
    member, the workflow's steps) and memories, whichever agno wrote them."""
    from agno.db.base import SessionType as AgnoSessionType
    from agno.os.schema import AgentSessionDetailSchema, RunSchema, TeamRunSchema, WorkflowRunSchema

    from tests.api.test_sessions_conformance import drive

    path, layout = written
    agno_import(str(path))
    unowned_eval = layout.startswith("2.x")  # agno 2.x's eval rows have no owner: an open server's caller reads them

    async def scenario(client):
        return [
            await client.get_session("s-carol-agent", user_id="carol"),
            await client.get_session_runs("s-carol-agent", user_id="carol"),
            await client.get_session_runs("s-carol-team", session_type=AgnoSessionType.TEAM, user_id="carol"),
            await client.get_session_runs("s-dave-flow", session_type=AgnoSessionType.WORKFLOW, user_id="dave"),
            await client.list_memories(user_id="dave"),
            await client.get_eval_run("ev-1") if unowned_eval else None,
        ]

    chat, chat_runs, team_runs, flow_runs, memories, evaluation = drive(scenario, live_api)
    assert isinstance(chat, AgentSessionDetailSchema) and chat.agent_id == "adder"
    assert [(m["role"], m["content"]) for m in chat.chat_history if m["role"] in ("user", "assistant") and m.get("content")] == [
        ("user", "What is 2+3?"), ("assistant", "2 + 3 = 5"), ("user", "What did I ask?"), ("assistant", "You asked about sums.")]
    assert [type(run) for run in chat_runs] == [RunSchema, RunSchema] and chat_runs[0].tools[0]["tool_name"] == "add"
    assert [type(run) for run in team_runs] == [RunSchema, TeamRunSchema] and team_runs[0].parent_run_id == team_runs[1].run_id
    assert type(flow_runs[0]) is WorkflowRunSchema and flow_runs[0].content == "Dogs bark loudly."
    assert [memory.memory for memory in memories.data] == ["Dave has a dog"]
    if unowned_eval:
        assert evaluation.id == "ev-1" and evaluation.eval_type.value == "accuracy" and evaluation.eval_data["avg_score"] == 9.0


@pytest.mark.django_db(transaction=True)
def test_imported_evals_knowledge_and_schedules_are_their_owners_only(client, jwt_server) -> None:
    """Over the API, carol reads her imported eval run, contents and schedule; dave gets the same
    404 as for a missing id."""
    agno_import(str(FIXTURES / "agno3_full.db"))
    for path in ("/eval-runs/ev-1", "/knowledge/content/kc-url", "/schedules/sch-1"):
        mine = client.get(path, **auth(token("carol")))
        assert mine.status_code == 200, (path, mine.content)
        assert client.get(path, **auth(token("dave"))).status_code == 404, path
    assert client.get("/schedules/sch-1", **auth(token("carol"))).json()["enabled"] is False
    assert client.get("/knowledge/content/kc-url/status", **auth(token("carol"))).json()["status"] == "failed"
