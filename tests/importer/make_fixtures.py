"""Write a small Agno 3.x SQLite database through agno's own storage classes (``SqliteDb``), so its
encodings (JSON columns, ``'null'`` text, run rows with ``parent_run_id``, workflow step runs nested
in ``step_executor_runs``) are agno's, not ours.

    PYTHONPATH=<a directory holding sqlalchemy> python -m tests.importer.make_fixtures tests/importer/fixtures

(agno's SQL adapters need SQLAlchemy, which the project does not depend on: install it into a scratch
directory, ``pip install --target /tmp/sa sqlalchemy``. The tests read the committed file.)

Contents (the counts the tests assert, ``EXPECTED``): alice has an agent session (two runs, one with
a tool call and stored events) and a team session (one team run with one member run); bob has a
workflow session (one workflow run with two step runs) and an agent session; alice has two
memories, bob one.
"""
from __future__ import annotations

import sqlite3
import sys

NONE_ELSE = {"evals": 0, "metrics": 0, "knowledge": 0, "schedules": 0, "schedule_runs": 0, "learnings": 0}  # tables these two fixtures do not have
EXPECTED = {"sessions": 4, "runs": 5, "members": 1, "steps": 2, "memories": 3, **NONE_ELSE}

T0 = 1_790_000_000


def _metrics(inp: int, out: int) -> dict:
    return {"input_tokens": inp, "output_tokens": out, "total_tokens": inp + out, "duration": 0.5,
            "details": {"model": [{"id": "gpt-4o-mini", "provider": "OpenAI", "input_tokens": inp, "output_tokens": out, "total_tokens": inp + out}]}}


def _messages(question: str, answer: str, at: int) -> list[dict]:
    return [
        {"id": f"m-sys-{at}", "role": "system", "content": "You are helpful.", "created_at": at, "from_history": False},
        {"id": f"m-user-{at}", "role": "user", "content": question, "created_at": at, "from_history": False},
        {"id": f"m-asst-{at}", "role": "assistant", "content": answer, "created_at": at, "from_history": False},
    ]


def agent_run(run_id: str, session_id: str, user_id: str, question: str, answer: str, at: int, *, agent_id: str = "helper", **extra) -> dict:
    run = {
        "run_id": run_id, "agent_id": agent_id, "agent_name": agent_id.title(), "session_id": session_id, "user_id": user_id,
        "input": {"input_content": question}, "content": answer, "content_type": "str", "model": "gpt-4o-mini",
        "model_provider": "OpenAI", "created_at": at, "status": "COMPLETED", "metrics": _metrics(10, 5),
        "messages": _messages(question, answer, at),
    }
    run.update(extra)
    return run


EXPECTED_REAL = {"sessions": 2, "runs": 3, "members": 1, "steps": 0, "memories": 0, **NONE_ELSE}


def _compact(path: str) -> None:
    """agno 3.x leaves the file in WAL mode: fold the log in, then vacuum with small pages, so the
    committed fixture is one small file."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode=DELETE")
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA page_size=512")
    conn.execute("VACUUM")
    conn.close()


def write_real(path: str) -> None:
    """Runs made by agno itself (``Agent``/``Team`` on the fake OpenAI server): carol's agent chat of
    two turns (a tool call, then a streamed answer with stored events) and a team run that delegates
    to a member. ``EXPECTED_REAL`` counts it. The run ids are agno's uuids."""
    from agno.agent import Agent
    from agno.db.sqlite import SqliteDb
    from agno.models.openai import OpenAIChat
    from agno.team import Team

    from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    with FakeOpenAIServer() as server:
        def model() -> OpenAIChat:
            return OpenAIChat(id="gpt-4o-mini", base_url=server.base_url, api_key="fake")

        db = SqliteDb(db_file=path)
        agent = Agent(id="adder", name="Adder", model=model(), db=db, tools=[add], store_events=True)
        server.push(Reply(tool_calls=[Call("add", {"a": 2, "b": 3})]), Reply(text="2 + 3 = 5"))
        agent.run("What is 2+3?", user_id="carol", session_id="s-carol-agent")
        server.push(Reply(text="You asked about sums."))
        for _ in agent.run("What did I ask?", user_id="carol", session_id="s-carol-agent", stream=True):
            pass
        team = Team(id="crew", name="Crew", members=[Agent(id="writer", name="Writer", model=model())], model=model(), db=db)
        server.push(Reply(tool_calls=[Call("delegate_task_to_member", {"member_id": "writer", "task": "write a haiku"})]),
                    Reply(text="a haiku"), Reply(text="Here is a haiku"))
        team.run("Write a haiku", user_id="carol", session_id="s-carol-team")
        db.db_engine.dispose()
    _compact(path)


