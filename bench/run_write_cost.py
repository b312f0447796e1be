"""Does writing a run cost the same whatever the session's length?

Appends 1,000 finished runs (realistic run_data, ten events each) to one session and compares
the median write time of runs 1-50 with runs 951-1,000. Target: ratio <= 1.2.

    .venv/bin/python -m bench.run_write_cost sqlite|postgres [--runs 1000]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from ._django import bench_database, setup


def run_data(index: int) -> dict:
    return {
        "run_id": f"run-{index}",
        "agent_id": "demo",
        "content": "An answer of a realistic length. " * 20,
        "messages": [
            {"role": "user", "content": f"question {index} " * 10},
            {"role": "assistant", "content": "An answer of a realistic length. " * 20},
        ],
        "metrics": {"input_tokens": 120, "output_tokens": 80, "total_tokens": 200},
        "status": "COMPLETED",
    }


def measure(backend: str, runs: int) -> dict:
    with bench_database(backend) as url:
        setup(url)
        from django.db import transaction

        from sessions.services import run_create, run_events_append, session_add_usage, session_create

        session = session_create(session_id="bench-session", user_id="bench-user", component_id="demo")
        events = [{"event": "RunContent", "content": "token "} for _ in range(10)]
        timings = []
        for index in range(runs):
            started = time.perf_counter()
            with transaction.atomic():
                run = run_create(session=session, input={"input_content": f"q{index}"}, status="COMPLETED", run_data=run_data(index))
                run_events_append(run=run, events=events)
                session_add_usage(session_id=session.pk, input_tokens=120, output_tokens=80)
            timings.append(time.perf_counter() - started)
        first = statistics.median(timings[:50])
        last = statistics.median(timings[-50:])
        return {
            "backend": backend,
            "runs": runs,
            "median_first_50_ms": round(first * 1000, 3),
            "median_last_50_ms": round(last * 1000, 3),
            "ratio": round(last / first, 3),
        }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("backend", choices=["sqlite", "postgres"])
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()
    result = measure(args.backend, args.runs)
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / f"run_write_cost_{args.backend}.json").write_text(json.dumps(result, indent=2) + "\n")
    json.dump(result, sys.stdout)
    print()


if __name__ == "__main__":
    main()
