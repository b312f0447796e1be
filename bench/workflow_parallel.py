"""A workflow with a 4-branch ``Parallel`` on the slow model: one run's wall time, then 100 runs at once.

    bash bench/agentos_reference/setup.sh        # once (run by bench.compare's helpers if missing)
    .venv/bin/python -m bench.workflow_parallel [--db sqlite|postgres] [--only agentos,site]
        [--runs 3] [--concurrency 100] [--stream] [--branch-ms 1000:100,1500:100,2000:100,2500:100]

The workflow is bench/workflow_agents.py (Agno Site) and its twin in bench/agentos_reference/app.py
(``--parallel-workflow``, AgentOS 3.1.10's ``Workflow`` and ``Parallel``): a function step, a
``Parallel`` of four agent steps, each agent on a model id of its own, and a function step.
bench.fake_openai paces each id (``--model-delay``: the time to the first token, then 9 more tokens
that far apart). The function steps call no model, so one workflow run is, at best, the slowest
branch; the branches run concurrently or the run takes their sum.

1. ``--runs`` workflow runs one after the other (after one uncounted warm-up run): each run's wall
   time against the slowest branch (**target ≤ 1.2×**). Each run is checked: HTTP 200, the run
   COMPLETED (``WorkflowCompleted`` when streamed), three step results when not streamed, and four
   model calls served for it (one per branch, from the model's ``/stats``).
2. ``--concurrency`` workflow runs posted at once, each a user and session of its own: the wall
   time until the last one ends, per-run p50 / max, errors, the model calls served (4 per run), the
   most calls of each branch the model held at once, the server's thread count (``Threads:`` of
   /proc/PID/status) and, on PostgreSQL, the connections to the server's database
   (``pg_stat_activity``), both sampled every 50 ms before the burst and while its runs wait on the
   model. A thread per branch would show as about 4 × concurrency threads.

bench.compare's servers, databases and pinning: one uvicorn worker each (Agno Site with its
default settings), a fresh database per server, the server on CPU 0, the model and this script
(the load) on CPU 1. Runs are non-streamed unless ``--stream``. Results:
bench/results/workflow_parallel_<db>_<json|stream>_<time>.json and a markdown table.
"""
from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import statistics
import sys
import time

import httpx

from .compare import POSTGRES, Bench, Database, Model, ServerFailed, agentos_server, free_port, git_revision, site_server, stop
from .http_load import RESULTS_DIR, cpu_seconds, percentile
from .team_broadcast import Pace, completions_served, core_busy_s, seconds, threads
from .workflow_agents import BRANCH_MODELS, WORKFLOW_ID

MODEL_CALLS_PER_RUN = len(BRANCH_MODELS)
STEPS_PER_RUN = 3
SAMPLE_S = 0.05
TIMEOUT_S = 120


def best_case_s(branches: list[Pace]) -> float:
    """The slowest branch: the function steps cost no model call."""
    return max(branch.answer_s for branch in branches)


async def workflow_run(client: httpx.AsyncClient, url: str, number: int, stream: bool) -> dict:
    """One workflow run; ``error`` is None when it answered 200 and the run COMPLETED."""
    form = {"message": f"Benchmark question {number}", "stream": "true" if stream else "false",
            "user_id": f"bench-user-{number}", "session_id": f"workflow-{number}-{os.urandom(4).hex()}"}
    started = time.perf_counter()
    record: dict = {"error": None}
    try:
        if stream:
            async with client.stream("POST", url, data=form) as response:
                body = (await response.aread()).decode(errors="replace")
            completed = "event: WorkflowCompleted" in body and "event: WorkflowError" not in body
        else:
            response = await client.post(url, data=form)
            body = response.text
            data = response.json() if response.status_code == 200 else {}
            completed = data.get("status") == "COMPLETED" and len(data.get("step_results") or []) == STEPS_PER_RUN
        if response.status_code != 200:
            record["error"] = f"http_{response.status_code}"
        elif not completed:
            record["error"] = "not_completed"
        if record["error"]:
            record["detail"] = body[-300:]
    except httpx.HTTPError as exc:
        record["error"], record["detail"] = "connection", f"{type(exc).__name__}: {exc}"[:300]
    record["wall_s"] = time.perf_counter() - started
    return record