def write(path: str) -> None:
    from agno.db.schemas.memory import UserMemory
    from agno.db.sqlite import SqliteDb
    from agno.session.agent import AgentSession
    from agno.session.team import TeamSession
    from agno.session.workflow import WorkflowSession

    db = SqliteDb(db_file=path)
    model = {"id": "gpt-4o-mini", "provider": "OpenAI", "name": "OpenAIChat"}

    # alice: an agent chat of two turns; the second ran a tool and kept its events.
    db.upsert_session(AgentSession(
        session_id="s-alice-agent", agent_id="helper", user_id="alice", created_at=T0,
        agent_data={"name": "Helper", "agent_id": "helper", "model": model},
        session_data={"session_name": "Weather chat", "session_state": {"city": "Paris"}},
        summary=None,
    ))
    db.upsert_run(agent_run("r-a1", "s-alice-agent", "alice", "Hello", "Hi alice", T0 + 1), session_id="s-alice-agent", user_id="alice", run_index=0)
    tool = {"tool_call_id": "call-1", "tool_name": "get_weather", "tool_args": {"city": "Paris"}, "tool_call_error": False,
            "result": "sunny", "metrics": {"start_time": T0 + 2.1, "end_time": T0 + 2.2, "duration": 0.1}, "created_at": T0 + 2}
    events = [
        {"event": "RunStarted", "created_at": T0 + 2, "agent_id": "helper", "run_id": "r-a2", "session_id": "s-alice-agent"},
        {"event": "ToolCallCompleted", "created_at": T0 + 2, "agent_id": "helper", "run_id": "r-a2", "session_id": "s-alice-agent", "tool": tool},
        {"event": "RunCompleted", "created_at": T0 + 3, "agent_id": "helper", "run_id": "r-a2", "session_id": "s-alice-agent", "content": "It is sunny"},
    ]
    db.upsert_run(agent_run("r-a2", "s-alice-agent", "alice", "Weather?", "It is sunny", T0 + 2, tools=[tool], events=events),
                  session_id="s-alice-agent", user_id="alice", run_index=1)

    # alice: a team session; the member's run is its own row (parent_run_id), stored before the team's.
    db.upsert_session(TeamSession(
        session_id="s-alice-team", team_id="crew", user_id="alice", created_at=T0 + 10,
        team_data={"name": "Crew", "team_id": "crew", "model": model}, session_data={"session_state": {}},
    ))
    member = agent_run("r-t1-m", "s-alice-team", "alice", "Research cats", "Cats purr", T0 + 11, agent_id="researcher", parent_run_id="r-t1")
    db.upsert_run(member, session_id="s-alice-team", user_id="alice", run_index=0)
    db.upsert_run({
        "run_id": "r-t1", "team_id": "crew", "team_name": "Crew", "session_id": "s-alice-team", "user_id": "alice",
        "input": {"input_content": "Tell me about cats"}, "content": "Cats purr.", "content_type": "str", "model": "gpt-4o-mini",
        "model_provider": "OpenAI", "created_at": T0 + 11, "status": "COMPLETED", "metrics": _metrics(20, 8),
        "messages": _messages("Tell me about cats", "Cats purr.", T0 + 11),
        "tools": [{"tool_call_id": "call-d", "tool_name": "delegate_task_to_member", "tool_args": {"member_id": "researcher", "task": "Research cats"},
                   "result": "Cats purr", "child_run_id": None, "created_at": T0 + 11}],
        "member_responses": [member],
    }, session_id="s-alice-team", user_id="alice", run_index=1)

    # bob: a workflow of two agent steps; the step runs exist only inside the workflow run.
    db.upsert_session(WorkflowSession(
        session_id="s-bob-flow", workflow_id="pipeline", user_id="bob", created_at=T0 + 20, metadata={},
        workflow_data={"workflow_id": "pipeline", "name": "Pipeline", "steps": [{"name": "draft", "type": "Step"}, {"name": "polish", "type": "Step"}]},
        session_data={"session_state": {}},
    ))
    steps = [
        agent_run("r-w1-s1", "s-bob-flow", "bob", "Write about dogs", "Dogs bark", T0 + 21, agent_id="drafter", parent_run_id="r-w1", workflow_step_id="st-1"),
        agent_run("r-w1-s2", "s-bob-flow", "bob", "Dogs bark", "Dogs bark loudly.", T0 + 22, agent_id="polisher", parent_run_id="r-w1", workflow_step_id="st-2"),
    ]
    db.upsert_run({
        "run_id": "r-w1", "workflow_id": "pipeline", "workflow_name": "Pipeline", "session_id": "s-bob-flow", "user_id": "bob",
        "input": "Write about dogs", "content": "Dogs bark loudly.", "content_type": "str", "created_at": T0 + 21, "status": "COMPLETED",
        "metrics": {"steps": {"draft": {"step_name": "draft", "executor_type": "agent", "executor_name": "drafter", "metrics": _metrics(10, 5)}}, "duration": 1.0},
        "step_results": [{"step_name": "draft", "step_id": "st-1", "step_type": "Step", "executor_type": "agent", "executor_name": "drafter", "step_run_id": "r-w1-s1", "content": "Dogs bark", "success": True},
                         {"step_name": "polish", "step_id": "st-2", "step_type": "Step", "executor_type": "agent", "executor_name": "polisher", "step_run_id": "r-w1-s2", "content": "Dogs bark loudly.", "success": True}],
        "step_executor_runs": steps, "metadata": {},
    }, session_id="s-bob-flow", user_id="bob", run_index=0)

    # bob: an agent chat of one turn.
    db.upsert_session(AgentSession(
        session_id="s-bob-agent", agent_id="helper", user_id="bob", created_at=T0 + 30,
        agent_data={"name": "Helper", "agent_id": "helper", "model": model}, session_data={"session_state": {}},
    ))
    db.upsert_run(agent_run("r-b1", "s-bob-agent", "bob", "Hi", "Hello bob", T0 + 31), session_id="s-bob-agent", user_id="bob", run_index=0)

    for memory_id, user_id, text, topics in (
        ("mem-a1", "alice", "Alice lives in Paris", ["location"]),
        ("mem-a2", "alice", "Alice likes cats", ["pets", "preferences"]),
        ("mem-b1", "bob", "Bob has a dog", ["pets"]),
    ):
        db.upsert_user_memory(UserMemory(memory=text, memory_id=memory_id, topics=topics, user_id=user_id, input=text,
                                         agent_id="helper", created_at=T0 + 40, updated_at=T0 + 40))
    db.db_engine.dispose()
    _compact(path)




