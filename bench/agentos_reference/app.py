"""AgentOS 3.1.10 with one agent, served by uvicorn: the reference side of bench.compare.

Runs in the throw-away venv that setup.sh builds, never the project's:

    /tmp/agentos-bench-venv/bin/python bench/agentos_reference/app.py --port 18901 \\
        --model-base-url http://127.0.0.1:18900/v1 [--db-url postgresql+psycopg://...] \\
        [--seed-sessions 10000 [--seed-only]] [--broadcast-team] [--parallel-workflow]

Without --db-url the database is a SQLite file in a fresh temporary folder (--db-file to choose).
--seed-sessions N first inserts N finished one-run sessions through Agno's own DB API, so
``GET /sessions`` can be measured on a table of known size without N model round trips.
--broadcast-team also serves bench.team_broadcast's team (bench/team_agents.py's twin): ``bench-team``,
``TeamMode.broadcast``, a leader on model ``bench-leader`` and three members on ``bench-member-1..3``.
--parallel-workflow also serves bench.workflow_parallel's workflow (bench/workflow_agents.py's twin):
``bench-workflow``, a function step, a ``Parallel`` of four agents on ``bench-branch-1..4``, a function step.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid

os.environ.setdefault("AGNO_TELEMETRY", "false")

from agno.agent import Agent  # noqa: E402
from agno.db.utils import build_single_run_row  # noqa: E402
from agno.models.openai import OpenAIChat  # noqa: E402
from agno.os import AgentOS  # noqa: E402
from agno.session import AgentSession  # noqa: E402
from agno.team import Team, TeamMode  # noqa: E402
from agno.workflow import Parallel, Step, StepInput, StepOutput, Workflow  # noqa: E402

AGENT_ID = "bench-agent"
ANSWER = "Hello from the fake LLM. This is a short answer."
MODEL = {"id": "gpt-4o-mini", "name": "OpenAIChat", "provider": "OpenAI"}


def make_db(args: argparse.Namespace):
    if args.db_url:
        from agno.db.postgres import PostgresDb

        return PostgresDb(db_url=args.db_url)
    from agno.db.sqlite import SqliteDb

    db_file = args.db_file or os.path.join(tempfile.mkdtemp(prefix="agentos-bench-"), "agentos.sqlite3")
    print(f"AgentOS database: {db_file}", flush=True)
    return SqliteDb(db_file=db_file)


def seeded_run(*, session_id: str, user_id: str, created_at: int, index: int) -> dict:
    """A finished run shaped like the RunOutput.to_dict() of a real run against the fake model."""
    question = f"Seeded question number {index}"
    metrics = {"input_tokens": 20, "output_tokens": 10, "total_tokens": 30, "duration": 0.01}
    return {
        "run_id": str(uuid.uuid4()),
        "agent_id": AGENT_ID,
        "agent_name": "Bench Agent",
        "session_id": session_id,
        "user_id": user_id,
        "content": ANSWER,
        "content_type": "str",
        "model": MODEL["id"],
        "model_provider": MODEL["provider"],
        "status": "COMPLETED",
        "created_at": created_at,
        "input": {"input_content": question},
        "metrics": metrics,
        "messages": [
            {"id": str(uuid.uuid4()), "role": "user", "content": question, "from_history": False,
             "stop_after_tool_call": False, "created_at": created_at},
            {"id": str(uuid.uuid4()), "role": "assistant", "content": ANSWER, "from_history": False,
             "stop_after_tool_call": False, "created_at": created_at, "metrics": metrics},
        ],
    }


def seed_sessions(db, count: int, user_id: str, batch: int = 1000) -> None:
    started = time.perf_counter()
    runs_table = db._get_table(table_type="runs", create_table_if_not_found=True)
    now = int(time.time())
    for offset in range(0, count, batch):
        sessions, rows = [], []
        for index in range(offset, min(offset + batch, count)):
            session_id = str(uuid.uuid4())
            created_at = now - count + index
            run = seeded_run(session_id=session_id, user_id=user_id, created_at=created_at, index=index)
            sessions.append(
                AgentSession(
                    session_id=session_id,
                    agent_id=AGENT_ID,
                    user_id=user_id,
                    session_data={"session_state": {}, "session_metrics": run["metrics"]},
                    agent_data={"name": "Bench Agent", "agent_id": AGENT_ID, "model": MODEL},
                    created_at=created_at,
                    updated_at=created_at,
                )
            )
            rows.append(build_single_run_row(run, session_id=session_id, user_id=user_id, run_index=0))
        db.upsert_sessions(sessions, deserialize=False, preserve_updated_at=True)
        # One multi-row insert per batch: upsert_run() would be one transaction per run.
        with db.Session() as sess, sess.begin():
            sess.execute(runs_table.insert(), rows)
    print(f"seeded {count} sessions in {time.perf_counter() - started:.1f} s", flush=True)


def broadcast_team(db, model_base_url: str) -> Team:
    def model(model_id: str) -> OpenAIChat:
        return OpenAIChat(id=model_id, base_url=model_base_url, api_key="bench")

    members = [
        Agent(id=f"bench-member-{n}", name=f"Member {n}", model=model(f"bench-member-{n}"), db=db, telemetry=False)
        for n in (1, 2, 3)
    ]
    return Team(id="bench-team", name="Bench Team", mode=TeamMode.broadcast, model=model("bench-leader"),
                members=members, db=db, telemetry=False)


def prepare(step_input: StepInput) -> StepOutput:
    return StepOutput(content=f"Answer in one short paragraph: {step_input.input}")


def combine(step_input: StepInput) -> StepOutput:
    return StepOutput(content=f"Combined the branches' answers ({len(str(step_input.get_last_step_content()))} characters)")


def parallel_workflow(db, model_base_url: str) -> Workflow:
    branches = [
        Step(name=f"branch-{n}", agent=Agent(id=f"bench-branch-{n}", name=f"Branch {n}", db=db, telemetry=False,
                                             model=OpenAIChat(id=f"bench-branch-{n}", base_url=model_base_url, api_key="bench")))
        for n in (1, 2, 3, 4)
    ]
    return Workflow(id="bench-workflow", name="Bench Workflow", db=db, telemetry=False,
                    steps=[prepare, Parallel(*branches, name="branches"), combine])


def build_app(db, model_base_url: str, with_team: bool = False, with_workflow: bool = False):
    agent = Agent(
        id=AGENT_ID,
        name="Bench Agent",
        model=OpenAIChat(id="gpt-4o-mini", base_url=model_base_url, api_key="bench"),
        db=db,
        add_history_to_context=True,
        num_history_runs=3,
        telemetry=False,
    )
    teams = [broadcast_team(db, model_base_url)] if with_team else None
    workflows = [parallel_workflow(db, model_base_url)] if with_workflow else None
    return AgentOS(id="agentos-bench", agents=[agent], teams=teams, workflows=workflows, db=db, telemetry=False).get_app()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=18901)
    parser.add_argument("--model-base-url", default="http://127.0.0.1:18900/v1")
    parser.add_argument("--db-url", help="PostgreSQL SQLAlchemy URL; default: a SQLite file")
    parser.add_argument("--db-file", help="SQLite file (default: in a fresh temporary folder)")
    parser.add_argument("--seed-sessions", type=int, default=0, metavar="N")
    parser.add_argument("--seed-user", default="bench-user")
    parser.add_argument("--seed-only", action="store_true", help="seed, then exit without serving")
    parser.add_argument("--broadcast-team", action="store_true", help="also serve bench.team_broadcast's team")
    parser.add_argument("--parallel-workflow", action="store_true", help="also serve bench.workflow_parallel's workflow")
    args = parser.parse_args()

    db = make_db(args)
    if args.seed_sessions:
        seed_sessions(db, args.seed_sessions, args.seed_user)
    if args.seed_only:
        return
    import uvicorn

    uvicorn.run(build_app(db, args.model_base_url, args.broadcast_team, args.parallel_workflow), host=args.host, port=args.port, workers=1,
                access_log=False, log_level="warning")


if __name__ == "__main__":
    main()