async def one_at_a_time(client: httpx.AsyncClient, url: str, model: Model, args: argparse.Namespace) -> dict:
    best = best_case_s(args.branch_ms)
    await workflow_run(client, url, -1, args.stream)  # warm-up: imports, first connections, first writes
    runs = []
    for number in range(args.runs):
        before = await completions_served(client, model)
        record = await workflow_run(client, url, number, args.stream)
        record["model_calls"] = await completions_served(client, model) - before
        if record["error"] is None and record["model_calls"] != MODEL_CALLS_PER_RUN:
            record["error"] = f"model_calls_{record['model_calls']}"
        runs.append(record)
    walls = [r["wall_s"] for r in runs if r["error"] is None]
    median = statistics.median(walls) if walls else None
    return {
        "runs": len(runs),
        "errors": [r for r in runs if r["error"]],
        "best_case_s": round(best, 3),
        "wall_s": [round(r["wall_s"], 3) for r in runs],
        "wall_median_s": round(median, 3) if median else None,
        "ratio": round(median / best, 3) if median else None,
    }


class Connections:
    """Connections to the server's PostgreSQL database, from pg_stat_activity (None on SQLite)."""

    def __init__(self, db: Database) -> None:
        self.name = db.postgres_name
        self.conn = None

    async def __aenter__(self) -> Connections:
        if self.name:
            import psycopg

            self.conn = await psycopg.AsyncConnection.connect(f"{POSTGRES}/postgres", autocommit=True)
        return self

    async def __aexit__(self, *exc) -> None:
        if self.conn is not None:
            await self.conn.close()

    async def count(self) -> int | None:
        if self.conn is None:
            return None
        cursor = await self.conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (self.name,))
        return (await cursor.fetchone())[0]


def spread(samples: list) -> dict:
    if not samples or samples[0] is None:
        return {"min": None, "median": None, "max": None}
    return {"min": min(samples), "median": statistics.median(samples), "max": max(samples)}


async def burst(client: httpx.AsyncClient, url: str, model: Model, pid: int, db: Database, args: argparse.Namespace) -> dict:
    async with Connections(db) as connections:
        idle_threads, idle_connections = threads(pid), await connections.count()
        thread_samples: list[int] = []
        connection_samples: list[int | None] = []
        done = asyncio.Event()

        async def sample() -> None:
            while not done.is_set():
                thread_samples.append(threads(pid))
                connection_samples.append(await connections.count())
                await asyncio.sleep(SAMPLE_S)

        served_before, cpu_before, core_before = await completions_served(client, model), cpu_seconds(pid), core_busy_s(pid)
        await client.post(f"{model.url}/stats/reset")
        sampler = asyncio.create_task(sample())
        started = time.perf_counter()
        records = await asyncio.gather(*(workflow_run(client, url, 1000 + n, args.stream) for n in range(args.concurrency)))
        wall = time.perf_counter() - started
        done.set()
        await sampler
    cpu, core_after = cpu_seconds(pid) - cpu_before, core_busy_s(pid)
    stats = (await client.get(f"{model.url}/stats")).json()
    errors: dict[str, int] = {}
    for record in records:
        if record["error"]:
            errors[record["error"]] = errors.get(record["error"], 0) + 1
    ok = [r["wall_s"] for r in records if r["error"] is None]
    return {
        "concurrency": args.concurrency,
        "wall_s": round(wall, 3),
        "ratio_to_best_case": round(wall / best_case_s(args.branch_ms), 3),
        "completed": len(ok),
        "errors": sum(errors.values()),
        "errors_by_kind": errors,
        "error_sample": next((r["detail"] for r in records if r["error"]), None),
        "run_p50_ms": percentile(ok, 0.50),
        "run_max_ms": percentile(ok, 1.0),
        "model_calls": stats["completions"] - served_before,
        "model_calls_expected": MODEL_CALLS_PER_RUN * args.concurrency,
        "model_peak_in_flight": stats.get("peak_in_flight"),
        "threads_idle": idle_threads,
        "threads_during": spread(thread_samples),
        "db_connections_idle": idle_connections,
        "db_connections_during": spread(connection_samples),
        "samples": len(thread_samples),
        "server_cpu_s": round(cpu, 2),
        "server_cpu_pct": round(100 * cpu / wall, 1),
        # The server's core busy with anything but the server (other engineers' work, the kernel).
        "other_work_on_server_core_pct": None if core_before is None else round(100 * (core_after - core_before - cpu) / wall, 1),
        "server_cpu_ms_per_run": round(1000 * cpu / len(ok), 1) if ok else None,
    }


