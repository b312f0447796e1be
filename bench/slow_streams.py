"""A slow model, C streamed runs in flight for D seconds: AgentOS 3.1.10 beside Agno Site (issue 18).

    bash bench/agentos_reference/setup.sh        # once (run by this script if the venv is missing)
    .venv/bin/python -m bench.slow_streams [--db sqlite,postgres] [--concurrency 256] [--duration 20]
        [--warmup 5] [--run-threads 32,512] [--only agentos,site[,floor]] [--repeat 1]
        [--first-token-ms 2000 --token-ms 100] [--first-token-jitter J] [--site-env KEY=VALUE]
    .venv/bin/python -m bench.slow_streams --db postgres --concurrency 1024 --run-threads 512 --warmup 40

The model is bench.fake_openai in its slow mode: 2 s to the first token, then 10 tokens 100 ms
apart (about 3 s an answer). The servers, databases and pinning are bench.compare's: one uvicorn
worker each, the same agent (bench/agents.py and bench/agentos_reference/app.py: history on,
3 runs, no memory), ``DEBUG=false``, a fresh database per server, the server on CPU 0 and the
load generator and the model on CPU 1, SQLite on tmpfs and PostgreSQL with synchronous_commit=off.
Agno Site is measured once per ``--run-threads`` value (``RUN_THREADS``). The other settings stay
at their defaults (``DB_POOL_MAX_SIZE``, ``RUN_MAX_PER_USER``): each of the C streams is a user of
its own (``user_id=bench-user-<n>``), so the per-user cap (8) is never what refuses a run.

The load generator (this module with ``--load``, in a process of its own) keeps C streams in
flight: C loops, each posting ``stream=true`` runs (a fresh session each) one after the other,
all starting at once, with one httpx client per ``--streams-per-client`` loops. The first
``--warmup`` seconds are not counted; then for ``--duration`` seconds:

* runs/s: streams that ended with ``RunCompleted`` inside the window, per second;
* first byte: time to the response's headers (TTFB), to its first body bytes (the first SSE
  event) and to the first ``RunContent`` event (the answer's first word), p50 and p95; whole run
  p50 and p95; for the runs completed in the window;
* errors, from the start (warm-up included) to the window's end: non-200 answers (by status), 200
  streams with a ``RunError`` or without ``RunCompleted``, and connection errors (httpx errors);
* the server's CPU seconds in the window (and per completed run), its RSS at the window's end and
  its peak RSS (VmHWM); PostgreSQL's backends for the bench database, the model's and the load
  generator's CPU; "other work": CPU time on the machine used by none of these (above
  DISTURBED_PCT of one core, the round is flagged as disturbed).

At the window's end the streams still in flight are abandoned (counted as in flight, not as errors)
and the server is stopped. At 1,024 in flight a server needs more than 25 s for its first runs:
give it --warmup 40. Before each server, the machine's load average and one second of its
CPUs' busy time are recorded. --repeat N alternates the servers N times (a table row per round).
Results: bench/results/slow_streams_<time>.json and a markdown table.
"""
from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

from .background_record import CpuSampler
from .compare import (
    DISTURBED_PCT, Bench, Model, Server, ServerFailed, agentos_server, floor_server, free_port, git_revision, site_server, stop,
)
from .http_load import RESULTS_DIR, cpu_busy_seconds, percentile

ROOT = Path(__file__).resolve().parent.parent
# A stream is given this long between two reads (it never matters inside a 20-30 s window).
READ_TIMEOUT_S = 300


# ---------------------------------------------------------------------------------------------
# The load generator (``--load``), in a process of its own pinned to the load generator's CPU.


