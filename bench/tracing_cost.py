"""What tracing costs a run: the CPU of a run with TRACING on against off, in one process.

Runs the same service every transport uses (``run_prepare`` + ``run_execute_here``) for an agent that
calls one tool (so a run has three spans of its own besides the root: two model calls and the
tool call), in alternating blocks of tracing on and off so the machine's drift falls on both.
Every "on" block ends with a flush, so the writing of its spans (on the span writer's thread)
falls inside it. Two measures:

- ``--counter cpu`` (default): the whole process's CPU (``time.process_time``, every thread).
  On a shared machine a block's CPU moves ±20%: take many blocks and read the medians.
- ``--counter instructions``: instructions executed, counted by valgrind's callgrind (every
  thread; bench/callgrind.py). Set-up runs uninstrumented; each block is counted on its own.
  Repeatable to a fraction of a percent whatever else the machine does, and about 50x slower,
  so use fewer runs (``--runs 40 --blocks 3``).

    .venv/bin/python -m bench.tracing_cost sqlite|postgres [--runs 300] [--blocks 6]
        [--provider offline|openai] [--stream] [--counter cpu|instructions]

``--provider openai`` runs the same agent through the OpenAI SDK against bench.fake_openai
(instant, scripted to call the tool), the path a real model takes. ``--stream`` asks for a
streamed run whose events go to a consumer, as SSE and WebSocket clients get them (the model
streams either way; a streamed run also keeps its content events).

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
    with socket.socket() as probe:  # a free port: several benches may run at once
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
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


def measure(backend: str, runs: int, blocks: int, provider: str = "offline", stream: bool = False) -> dict:
    fake = None
    if provider == "openai":
        fake, base_url = _fake_openai()
        os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"] = base_url, "bench"
    try:
        return _measure(backend, runs, blocks, provider, stream)
    finally:
        if fake is not None:
            fake.terminate()


def _measure(backend: str, runs: int, blocks: int, provider: str, stream: bool) -> dict:
    from .callgrind import Counter, under_callgrind

    counter = Counter() if under_callgrind() else None
    agent_id = "traced" if provider == "offline" else "traced-openai"
    with bench_database(backend) as url:
        os.environ["AGENT_MODULES"] = "bench.tracing_agents"
        setup(url)
        from django.conf import settings

        from agents.pipeline.execution import run_execute_here
        from agents.pipeline.runs import RunRequest, run_prepare
        from core.auth import Principal
        from traces.models import Span, Trace
        from traces.provider import flush

        principal = Principal(user_id="bench-user", isolated=True, via="session")
        received = []

        def one(session_id: str | None, message: str) -> dict:
            prepared = run_prepare(principal=principal, component_id=agent_id, request=RunRequest(message=message, session_id=session_id, stream=stream), kind="agent")
            return run_execute_here(prepared, on_event=received.append if stream else None)

        session_id = one(None, "warm up")["session_id"]
        if counter is not None:
            _native_pace()
            counter.start()  # the warm-up runs instrumented: the measured blocks find the code translated
        for tracing in (True, False, True):  # both paths warm before the first measured block
            settings.TRACING = tracing
            for index in range(20):
                one(session_id, f'/call add {{"a": {index}, "b": 1}}')
        flush()
        per_run: dict[bool, list[float]] = {True: [], False: []}
        for block in range(blocks * 2):
            tracing = block % 2 == 0
            settings.TRACING = tracing
            started = time.process_time()
            if counter is not None:
                with counter.block():
                    _block(one, session_id, runs, tracing, flush, received)
            else:
                _block(one, session_id, runs, tracing, flush, received)
            per_run[tracing].append((time.process_time() - started) / runs)
        on, off = statistics.median(per_run[True]), statistics.median(per_run[False])
        return {
            "backend": backend,
            "provider": provider,
            "stream": stream,
            "runs_per_block": runs,
            "blocks_each": blocks,
            "cpu_ms_per_run_tracing_off": round(off * 1000, 3),
            "cpu_ms_per_run_tracing_on": round(on * 1000, 3),
            "overhead_percent": round((on / off - 1) * 100, 1),
            "blocks_off_ms": [round(value * 1000, 3) for value in per_run[False]],
            "blocks_on_ms": [round(value * 1000, 3) for value in per_run[True]],
            "spans_per_run": round(Span.all_users.count() / max(1, Trace.all_users.count()), 2),
            "traces_written": Trace.all_users.count(),
        }


def _native_pace() -> None:
    """Under callgrind a run takes ~50x longer, long enough for the run services' clock-driven
    work to fire in every run, more often in the slower (traced) blocks: the watch thread's
    cancellation poll and its writes of quiet runs' events. At native speed an instant model's
    run sees neither; push their intervals out so that counted runs do what they do at native
    speed."""
    from agents.pipeline import eventlog, inline
    from jobs.services import watch

    watch.POLL_SECONDS = 600.0
    watch.TICK_SECONDS = 600.0
    eventlog.EventLog.flush_seconds = inline.InlineRecorder.flush_seconds = 600.0


def _block(one, session_id: str, runs: int, tracing: bool, flush, received: list) -> None:
    for index in range(runs):
        output = one(session_id, f'/call add {{"a": {index}, "b": 2}}')
        assert output["status"] == "COMPLETED", output
        received.clear()
    if tracing:
        assert flush()


def _instructions(args: argparse.Namespace) -> dict:
    """Re-run this bench under callgrind; per-run instruction counts of its blocks."""
    from .callgrind import run_under_callgrind

    inner = [args.backend, "--runs", str(args.runs), "--blocks", str(args.blocks), "--provider", args.provider, "--inner"]
    if args.stream:
        inner.append("--stream")
    # Callgrind runs the process ~50x slower: with the writer's usual 1 s wait a batch would hold
    # a few runs instead of hundreds. Each block's closing flush writes it as one batch instead.
    stdout, counts = run_under_callgrind("bench.tracing_cost", inner, env={"TRACING_EXPORT_DELAY_MS": "600000"})
    result = json.loads(stdout.strip().splitlines()[-1])
    if len(counts) != args.blocks * 2:
        raise RuntimeError(f"expected {args.blocks * 2} counted blocks, got {len(counts)}")
    on = [count / args.runs for count in counts[0::2]]
    off = [count / args.runs for count in counts[1::2]]
    median_on, median_off = statistics.median(on), statistics.median(off)
    return {
        "backend": args.backend, "provider": args.provider, "stream": args.stream, "counter": "instructions",
        "runs_per_block": args.runs, "blocks_each": args.blocks,
        "instructions_per_run_tracing_off": round(median_off), "instructions_per_run_tracing_on": round(median_on),
        "added_instructions_per_run": round(median_on - median_off),
        "overhead_percent": round((median_on / median_off - 1) * 100, 2),
        "blocks_off": [round(value) for value in off], "blocks_on": [round(value) for value in on],
        "spans_per_run": result["spans_per_run"],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("backend", choices=["sqlite", "postgres"])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--provider", choices=["offline", "openai"], default="offline")
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--counter", choices=["cpu", "instructions"], default="cpu")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)  # the process callgrind runs
    args = parser.parse_args()
    if args.counter == "instructions" and not args.inner:
        result = _instructions(args)
    else:
        result = measure(args.backend, args.runs, args.blocks, args.provider, args.stream)
    if not args.inner:
        out = Path(__file__).parent / "results"
        out.mkdir(exist_ok=True)
        name = f"tracing_cost_{args.backend}_{args.provider}{'_stream' if args.stream else ''}{'_instructions' if args.counter == 'instructions' else ''}"
        (out / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    json.dump(result, sys.stdout)
    print()


if __name__ == "__main__":
    main()