# -- the same small database written by agno 2.x, by agno 3.x, and a 2.x one migrated by 3.x ----------
#
# ``write_full`` drives agno's own Agent, Team and Workflow on the fake OpenAI server and agno's own
# storage calls for the rest, so it runs unchanged under agno 2.x (every run in the sessions'
# ``runs`` blob) and 3.x (``agno_runs``). Regenerate all three (agno 2.x and 3.x in scratch venvs,
# never in the project's):
#
#     python3 -m venv /tmp/agno2 && /tmp/agno2/bin/pip install 'agno==2.*' sqlalchemy openai
#     PYTHONPATH=. /tmp/agno2/bin/python -m tests.importer.make_fixtures tests/importer/fixtures 2
#     pip install --target /tmp/sa sqlalchemy
#     PYTHONPATH=/tmp/sa .venv/bin/python -m tests.importer.make_fixtures tests/importer/fixtures 3
#     PYTHONPATH=/tmp/sa .venv/bin/python -m tests.importer.make_fixtures tests/importer/fixtures migrate
#     PYTHONPATH=/tmp/sa .venv/bin/python -m tests.importer.make_fixtures tests/importer/fixtures learnings
#
# (the last adds agno 3.x's learnings to agno3_full.db, ``add_learnings``; a venv with agno 3.x and
# sqlalchemy does as well: ``PYTHONPATH=. /path/to/venv/bin/python -m ...``)
#
# The tests count every kind against the source file itself, so nothing here is a hard-coded result.