async def drive(base_url: str, model: Model, pid: int, db: Database, args: argparse.Namespace) -> dict:
    url = f"{base_url}/workflows/{WORKFLOW_ID}/runs"
    limits = httpx.Limits(max_connections=args.concurrency + 2, max_keepalive_connections=args.concurrency + 2)
    async with httpx.AsyncClient(timeout=httpx.Timeout(TIMEOUT_S, connect=30), limits=limits) as client:
        single = await one_at_a_time(client, url, model, args)
        many = await burst(client, url, model, pid, db, args)
    return {"one_at_a_time": single, "burst": many}


def servers(bench: Bench, model: Model, only: list[str]):
    """(label, server) for each server measured: AgentOS with its workflow, Agno Site with ours."""
    if "agentos" in only:
        reference = agentos_server(bench, model)
        command = reference.command
        yield "agentos", dataclasses.replace(reference, command=lambda db, port: [*command(db, port), "--parallel-workflow"])
    if "site" in only:
        yield "site", site_server(bench, model)


def measure(bench: Bench, label: str, server, model: Model, args: argparse.Namespace) -> dict:
    # A database name of this benchmark's own: other benchmarks drop and recreate bench_http_<server>.
    db = bench.database(f"workflow_{label}")
    server.prepare(db)
    port = free_port()
    process = bench.start(label, server.command(db, port), server.env(db))
    try:
        base_url = f"http://127.0.0.1:{port}"
        bench.wait_healthy(label, process, base_url)
        result = asyncio.run(drive(base_url, model, process.pid, db, args))
        result["server_survived"] = process.poll() is None
    finally:
        stop(process)
    result["server"] = label
    single, many = result["one_at_a_time"], result["burst"]
    print(f"{label}: one run {single['wall_median_s']} s (best case {single['best_case_s']} s, "
          f"{single['ratio']}x), {len(single['errors'])} errors; {many['concurrency']} at once: "
          f"{many['wall_s']} s, {many['errors']} errors {many['errors_by_kind']}, threads idle "
          f"{many['threads_idle']}, during {many['threads_during']}, db connections {many['db_connections_idle']} "
          f"→ {many['db_connections_during']}, model peak {many['model_peak_in_flight']}, server CPU "
          f"{many['server_cpu_pct']} %, other work on its core {many['other_work_on_server_core_pct']} %",
          file=sys.stderr, flush=True)
    return result


def branch_peaks(burst: dict) -> str:
    peaks = burst.get("model_peak_in_flight") or {}
    return " / ".join(str(peaks.get(model, "–")) for model in BRANCH_MODELS)


def low_high(idle, during: dict) -> str:
    return "–" if idle is None else f"{idle} → {during['min']}–{during['max']} (median {during['median']:g})"


