"""Instructions of a run with tracing off only (callgrind), for bisecting a change in a run's cost.

    .venv/bin/python -m bench.run_instructions [--runs 20] [--blocks 3] [--warm 20] [--provider offline|openai]

bench.tracing_cost's tracing-off side without its tracing-on blocks (half the time, a third with
their warm-up): the same agent (bench/tracing_agents.py), one session, runs after a warm-up,
each block counted on its own. Its numbers are its own (a shorter warm-up, a smaller session):
compare them with each other, not with bench.tracing_cost's. Blocks of 20 runs agree within
~0.1M: a clock-driven thread's work falls in some blocks and not others (read the lowest).

It finds the run services wherever a revision had them (agents.services.runs before issue 33's
split, agents.pipeline after it), so one copy, outside the tree, measures any revision since
December 2026: copy it to a folder on PYTHONPATH and run it from the revision's worktree as
``python -m run_instructions``. bench/results/bisect_instructions_20261206.log is such a bisect.
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import statistics


def _find(candidates, names):
    for module in candidates:
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        for name in names:
            value = getattr(mod, name, None)
            if value is not None:
                return value
    raise ImportError(f"none of {names} in {candidates}")


def _native_pace() -> None:
    for module in ("jobs.services.watch", "agents.services.watch"):
        try:
            watch = importlib.import_module(module)
        except ImportError:
            continue
        for attr in ("POLL_SECONDS", "TICK_SECONDS", "FLUSH_SECONDS"):
            if hasattr(watch, attr):
                setattr(watch, attr, 600.0)
    for module, cls in (("agents.pipeline.eventlog", "EventLog"), ("agents.services.eventlog", "EventLog"),
                        ("agents.pipeline.inline", "InlineRecorder"), ("agents.services.inline", "InlineRecorder")):
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        if hasattr(mod, cls):
            setattr(getattr(mod, cls), "flush_seconds", 600.0)


def inner(args) -> None:
    from bench._django import bench_database, setup
    from bench.callgrind import Counter, under_callgrind

    counter = Counter() if under_callgrind() else None
    agent_id = "traced" if args.provider == "offline" else "traced-openai"
    with bench_database("sqlite") as url:
        os.environ["AGENT_MODULES"] = "bench.tracing_agents"
        setup(url)
        from django.conf import settings
        from core.auth import Principal

        mods = ["agents.pipeline.runs", "agents.pipeline.execution", "agents.pipeline", "agents.services.runs", "agents.services"]
        run_prepare = _find(mods, ["run_prepare"])
        RunRequest = _find(mods + ["agents.pipeline.requests"], ["RunRequest"])
        execute = None
        for name in ("run_execute_here",):
            try:
                execute = _find(mods, [name])
            except ImportError:
                pass
        if execute is None:
            execute = _find(mods, ["run_execute"])
            assert not inspect.iscoroutinefunction(execute)
        params = inspect.signature(run_prepare).parameters
        principal = Principal(user_id="bench-user", isolated=True, via="session")
        settings.TRACING = False

        def one(session_id, message):
            kw = {"principal": principal, "request": RunRequest(message=message, session_id=session_id, stream=False)}
            kw["component_id" if "component_id" in params else "agent_id"] = agent_id
            if "kind" in params:
                kw["kind"] = "agent"
            prepared = run_prepare(**kw)
            return execute(prepared, on_event=None)

        session_id = one(None, "warm up")["session_id"]
        if counter is not None:
            _native_pace()
            counter.start()
        for index in range(args.warm):
            one(session_id, f'/call add {{"a": {index}, "b": 1}}')
        for block in range(args.blocks):
            if counter is not None:
                with counter.block():
                    for index in range(args.runs):
                        output = one(session_id, f'/call add {{"a": {index}, "b": 2}}')
                        assert output["status"] == "COMPLETED", output
            else:
                for index in range(args.runs):
                    one(session_id, f'/call add {{"a": {index}, "b": 2}}')
    print(json.dumps({"ok": True}))


def outer(args) -> None:
    from bench.callgrind import run_under_callgrind

    fake = None
    if args.provider == "openai":
        from bench.tracing_cost import _fake_openai
        fake, base_url = _fake_openai()
        os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"] = base_url, "bench"
    try:
        _, counts = run_under_callgrind(__spec__.name, ["--inner", "--runs", str(args.runs), "--blocks", str(args.blocks), "--warm", str(args.warm), "--provider", args.provider],
                                        env={"TRACING_EXPORT_DELAY_MS": "600000"})
    finally:
        if fake is not None:
            fake.terminate()
    per_run = [round(c / args.runs) for c in counts]
    print(json.dumps({"median": round(statistics.median(per_run)), "blocks": per_run}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--blocks", type=int, default=3)
    parser.add_argument("--warm", type=int, default=20)
    parser.add_argument("--provider", choices=["offline", "openai"], default="offline")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)  # the process callgrind runs
    args = parser.parse_args()
    if args.inner:
        inner(args)
    else:
        outer(args)


if __name__ == "__main__":
    main()
