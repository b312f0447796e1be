"""What tracing costs a run: process CPU per run with TRACING on against off, in one process.

Runs the same service every transport uses (``run_prepare`` + ``run_execute``) for an agent on
the instant offline model that calls one tool (so a run has three spans of its own besides the
root: two model calls and the tool call), in alternating blocks of tracing on and off so the
machine's drift falls on both. The CPU is the whole process's (``time.process_time``), so the
batch exporter's thread, which writes the spans, is counted; every "on" block ends with a flush.

    .venv/bin/python -m bench.tracing_cost sqlite|postgres [--runs 300] [--blocks 6] [--provider offline|openai]

``--provider openai`` runs the same agent through the OpenAI SDK against bench.fake_openai
(instant, scripted to call the tool), the path a real model takes.

Target (issue 24): tracing adds <= 5% to a run's CPU.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from ._django import bench_database, setup


def _fake_openai() -> tuple[subprocess.Popen, str]:
    port = 18931
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.fake_openai", "--port", str(port), "--call-tool", 'add={"a": 1, "b": 2}'],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    return process, f"http://127.0.0.1:{port}/v1"


def measure(backend: str, runs: int, blocks: int, provider: str = "offline") -> dict:
    fake = None
    if provider == "openai":
        fake, base_url = _fake_openai()
        os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"] = base_url, "bench"
    try:
        return _measure(backend, runs, blocks, provider)
    finally:
        if fake is not None:
            fake.terminate()


def _measure(backend: str, runs: int, blocks: int, provider: str) -> dict:
    agent_id = "traced" if provider == "offline" else "traced-openai"
    with bench_database(backend) as url:
        os.environ["AGENT_MODULES"] = "bench.tracing_agents"
        setup(url)
        from django.conf import settings

        from agents.services.runs import RunRequest, run_execute, run_prepare
        from core.auth import Principal
        from traces.models import Span, Trace
        from traces.provider import flush

        principal = Principal(user_id="bench-user", isolated=True, via="session")

        def one(session_id: str | None, message: str) -> dict:
            prepared = run_prepare(principal=principal, agent_id=agent_id, request=RunRequest(message=message, session_id=session_id, stream=False))
            return run_execute(prepared)

        session_id = one(None, "warm up")["session_id"]
        for index in range(20):
            one(session_id, f'/call add {{"a": {index}, "b": 1}}')
        flush()
        per_run: dict[bool, list[float]] = {True: [], False: []}
        for block in range(blocks * 2):
            tracing = block % 2 == 0
            settings.TRACING = tracing
            started = time.process_time()
            for index in range(runs):
                output = one(session_id, f'/call add {{"a": {index}, "b": 2}}')
                assert output["status"] == "COMPLETED", output
            if tracing:
                assert flush()
            per_run[tracing].append((time.process_time() - started) / runs)
        on, off = statistics.median(per_run[True]), statistics.median(per_run[False])
        traced_runs = runs * blocks
        return {
            "backend": backend,
            "provider": provider,
            "runs_per_block": runs,
            "blocks_each": blocks,
            "cpu_ms_per_run_tracing_off": round(off * 1000, 3),
            "cpu_ms_per_run_tracing_on": round(on * 1000, 3),
            "overhead_percent": round((on / off - 1) * 100, 1),
            "blocks_off_ms": [round(value * 1000, 3) for value in per_run[False]],
            "blocks_on_ms": [round(value * 1000, 3) for value in per_run[True]],
            "spans_per_run": round(Span.all_users.count() / max(1, Trace.all_users.count()), 2),
            "traces_written": Trace.all_users.count(),
            "traced_runs": traced_runs,
        }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("backend", choices=["sqlite", "postgres"])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--provider", choices=["offline", "openai"], default="offline")
    args = parser.parse_args()
    result = measure(args.backend, args.runs, args.blocks, args.provider)
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / f"tracing_cost_{args.backend}_{args.provider}.json").write_text(json.dumps(result, indent=2) + "\n")
    json.dump(result, sys.stdout)
    print()


if __name__ == "__main__":
    main()