def write_full(path: str) -> None:
    """carol: an agent chat of two turns (a tool call, then a streamed answer with stored events)
    and a team run delegating to a member; dave: a workflow of two agent steps and a memory; an
    eval run, two knowledge contents (a URL and a file), the metrics agno computes, a schedule and
    one of its fires."""
    from agno.agent import Agent
    from agno.db.schemas.evals import EvalRunRecord, EvalType
    from agno.db.schemas.knowledge import KnowledgeRow
    from agno.db.schemas.memory import UserMemory
    from agno.db.sqlite import SqliteDb
    from agno.models.openai import OpenAIChat
    from agno.team import Team
    from agno.workflow import Step, Workflow

    from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    db = SqliteDb(db_file=path)
    with FakeOpenAIServer() as server:
        def model() -> OpenAIChat:
            return OpenAIChat(id="gpt-4o-mini", base_url=server.base_url, api_key="fake")

        agent = Agent(id="adder", name="Adder", model=model(), db=db, tools=[add], store_events=True)
        server.push(Reply(tool_calls=[Call("add", {"a": 2, "b": 3})]), Reply(text="2 + 3 = 5"))
        agent.run("What is 2+3?", user_id="carol", session_id="s-carol-agent")
        server.push(Reply(text="You asked about sums."))
        for _ in agent.run("What did I ask?", user_id="carol", session_id="s-carol-agent", stream=True):
            pass
        team = Team(id="crew", name="Crew", members=[Agent(id="writer", name="Writer", model=model())], model=model(), db=db)
        server.push(Reply(tool_calls=[Call("delegate_task_to_member", {"member_id": "writer", "task": "write a haiku"})]),
                    Reply(text="a haiku"), Reply(text="Here is a haiku"))
        team.run("Write a haiku", user_id="carol", session_id="s-carol-team")
        flow = Workflow(id="pipeline", name="Pipeline", db=db, steps=[
            Step(name="draft", agent=Agent(id="drafter", name="Drafter", model=model())),
            Step(name="polish", agent=Agent(id="polisher", name="Polisher", model=model())),
        ])
        server.push(Reply(text="Dogs bark"), Reply(text="Dogs bark loudly."))
        flow.run("Write about dogs", user_id="dave", session_id="s-dave-flow")

    db.upsert_user_memory(UserMemory(memory="Dave has a dog", memory_id="mem-d1", topics=["pets"], user_id="dave", input="I have a dog"))
    db.create_eval_run(EvalRunRecord(
        run_id="ev-1", eval_type=EvalType.ACCURACY, name="Sums", agent_id="adder", model_id="gpt-4o-mini", model_provider="OpenAI",
        eval_input={"input": "What is 2+3?", "expected_output": "5", "num_iterations": 1},
        eval_data={"avg_score": 9.0, "mean_score": 9.0, "results": [{"input": "What is 2+3?", "output": "5", "score": 9, "reason": "right"}]},
    ))
    owned = {"user_id": "carol"} if "user_id" in KnowledgeRow.model_fields else {}
    db.upsert_knowledge_content(KnowledgeRow(
        id="kc-url", name="https://example.com/guide", description="The guide", type="url", size=1200, linked_to="Docs",
        status="completed", metadata={"topic": "guide"}, created_at=T0, updated_at=T0, **owned,
    ))
    db.upsert_knowledge_content(KnowledgeRow(
        id="kc-file", name="notes.pdf", description="Notes", type="pdf", size=3400, linked_to="Docs", status="completed",
        created_at=T0, updated_at=T0, **owned,
    ))
    schedule = {
        "id": "sch-1", "name": "daily sums", "description": "Every morning", "method": "POST", "endpoint": "/agents/adder/runs",
        "payload": {"message": "What is 2+3?"}, "cron_expr": "0 9 * * *", "timezone": "UTC", "timeout_seconds": 600,
        "max_retries": 1, "retry_delay_seconds": 30, "enabled": True, "next_run_at": T0 + 3600, "created_at": T0, "updated_at": T0,
    }
    if hasattr(db, "update_eval_run_user_id"):  # 3.x: evals and schedules have owners
        db.update_eval_run_user_id("ev-1", "carol")
        schedule["user_id"] = "carol"
    db.create_schedule(schedule)
    fired = {
        "id": "sch-1-run-1", "schedule_id": "sch-1", "attempt": 1, "triggered_at": T0 + 3600, "completed_at": T0 + 3602,
        "status": "success", "status_code": 200, "run_id": "r-scheduled", "session_id": "s-scheduled", "error": None,
        "input": {"message": "What is 2+3?"}, "output": {"content": "5"}, "created_at": T0 + 3600,
    }
    if "user_id" in schedule:
        fired["user_id"] = "carol"
    db.create_schedule_run(fired)
    db.calculate_metrics()
    db.db_engine.dispose()
    _compact(path)


