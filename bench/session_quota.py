"""What a run in a new session costs as its owner's sessions grow toward MAX_SESSIONS_PER_USER.

Every run that starts a session checks its owner's quota first. In process, on the offline model
(``bench.inprocess_agents``), one owner: ``--runs`` runs each in a new session at each level of
sessions the owner already holds (the levels are filled between them with one bulk INSERT),
reporting the CPU per run (this process; on PostgreSQL all of PostgreSQL's too, when it runs here).

    .venv/bin/python -m bench.session_quota sqlite|postgres [--runs 500] [--levels 0,2500,5000,7500,9500]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from ._django import bench_database, setup
from .http_load import CLOCK_TICKS


def postgres_cpu_seconds() -> float | None:
    """CPU seconds of every PostgreSQL process on this host so far, the backends that exited
    included (the postmaster's waited-for children), or None where none runs here. The runs'
    database work is on the run threads' connections, so no one backend holds it all."""
    total, found = 0.0, False
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                text = stat.read()
        except OSError:
            continue  # gone meanwhile
        name = text[text.index("(") + 1:text.rindex(")")]
        if not name.startswith("postgres"):
            continue
        fields = text.rpartition(")")[2].split()
        found = True
        total += (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
        parent = int(fields[1])
        try:
            with open(f"/proc/{parent}/stat") as stat:
                parent_name = stat.read().split("(", 1)[1].rsplit(")", 1)[0]
        except OSError:
            parent_name = ""
        if not parent_name.startswith("postgres"):  # the postmaster: its exited children too
            total += (int(fields[13]) + int(fields[14])) / CLOCK_TICKS
    return total if found else None


def measure(backend: str, runs: int, levels: list[int]) -> dict:
    with bench_database(backend, name="agno_site_bench_quota") as url:
        os.environ["AGENT_MODULES"] = "bench.inprocess_agents"
        os.environ["MAX_SESSIONS_PER_USER"] = str(max(levels) + runs * len(levels) + 100)
        setup(url)
        from django.db import connection

        from agents.pipeline.execution import run_execute_here
        from agents.pipeline.runs import RunRequest, run_prepare
        from core.auth import Principal
        from core.tenancy import unscoped
        from sessions.models import Session

        owner = "bench-user"
        principal = Principal(user_id=owner, isolated=True, via="session")

        def one(message: str) -> None:
            prepared = run_prepare(principal=principal, component_id="bench", request=RunRequest(message=message, stream=False), kind="agent")
            assert run_execute_here(prepared)["status"] == "COMPLETED"

        for index in range(50):  # warm caches
            one(f"warm {index}")
        server = postgres_cpu_seconds if connection.vendor == "postgresql" else (lambda: None)
        rows = []
        for level in levels:
            with unscoped("the benchmark counts its one owner's sessions"):
                held = Session.all_users.filter(user_id=owner).count()
                if level > held:
                    Session.all_users.bulk_create(
                        [Session(session_id=f"filler-{level}-{n}", user_id=owner, component_id="bench") for n in range(level - held)], batch_size=1000,
                    )
                held = Session.all_users.filter(user_id=owner).count()
            if connection.vendor == "postgresql":  # the seeding's autovacuum is not the runs' cost
                with connection.cursor() as cursor:
                    cursor.execute("VACUUM ANALYZE agno_sessions")
            for index in range(50):
                one(f"warm {level} {index}")
            cpu = []
            server_started = server()
            started = time.perf_counter()
            for index in range(runs):
                before = time.process_time()
                one(f"question {index}")
                cpu.append(time.process_time() - before)
            wall = time.perf_counter() - started
            server_ended = server()
            rows.append({
                "sessions_held_at_start": held,
                "cpu_ms_per_run_median": round(statistics.median(cpu) * 1000, 3),
                "cpu_ms_per_run_mean": round(statistics.fmean(cpu) * 1000, 3),
                "runs_per_second": round(runs / wall, 1),
                "database_server_cpu_ms_per_run": round((server_ended - server_started) * 1000 / runs, 3) if server_started is not None and server_ended is not None else None,
            })
            print(json.dumps(rows[-1]), file=sys.stderr)
        return {"backend": backend, "runs_per_level": runs, "levels": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("backend", choices=["sqlite", "postgres"])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--levels", default="0,2500,5000,7500,9500")
    parser.add_argument("--out", default=None, help="result file name in bench/results (default session_quota_<backend>.json)")
    args = parser.parse_args()
    result = measure(args.backend, args.runs, [int(level) for level in args.levels.split(",")])
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / (args.out or f"session_quota_{args.backend}.json")).write_text(json.dumps(result, indent=2) + "\n")
    json.dump(result, sys.stdout)
    print()


if __name__ == "__main__":
    main()