async def one_stream(client: httpx.AsyncClient, url: str, user: str, number: int, started_at: float) -> dict:
    """One streamed run; times are seconds after ``started_at`` (the load's start)."""
    started = time.perf_counter()
    record = {"start": started - started_at, "end": None, "ttfb": None, "first_event": None,
              "first_content": None, "error": None, "detail": None}
    form = {"message": f"Benchmark question {number}", "stream": "true", "user_id": user,
            "session_id": f"slow-{user}-{number}-{os.urandom(4).hex()}"}
    tail = b""
    status = None
    try:
        async with client.stream("POST", url, data=form) as response:
            status = response.status_code
            record["ttfb"] = time.perf_counter() - started
            async for chunk in response.aiter_raw():
                if record["first_event"] is None:
                    record["first_event"] = time.perf_counter() - started
                window = tail[-32:] + chunk
                if record["first_content"] is None and b"event: RunContent\n" in window:
                    record["first_content"] = time.perf_counter() - started
                if b"event: RunError\n" in window and record["error"] is None:
                    record["error"], record["detail"] = "run_error", window[-300:].decode(errors="replace")
                if b"event: RunCompleted\n" in window:
                    record["completed"] = True
                tail = (tail + chunk)[-400:] if status != 200 else window[-400:]
    except httpx.HTTPError as exc:
        record["end"] = time.perf_counter() - started_at
        record["error"], record["detail"] = "connection", f"{type(exc).__name__}: {exc}"[:300]
        return record
    record["end"] = time.perf_counter() - started_at
    if status != 200:
        record["error"], record["detail"] = f"http_{status}", tail[-300:].decode(errors="replace")
    elif record["error"] is None and not record.get("completed"):
        record["error"], record["detail"] = "no_run_completed", tail[-300:].decode(errors="replace")
    return record


def rss_kib(pid: int) -> dict:
    """VmRSS and VmHWM (peak) of a process, in KiB."""
    values = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                values[name] = int(value.split()[0])
    return values