def add_learnings(path: str) -> None:
    """What agno 3.x's learning stores write, added to a written database (``agno_learnings``),
    through agno's own stores: carol's memories (``UserMemoryStore``) and profile
    (``UserProfileStore``), an entity under ``namespace="user"`` (``EntityMemoryStore``, on agno
    3.x's user-scoped key) and one under ``global``, a decision of the adder's
    (``DecisionLogStore``); and dave's entity as a pre-v3 application wrote it (``upsert_learning``
    on the old shared key ``entity_user_<type>_<id>``), which the import re-keys."""
    from agno.db.sqlite import SqliteDb
    from agno.learn.config import DecisionLogConfig, EntityMemoryConfig, UserMemoryConfig, UserProfileConfig
    from agno.learn.schemas import DecisionLog, UserProfile
    from agno.learn.stores import DecisionLogStore, EntityMemoryStore, UserMemoryStore, UserProfileStore

    db = SqliteDb(db_file=path)
    UserMemoryStore(config=UserMemoryConfig(db=db)).add_memory(user_id="carol", memory="Carol likes sums", agent_id="adder")
    UserProfileStore(config=UserProfileConfig(db=db)).save(user_id="carol", profile=UserProfile(user_id="carol", name="Carol"), agent_id="adder")
    for namespace, fact in (("user", "uses PostgreSQL"), ("global", "makes rockets")):
        EntityMemoryStore(config=EntityMemoryConfig(db=db, namespace=namespace)).remember_about(
            entity="Acme", entity_type="company", facts=[fact], user_id="carol", agent_id="adder",
        )
    DecisionLogStore(config=DecisionLogConfig(db=db)).save(DecisionLog(
        id="dec_fixture1", decision="Used the add tool", reasoning="The user asked for a sum", decision_type="tool_selection",
        session_id="s-carol-agent", user_id="carol", agent_id="adder",
    ))
    legacy = {"entity_id": "initech", "entity_type": "company", "name": "Initech", "namespace": "user", "user_id": "dave",
              "facts": [{"id": "f1", "content": "makes TPS reports"}], "events": [], "relationships": []}
    db.upsert_learning(id="entity_user_company_initech", learning_type="entity_memory", content=legacy, user_id="dave",
                       namespace="user", entity_id="initech", entity_type="company")
    db.db_engine.dispose()
    _compact(path)


def migrate(source: str, path: str) -> None:
    """A copy of the 2.x file migrated by agno 3.x's own migration (runs copied into ``agno_runs``,
    the legacy ``runs`` column kept)."""
    import asyncio
    import shutil

    from agno.db.migrations.manager import MigrationManager
    from agno.db.sqlite import SqliteDb

    shutil.copy(source, path)
    db = SqliteDb(db_file=path)
    asyncio.run(MigrationManager(db).up())
    db.db_engine.dispose()
    _compact(path)


def main(directory: str, which: str = "") -> None:
    if which == "2":
        write_full(f"{directory}/agno2.db")
    elif which == "3":
        write_full(f"{directory}/agno3_full.db")
    elif which == "learnings":
        add_learnings(f"{directory}/agno3_full.db")
    elif which == "migrate":
        migrate(f"{directory}/agno2.db", f"{directory}/agno2_migrated.db")
    else:  # the two first fixtures, agno 3.x
        write(f"{directory}/agno3.db")
        write_real(f"{directory}/agno3_real.db")


if __name__ == "__main__":
    # python -m tests.importer.make_fixtures tests/importer/fixtures [2|3|migrate]
    main(*sys.argv[1:3])
