"""The platform's own cost per run, in process, with a model that answers instantly.

Drives the same service every transport uses (``run_prepare``, then the one async execute
through its sync facade, ``run_execute_here``) for an agent on the offline model with history
on (3 runs), in one long session, and reports CPU per run, runs per second, latency percentiles, SQL statements per run and transactions per run, and on
PostgreSQL the CPU of the server's backend process for the connection (when it runs on this host).

    .venv/bin/python -m bench.inprocess_runs sqlite|postgres [--runs 500]

AgentOS 3.1.10 for scale (issue 3): about 30 ms of server CPU per non-streamed run, 12 SQL
statements and 5 commits, re-reading the whole session every time. Target: <= 7.5 ms of CPU per
run, one transaction for a run's writes, history reads bounded by num_history_runs.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

from ._django import bench_database, setup
from .http_load import cpu_seconds


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def database_server_clock(connection):
    """CPU seconds so far of the PostgreSQL backend serving ``connection`` (from /proc), or a
    clock that reads None elsewhere (SQLite runs in this process and is counted in its CPU)."""
    if connection.vendor != "postgresql":
        return lambda: None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]

    def read() -> float | None:
        try:
            return cpu_seconds(pid)
        except OSError:  # the server is on another host
            return None

    return read


def measure(backend: str, runs: int) -> dict:
    with bench_database(backend) as url:
        os.environ["AGENT_MODULES"] = "bench.inprocess_agents"
        setup(url)
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        from agents.pipeline.execution import run_execute_here
        from agents.pipeline.runs import RunRequest, run_prepare
        from core.auth import Principal

        principal = Principal(user_id="bench-user", isolated=True, via="session")

        def one(session_id: str | None, message: str) -> dict:
            prepared = run_prepare(principal=principal, component_id="bench", request=RunRequest(message=message, session_id=session_id, stream=False), kind="agent")
            return run_execute_here(prepared)

        first = one(None, "warm up")
        session_id = first["session_id"]
        for index in range(20):  # a session with history, and warm caches
            one(session_id, f"warm {index}")

        server = database_server_clock(connection)
        server_started = server()
        cpu, wall = [], []
        for index in range(runs):
            started_cpu, started_wall = time.process_time(), time.perf_counter()
            output = one(session_id, f"question {index}")
            cpu.append(time.process_time() - started_cpu)
            wall.append(time.perf_counter() - started_wall)
            assert output["status"] == "COMPLETED", output
        server_ended = server()
        server_cpu = server_ended - server_started if server_ended is not None and server_started is not None else None
        with CaptureQueriesContext(connection) as queries:
            one(session_id, "counted")
        statements = [query["sql"] for query in queries.captured_queries]
        # Django logs an executemany (a run's events) as "<n> times: INSERT ...".
        verbs = [re.sub(r"^\d+ times: ", "", sql).split()[0].upper() for sql in statements]
        writes = [verb for verb in verbs if verb in ("INSERT", "UPDATE", "DELETE")]
        # SQLite logs BEGIN; psycopg opens transactions implicitly and logs only the COMMIT.
        transactions = sum(1 for sql in statements if sql.upper().startswith(("BEGIN", "COMMIT"))) // (2 if any(sql.upper().startswith("BEGIN") for sql in statements) else 1)
        return {
            "backend": backend,
            "runs": runs,
            "session_length_at_end": runs + 22,
            "cpu_ms_per_run_median": round(statistics.median(cpu) * 1000, 3),
            "cpu_ms_per_run_mean": round(statistics.fmean(cpu) * 1000, 3),
            "runs_per_second": round(runs / sum(wall), 1),
            "latency_ms_p50": round(percentile(wall, 0.50) * 1000, 3),
            "latency_ms_p99": round(percentile(wall, 0.99) * 1000, 3),
            # PostgreSQL's own CPU for this connection's backend process (same machine).
            "database_server_cpu_ms_per_run": round(server_cpu * 1000 / runs, 3) if server_cpu is not None else None,
            "sql_statements_per_run": len(statements),
            "write_statements_per_run": len(writes),
            "transactions_per_run": transactions,
            "statements": [sql[:120] for sql in statements],
        }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("backend", choices=["sqlite", "postgres"])
    parser.add_argument("--runs", type=int, default=500)
    args = parser.parse_args()
    result = measure(args.backend, args.runs)
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / f"inprocess_runs_{args.backend}.json").write_text(json.dumps(result, indent=2) + "\n")
    json.dump({k: v for k, v in result.items() if k != "statements"}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