async def load(args: argparse.Namespace) -> dict:
    per_client = max(1, args.streams_per_client)
    limits = httpx.Limits(max_connections=per_client, max_keepalive_connections=per_client)
    timeout = httpx.Timeout(READ_TIMEOUT_S, connect=60)
    clients = [httpx.AsyncClient(base_url=args.base_url, limits=limits, timeout=timeout)
               for _ in range((args.concurrency + per_client - 1) // per_client)]
    url = f"/agents/{args.agent_id}/runs"
    processes = {"server": [args.server_pid], "loadgen": [os.getpid()]}
    if args.model_pid:
        processes["model"] = [args.model_pid]
    sampler = CpuSampler(processes, args.postgres_db, exclude=set())
    records: list[dict] = []
    started_at = time.perf_counter()
    window_start, window_end = started_at + args.warmup, started_at + args.warmup + args.duration

    async def loop(index: int) -> None:
        client, user, number = clients[index // per_client], f"bench-user-{index}", 0
        while time.perf_counter() < window_end:
            records.append(await one_stream(client, url, user, number, started_at))
            number += 1

    tasks = [asyncio.create_task(loop(index)) for index in range(args.concurrency)]
    await asyncio.sleep(max(0.0, window_start - time.perf_counter()))
    before = sampler.sample()
    await asyncio.sleep(max(0.0, window_end - time.perf_counter()))
    after = sampler.sample()
    memory = rss_kib(args.server_pid)
    in_flight = sum(1 for task in tasks if not task.done())
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for client in clients:
        await client.aclose()
    sampler.close()
    return summary(args, records, CpuSampler.delta(before, after), memory, in_flight)


def summary(args: argparse.Namespace, records: list[dict], cpu: dict, memory: dict, in_flight: int) -> dict:
    w0, w1 = args.warmup, args.warmup + args.duration
    ok = [r for r in records if r["error"] is None and w0 <= r["end"] <= w1]
    failed = [r for r in records if r["error"] is not None and r["end"] <= w1]
    errors: dict[str, int] = {}
    for record in failed:
        errors[record["error"]] = errors.get(record["error"], 0) + 1
    samples: dict[str, str] = {}
    for record in failed:
        samples.setdefault(record["error"], record["detail"] or "")

    def p(field: str, fraction: float) -> float | None:
        return percentile([r[field] for r in ok if r[field] is not None], fraction)

    elapsed = cpu["elapsed"]
    return {
        "concurrency": args.concurrency,
        "window_s": round(elapsed, 2),
        "completed": len(ok),
        "runs_per_s": round(len(ok) / args.duration, 2),
        "first_content_p50_ms": p("first_content", 0.50),
        "first_content_p95_ms": p("first_content", 0.95),
        "first_event_p50_ms": p("first_event", 0.50),
        "first_event_p95_ms": p("first_event", 0.95),
        "ttfb_p50_ms": p("ttfb", 0.50),
        "ttfb_p95_ms": p("ttfb", 0.95),
        "run_p50_ms": percentile([r["end"] - r["start"] for r in ok], 0.50),
        "run_p95_ms": percentile([r["end"] - r["start"] for r in ok], 0.95),
        "errors": len(failed),
        "errors_in_window": sum(1 for r in failed if r["end"] >= w0),
        "errors_by_kind": errors,
        "error_samples": samples,
        "in_flight_at_end": in_flight,
        "server_cpu_s": round(cpu["server"], 2),
        "server_cpu_pct": round(100 * cpu["server"] / elapsed, 1),
        "server_cpu_ms_per_run": round(1000 * cpu["server"] / len(ok), 2) if ok else None,
        "postgres_cpu_s": round(cpu["postgres"], 2) if args.postgres_db else None,
        "loadgen_cpu_pct": round(100 * cpu["loadgen"] / elapsed, 1),
        "model_cpu_pct": round(100 * cpu["model"] / elapsed, 1) if "model" in cpu else None,
        "busy_pct_per_cpu": [round(100 * b / elapsed, 1) for b in cpu["busy"]],
        "other_cpu_pct": cpu["other_cpu_pct"],
        "server_rss_mib": round(memory.get("VmRSS", 0) / 1024, 1),
        "server_peak_rss_mib": round(memory.get("VmHWM", 0) / 1024, 1),
    }


def load_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description="the load generator of bench.slow_streams")
    parser.add_argument("--load", action="store_true")
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--agent-id", default="bench-agent")
    parser.add_argument("--concurrency", type=int, required=True)
    parser.add_argument("--duration", type=float, required=True)
    parser.add_argument("--warmup", type=float, required=True)
    parser.add_argument("--streams-per-client", type=int, default=16)
    parser.add_argument("--server-pid", type=int, required=True)
    parser.add_argument("--model-pid", type=int)
    parser.add_argument("--postgres-db")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        from uvloop import run as run_loop
    except ImportError:
        run_loop = asyncio.run
    args.out.write_text(json.dumps(run_loop(load(args)), indent=2) + "\n")


# ---------------------------------------------------------------------------------------------
# The orchestrator: the model, then each server in turn on a fresh database.


def machine_now() -> dict:
    """Load average and one second of each CPU's busy share, taken before a server starts."""
    cpus = range(os.cpu_count() or 1)
    before, started = [cpu_busy_seconds(cpu) for cpu in cpus], time.perf_counter()
    time.sleep(1)
    elapsed = time.perf_counter() - started
    busy = [round(100 * (cpu_busy_seconds(cpu) - b) / elapsed, 1) for cpu, b in zip(cpus, before)]
    return {"loadavg": [round(x, 2) for x in os.getloadavg()], "busy_pct_per_cpu": busy}


def measure(bench: Bench, label: str, server: Server, model: Model) -> dict:
    args = bench.args
    quiet = machine_now()
    print(f"{label} ({args.db}, c={args.concurrency}): machine before: load {quiet['loadavg'][0]}, "
          f"CPU busy {quiet['busy_pct_per_cpu']} %", file=sys.stderr, flush=True)
    db = bench.database(label)
    server.prepare(db)
    port = free_port()
    process = bench.start(label, server.command(db, port), server.env(db))
    try:
        base_url = f"http://127.0.0.1:{port}"
        bench.wait_healthy(label, process, base_url)
        out = bench.work / f"load_{label}.json"
        command = [
            *bench.client_pin, sys.executable, "-m", "bench.slow_streams", "--load", "--base-url", base_url,
            "--concurrency", str(args.concurrency), "--duration", str(args.duration),
            "--warmup", str(args.warmup), "--streams-per-client", str(args.streams_per_client),
            "--server-pid", str(process.pid), "--model-pid", str(model.process.pid), "--out", str(out),
        ]
        if db.postgres_name:
            command += ["--postgres-db", db.postgres_name]
        subprocess.run(command, cwd=ROOT, check=True)
        result = json.loads(out.read_text())
        alive = process.poll() is None
    finally:
        stop(process)
    result.update(server=label, database=args.db, machine_before=quiet, server_survived=alive)
    result["disturbed"] = (result["other_cpu_pct"] or 0) > DISTURBED_PCT
    print(f"  {result['runs_per_s']} runs/s, first byte p50 {result['first_event_p50_ms']} ms, first RunContent p50 {result['first_content_p50_ms']} ms, "
          f"errors {result['errors']} {result['errors_by_kind']}, RSS {result['server_rss_mib']} MiB, "
          f"CPU {result['server_cpu_pct']} %, other work {result['other_cpu_pct']} %", file=sys.stderr, flush=True)
    return result


def variants(bench: Bench, model: Model) -> list[tuple[str, Server]]:
    """(label, server) in the order a round measures them: AgentOS, then Agno Site per RUN_THREADS."""
    args = bench.args
    out = []
    if "agentos" in args.only:
        out.append(("agentos", agentos_server(bench, model)))
    if "site" in args.only:
        for threads in args.run_threads:
            site_bench = copy.copy(bench)
            site_bench.args = argparse.Namespace(**{**vars(args), "site_env": [*args.site_env, f"RUN_THREADS={threads}"]})
            out.append((f"site-threads-{threads}", site_server(site_bench, model)))
    if "floor" in args.only:
        # The model's own pace: no database, no run, the SDK on the event loop (a thread each
        # would cap it at 32 streams); what any server on this stack could reach here.
        floor_bench = copy.copy(bench)
        floor_bench.args = argparse.Namespace(**{**vars(args), "site_env": [*args.site_env, "FLOOR_CLIENT=async"]})
        out.append(("floor", floor_server(floor_bench, model)))
    return out


def ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value / 1000:.1f} s" if value >= 1000 else f"{value:.0f} ms"


def markdown(results: list[dict]) -> str:
    lines = [
        "| db | server | c | runs/s | first byte (1st SSE event) p50 / p95 | first RunContent p50 / p95 "
        "| whole run p50 | errors | server CPU % | CPU ms/run | RSS / peak MiB | other work % |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        if "failed" in r:
            lines.append(f"| {r['database']} | {r['server']} | {r['concurrency']} | failed: {r['failed'][:120]} |"
                         + " |" * 8)
            continue
        errors = str(r["errors"]) + (f" ({', '.join(f'{k} {v}' for k, v in r['errors_by_kind'].items())})"
                                     if r["errors"] else "")
        lines.append(
            f"| {r['database']} | {r['server']} | {r['concurrency']} | {r['runs_per_s']} "
            f"| {ms(r['first_event_p50_ms'])} / {ms(r['first_event_p95_ms'])} "
            f"| {ms(r['first_content_p50_ms'])} / {ms(r['first_content_p95_ms'])} "
            f"| {ms(r['run_p50_ms'])} | {errors} | {r['server_cpu_pct']} | {r['server_cpu_ms_per_run']} "
            f"| {r['server_rss_mib']:.0f} / {r['server_peak_rss_mib']:.0f} "
            f"| {r['other_cpu_pct']}{' (disturbed)' if r['disturbed'] else ''} |"
        )
    return "\n".join(lines)


def medians(results: list[dict]) -> list[dict]:
    """Per database and server, the median of each figure over its undisturbed rounds (all if none)."""
    groups: dict[tuple, list[dict]] = {}
    for r in results:
        if "failed" not in r:
            groups.setdefault((r["database"], r["server"], r["concurrency"]), []).append(r)
    out = []
    for rounds in groups.values():
        used = [r for r in rounds if not r["disturbed"]] or rounds
        merged = {**used[0], "rounds": len(rounds), "rounds_used": len(used)}
        for name, value in used[0].items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                values = [r[name] for r in used if r[name] is not None]
                merged[name] = round(statistics.median(values), 2) if values else None
        merged["errors"] = sum(r["errors"] for r in rounds)
        merged["disturbed"] = all(r["disturbed"] for r in rounds)
        out.append(merged)
    return out


def parse_args() -> argparse.Namespace:
    names = lambda text: [part for part in text.split(",") if part]  # noqa: E731
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=["sqlite"], type=names, help="sqlite, postgres or both (default sqlite)")
    parser.add_argument("--only", default=["agentos", "site"], type=names,
                        help="agentos, site, floor (bench/floor.py: the model's own pace on this stack) (default agentos,site)")
    parser.add_argument("--concurrency", type=int, default=256, help="streams in flight (default 256)")
    parser.add_argument("--duration", type=float, default=20.0, help="measured seconds (default 20)")
    parser.add_argument("--warmup", type=float, default=5.0, help="uncounted seconds first (default 5)")
    parser.add_argument("--run-threads", default=[32, 512], type=lambda t: [int(n) for n in names(t)],
                        help="Agno Site's RUN_THREADS, one measurement each (default 32,512)")
    parser.add_argument("--repeat", type=int, default=1, help="rounds; the servers alternate")
    parser.add_argument("--first-token-ms", type=float, default=2000.0)
    parser.add_argument("--token-ms", type=float, default=100.0)
    parser.add_argument("--first-token-jitter", type=float, default=0.0, metavar="J",
                        help="each first-token wait uniform in (1 ± J) times --first-token-ms (default 0: every "
                             "answer takes the same time, so streams started together stay in step)")
    parser.add_argument("--streams-per-client", type=int, default=16, help="streams per httpx client (default 16)")
    parser.add_argument("--venv", default=os.environ.get("BENCH_VENV", "/tmp/agentos-bench-venv"))
    parser.add_argument("--site-env", action="append", default=[], metavar="KEY=VALUE",
                        help="extra environment for Agno Site (repeatable)")
    parser.add_argument("--on-disk", action="store_true",
                        help="SQLite files on disk and PostgreSQL commits flushed (default: neither)")
    parser.add_argument("--keep", action="store_true", help="keep the work folders (logs, SQLite files)")
    args = parser.parse_args()
    bad = set(args.db) - {"sqlite", "postgres"} or set(args.only) - {"agentos", "site", "floor"}
    if bad:
        parser.error(f"unknown: {', '.join(sorted(bad))}")
    return args


def main() -> None:
    if "--load" in sys.argv[1:]:
        load_main(sys.argv[1:])
        return
    args = parse_args()
    benches = {db: Bench(argparse.Namespace(**{**vars(args), "db": db})) for db in args.db}
    first = next(iter(benches.values()))
    port = free_port()
    model_command = [sys.executable, "-m", "bench.fake_openai", "--port", str(port),
                     "--first-token-ms", str(args.first_token_ms), "--token-ms", str(args.token_ms),
                     "--first-token-jitter", str(args.first_token_jitter)]
    model = Model(process=first.start("fake-openai", model_command, pin=first.client_pin),
                  url=f"http://127.0.0.1:{port}")
    results: list[dict] = []
    loadavg_before = os.getloadavg()
    try:
        first.wait_healthy("fake-openai", model.process, model.url)
        for _ in range(args.repeat):
            for db, bench in benches.items():
                for label, server in variants(bench, model):
                    try:
                        results.append(measure(bench, label, server, model))
                    except (ServerFailed, subprocess.CalledProcessError) as exc:
                        print(f"{label}: {exc}", file=sys.stderr, flush=True)
                        results.append({"server": label, "database": db, "concurrency": args.concurrency,
                                        "failed": str(exc)[:2000]})
    finally:
        stop(model.process)
        for bench in benches.values():
            bench.drop_databases()
    report = {
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "pinning": first.pinning,
        "durability": {db: bench.durability for db, bench in benches.items()},
        "settings": {k: v for k, v in vars(args).items() if k != "keep"},
        "model": f"bench.fake_openai, {args.first_token_ms:g} ms (± {args.first_token_jitter:.0%}) to the first token, then {args.token_ms:g} ms a token",
        "machine": {"cpus": os.cpu_count(), "loadavg_before": loadavg_before, "loadavg_after": os.getloadavg()},
        "agno_site_revision": git_revision(),
        "servers": {
            "agentos": "agno 3.1.10 AgentOS, uvicorn (uvloop, httptools), 1 worker",
            "site-threads-N": "Agno Site ASGI, uvicorn, 1 worker, --lifespan off, RUN_THREADS=N, other settings default",
        },
        "rounds": results,
        "medians": medians(results) if args.repeat > 1 else None,
    }
    RESULTS_DIR.mkdir(exist_ok=True)
    out = RESULTS_DIR / f"slow_streams_{'_'.join(args.db)}_c{args.concurrency}_{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\n## {args.concurrency} streams in flight, {args.duration:g} s (after {args.warmup:g} s of warm-up)\n")
    print(markdown(results))
    if args.repeat > 1:
        print("\nMedians over undisturbed rounds:\n")
        print(markdown(report["medians"]))
    disturbed = [f"{r['database']} {r['server']}" for r in results if r.get("disturbed")]
    if disturbed:
        print(f"\nDisturbed (other work above {DISTURBED_PCT} % of a core): {', '.join(disturbed)}.")
    print(f"\n{first.pinning}. Load average before/after: {loadavg_before[0]:.2f}/{os.getloadavg()[0]:.2f}. "
          f"Results: {out}")
    for bench in benches.values():
        bench.finish()


if __name__ == "__main__":
    main()