def markdown(results: list[dict], args: argparse.Namespace) -> str:
    mode = "streamed" if args.stream else "non-streamed"
    lines = [
        f"| server ({args.db}, {mode}) | one run: wall p50 | / slowest branch | {args.concurrency} at once: wall "
        "| run p50 / max | errors | model calls | branch calls at once (peak) | threads idle → during "
        "| DB connections idle → during | server CPU ms/run | server's core: server / other work |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        if "failed" in r:
            lines.append(f"| {r['server']} | failed: {r['failed'][:120]} |" + " |" * 10)
            continue
        single, many = r["one_at_a_time"], r["burst"]
        errors = len(single["errors"]) + many["errors"]
        lines.append(
            f"| {r['server']} | {single['wall_median_s'] or '–'} s | **{single['ratio']}×** (of {single['best_case_s']} s) "
            f"| {many['wall_s']:.2f} s | {seconds(many['run_p50_ms'])} / {seconds(many['run_max_ms'])} | {errors} "
            f"| {many['model_calls']} / {many['model_calls_expected']} | {branch_peaks(many)} "
            f"| {low_high(many['threads_idle'], many['threads_during'])} "
            f"| {low_high(many['db_connections_idle'], many['db_connections_during'])} "
            f"| {many['server_cpu_ms_per_run']} | {many['server_cpu_pct']} / {many['other_work_on_server_core_pct']} % |"
        )
    return "\n".join(lines)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="sqlite", choices=["sqlite", "postgres"])
    parser.add_argument("--only", default="agentos,site", type=lambda t: [p for p in t.split(",") if p],
                        help="agentos, site (default both)")
    parser.add_argument("--runs", type=int, default=3, help="workflow runs one at a time (default 3)")
    parser.add_argument("--concurrency", type=int, default=100, help="workflow runs at once (default 100)")
    parser.add_argument("--stream", action="store_true", help="streamed runs (default: stream=false)")
    parser.add_argument("--branch-ms", default=[Pace(1000, 100), Pace(1500, 100), Pace(2000, 100), Pace(2500, 100)],
                        type=lambda t: [Pace.parse(p) for p in t.split(",")], metavar="FIRST:TOKEN,...")
    parser.add_argument("--venv", default=os.environ.get("BENCH_VENV", "/tmp/agentos-bench-venv"))
    parser.add_argument("--site-env", action="append", default=[], metavar="KEY=VALUE",
                        help="extra environment for Agno Site (repeatable)")
    parser.add_argument("--on-disk", action="store_true", help="SQLite files on disk and PostgreSQL commits flushed")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs, SQLite files)")
    args = parser.parse_args()
    if len(args.branch_ms) != len(BRANCH_MODELS):
        parser.error(f"--branch-ms needs {len(BRANCH_MODELS)} paces, one per branch")
    if set(args.only) - {"agentos", "site"}:
        parser.error("--only takes agentos and site")
    args.site_env = ["AGENT_MODULES=bench.workflow_agents", *args.site_env]
    return args


def main() -> None:
    args = parse_args()
    bench = Bench(args)
    if bench.client_pin:
        os.sched_setaffinity(0, {int(bench.client_pin[-1])})  # the load shares the model's CPU
    port = free_port()
    model_command = [sys.executable, "-m", "bench.fake_openai", "--port", str(port),
                     *[f"--model-delay={model}={pace}" for model, pace in zip(BRANCH_MODELS, args.branch_ms)]]
    model = Model(process=bench.start("fake-openai", model_command, pin=bench.client_pin), url=f"http://127.0.0.1:{port}")
    results: list[dict] = []
    loadavg_before = os.getloadavg()
    try:
        bench.wait_healthy("fake-openai", model.process, model.url)
        for label, server in servers(bench, model, args.only):
            try:
                results.append(measure(bench, label, server, model, args))
            except ServerFailed as exc:
                print(f"{label}: {exc}", file=sys.stderr, flush=True)
                results.append({"server": label, "failed": str(exc)[:2000]})
    finally:
        stop(model.process)
        bench.drop_databases()
    report = {
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "pinning": bench.pinning,
        "durability": bench.durability,
        "settings": {k: ([str(p) for p in v] if k == "branch_ms" else v) for k, v in vars(args).items() if k != "keep"},
        "model": f"bench.fake_openai: branches {', '.join(map(str, args.branch_ms))} ms (first token:token)",
        "machine": {"cpus": os.cpu_count(), "loadavg_before": loadavg_before, "loadavg_after": os.getloadavg()},
        "agno_site_revision": git_revision(),
        "results": results,
    }
    RESULTS_DIR.mkdir(exist_ok=True)
    out = RESULTS_DIR / f"workflow_parallel_{args.db}_{'stream' if args.stream else 'json'}_{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\n## Workflow with a {len(BRANCH_MODELS)}-branch Parallel: one run, then {args.concurrency} at once\n")
    print(markdown(results, args))
    print(f"\n{bench.pinning}. Load average before/after: {loadavg_before[0]:.2f}/{os.getloadavg()[0]:.2f}. "
          f"Results: {out}")
    bench.finish()


if __name__ == "__main__":
    main()
