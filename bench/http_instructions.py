"""Instructions of one run through HTTP, counted whole (callgrind): for bisecting what a run costs
the web server, middleware and view included.

    .venv/bin/python -m bench.http_instructions [--db postgres|sqlite] [--stream|--no-stream]
        [--runs 10] [--blocks 2] [--warm 5]

``POST /agents/bench-agent/runs`` through ``agno_site.asgi.application`` itself, called from an
event loop in this process (uvloop, as uvicorn runs it; no server, no socket in front), with
bench.compare's settings and agent against bench.fake_openai (instant, in a process of its own,
not counted). Each run is a new session of one of seven users. After a warm-up, each block of
``--runs`` runs is counted on its own (every thread: the event loop, the run threads, the watch),
including the writes a run's end leaves to the watch (the block waits for them). Blocks agree
within ~0.15M: read the median.

bench.run_instructions counts the run service alone on SQLite; this counts what a client's run
costs the process, on either database, so it sees what that cannot: a middleware Django adapts to
the other mode (a thread hop both ways on every request: 0.54M of 16.4M on PostgreSQL, streamed,
found with this in e432437..5952c9a, bench/README.md), the form parsing, the response's framing.
One copy outside the tree measures any revision since December 2026 (copy it with
bench/callgrind.py; run it from the revision's worktree as ``python -m http_instructions``).
"""
from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import statistics
import subprocess
import sys
import time

from bench.inprocess_http import request

PATH = "/agents/bench-agent/runs"


async def _post(application, form: str) -> bytes:
    status, body = await request(application, "POST", PATH, form.encode())
    if status != 200:
        raise SystemExit(f"HTTP {status}: {body[:300]!r}")
    return body


def _slow_clocks() -> None:
    """The watch's clock-driven work (heartbeats, polls) would fall in some blocks and not others."""
    for module in ("jobs.services.watch", "agents.services.watch"):
        try:
            watch = importlib.import_module(module)
        except ImportError:
            continue
        for attr in ("POLL_SECONDS", "TICK_SECONDS"):
            if hasattr(watch, attr):
                setattr(watch, attr, 600.0)


def inner(args: argparse.Namespace) -> None:
    from bench._django import bench_database
    from bench.callgrind import Counter, under_callgrind
    from bench.compare import site_environment

    os.environ.update(site_environment(args.model_url))
    counter = Counter() if under_callgrind() else None
    with bench_database(args.db, name=os.environ.get("BENCH_DATABASE_NAME", "agno_site_bench_http_instructions")) as url:
        os.environ["DATABASE_URL"] = url
        import django
        from django.core.management import call_command

        django.setup()
        call_command("migrate", verbosity=0, interactive=False)
        _slow_clocks()
        from agno_site.asgi import application
        import uvloop

        stream = "true" if args.stream else "false"

        async def one(index: int) -> None:
            body = await _post(application, f"message=question+{index}&stream={stream}&user_id=bench-user-{index % 7}")
            assert b"RunCompleted" in body or b'"COMPLETED"' in body, body[:300]

        async def measure() -> None:
            for index in range(10):  # imports, caches, prepared statements
                await one(index)
            if counter is not None:
                counter.start()
            for index in range(args.warm):
                await one(index)
            for block in range(args.blocks):
                await asyncio.sleep(0.2)
                if counter is None:
                    for index in range(args.runs):
                        await one(1000 * block + index)
                    continue
                with counter.block():
                    for index in range(args.runs):
                        await one(1000 * block + index)
                    await asyncio.sleep(0.6)  # the last run's end, written by the watch

        uvloop.run(measure())
        from django.db import connections

        connections.close_all()
    print(json.dumps({"ok": True}))


def outer(args: argparse.Namespace) -> None:
    from bench.callgrind import run_under_callgrind
    from bench.compare import free_port

    port = free_port()
    model = subprocess.Popen([sys.executable, "-m", "bench.fake_openai", "--port", str(port)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.5)
    try:
        _, counts = run_under_callgrind(
            __spec__.name,
            ["--inner", "--db", args.db, "--stream" if args.stream else "--no-stream", "--runs", str(args.runs),
             "--blocks", str(args.blocks), "--warm", str(args.warm), "--model-url", f"http://127.0.0.1:{port}"],
            env={"TRACING_EXPORT_DELAY_MS": "600000"},
        )
    finally:
        model.terminate()
    per_run = [round(count / args.runs) for count in counts]
    revision = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(json.dumps({"revision": revision, "db": args.db, "stream": args.stream, "median": round(statistics.median(per_run)), "blocks": per_run}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument("--stream", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--blocks", type=int, default=2)
    parser.add_argument("--warm", type=int, default=5)
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)  # the process callgrind runs
    parser.add_argument("--model-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        inner(args)
    else:
        outer(args)


if __name__ == "__main__":
    main()
