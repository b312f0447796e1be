"""A broadcast team of 3 members on the slow model: one run's wall time, then 100 runs at once.

    bash bench/agentos_reference/setup.sh        # once (run by bench.compare's helpers if missing)
    .venv/bin/python -m bench.team_broadcast [--db sqlite|postgres] [--only agentos,site]
        [--runs 3] [--concurrency 100] [--stream] [--leader-ms 500:50]
        [--member-ms 1000:100,1500:100,2000:100]

The team is bench/team_agents.py (Agno Site) and its twin in bench/agentos_reference/app.py
(``--broadcast-team``, AgentOS 3.1.10's ``TeamMode.broadcast``): a leader and three members, each
on a model id of its own. bench.fake_openai paces each id (``--model-delay``: the time to the first
token, then 9 more tokens that far apart) and scripts the leader's first turn as a call to
``delegate_task_to_members`` (``--call-tool``); the leader's second turn, which carries the
members' answers as the tool result, is a plain answer. So one team run is, at best: the leader's
tool-calling turn, the slowest member, the leader's answer; the members run concurrently or the
run takes their sum.

1. ``--runs`` team runs one after the other (after one uncounted warm-up run): each run's wall
   time against that best case (**target ≤ 1.2×**). Each run is checked: HTTP 200, the team run
   COMPLETED (``TeamRunCompleted`` when streamed) and five model calls served for it (two by the
   leader, one per member, from the model's ``/stats``).
2. ``--concurrency`` team runs posted at once, each a user and session of its own (Agno Site's
   per-user cap is 8 runs in flight): the wall time until the last one ends, per-run p50 / max,
   errors (non-200, a run not COMPLETED, connection errors), the model calls served (5 per run),
   and the server's thread count (``Threads:`` of /proc/PID/status) sampled every 50 ms, before
   the burst and while its runs wait on the model. A thread per member would show as about
   3 × concurrency threads.

bench.compare's servers, databases and pinning: one uvicorn worker each (Agno Site with its
default settings, ``RUN_THREADS=32``), a fresh database per server, the server on CPU 0, the model
and this script (the load) on CPU 1. Runs are non-streamed unless ``--stream``. Results:
bench/results/team_broadcast_<time>.json and a markdown table.
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

from .compare import Bench, Model, ServerFailed, agentos_server, free_port, git_revision, site_server, stop
from .http_load import RESULTS_DIR, cpu_busy_seconds, cpu_seconds, percentile, pinned_cpu
from .team_agents import LEADER_MODEL, MEMBER_MODELS, TEAM_ID

TOOL_ARGUMENTS = json.dumps({"task": "Answer the user's question in one short paragraph."})
MODEL_CALLS_PER_RUN = 2 + len(MEMBER_MODELS)
THREAD_SAMPLE_S = 0.05
TIMEOUT_S = 120


@dataclasses.dataclass(frozen=True)
class Pace:
    first_ms: float
    token_ms: float

    @classmethod
    def parse(cls, text: str) -> Pace:
        first, _, token = text.partition(":")
        return cls(float(first), float(token or 0))

    @property
    def answer_s(self) -> float:
        """A ten-token answer: the first token, then nine more."""
        return (self.first_ms + 9 * self.token_ms) / 1000

    def __str__(self) -> str:
        return f"{self.first_ms:g}:{self.token_ms:g}"


def best_case_s(leader: Pace, members: list[Pace]) -> float:
    """The leader's tool call (one chunk after its first-token wait), the slowest member, the leader's answer."""
    return leader.first_ms / 1000 + max(member.answer_s for member in members) + leader.answer_s


def threads(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    raise ValueError(f"no Threads: in /proc/{pid}/status")


async def completions_served(client: httpx.AsyncClient, model: Model) -> int:
    return (await client.get(f"{model.url}/stats")).json()["completions"]


def core_busy_s(pid: int) -> float | None:
    """Busy seconds of the one CPU the server is pinned to (None if it is not pinned)."""
    cpu = pinned_cpu(pid)
    return None if cpu is None else cpu_busy_seconds(cpu)


async def team_run(client: httpx.AsyncClient, url: str, number: int, stream: bool) -> dict:
    """One team run; ``error`` is None when it answered 200 and the team run COMPLETED."""
    form = {"message": f"Benchmark question {number}", "stream": "true" if stream else "false",
            "user_id": f"bench-user-{number}", "session_id": f"team-{number}-{os.urandom(4).hex()}"}
    started = time.perf_counter()
    record: dict = {"error": None}
    try:
        if stream:
            async with client.stream("POST", url, data=form) as response:
                body = (await response.aread()).decode(errors="replace")
            completed = "event: TeamRunCompleted" in body and "event: TeamRunError" not in body
        else:
            response = await client.post(url, data=form)
            body = response.text
            completed = response.status_code == 200 and response.json().get("status") == "COMPLETED"
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
    best = best_case_s(args.leader_ms, args.member_ms)
    await team_run(client, url, -1, args.stream)  # warm-up: imports, first connections, first writes
    runs = []
    for number in range(args.runs):
        before = await completions_served(client, model)
        record = await team_run(client, url, number, args.stream)
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


async def burst(client: httpx.AsyncClient, url: str, model: Model, pid: int, args: argparse.Namespace) -> dict:
    idle_threads = threads(pid)
    samples: list[int] = []
    done = asyncio.Event()

    async def sample() -> None:
        while not done.is_set():
            samples.append(threads(pid))
            await asyncio.sleep(THREAD_SAMPLE_S)

    served_before, cpu_before, core_before = await completions_served(client, model), cpu_seconds(pid), core_busy_s(pid)
    await client.post(f"{model.url}/stats/reset")
    sampler = asyncio.create_task(sample())
    started = time.perf_counter()
    records = await asyncio.gather(*(team_run(client, url, 1000 + n, args.stream) for n in range(args.concurrency)))
    wall = time.perf_counter() - started
    done.set()
    await sampler
    cpu, core_after = cpu_seconds(pid) - cpu_before, core_busy_s(pid)
    stats = (await client.get(f"{model.url}/stats")).json()
    served = stats["completions"] - served_before
    errors: dict[str, int] = {}
    for record in records:
        if record["error"]:
            errors[record["error"]] = errors.get(record["error"], 0) + 1
    ok = [r["wall_s"] for r in records if r["error"] is None]
    return {
        "concurrency": args.concurrency,
        "wall_s": round(wall, 3),
        "ratio_to_best_case": round(wall / best_case_s(args.leader_ms, args.member_ms), 3),
        "completed": len(ok),
        "errors": sum(errors.values()),
        "errors_by_kind": errors,
        "error_sample": next((r["detail"] for r in records if r["error"]), None),
        "run_p50_ms": percentile(ok, 0.50),
        "run_max_ms": percentile(ok, 1.0),
        "model_calls": served,
        "model_calls_expected": MODEL_CALLS_PER_RUN * args.concurrency,
        "threads_idle": idle_threads,
        "threads_during_min": min(samples),
        "threads_during_median": statistics.median(samples),
        "threads_during_max": max(samples),
        "thread_samples": len(samples),
        "model_peak_in_flight": stats.get("peak_in_flight"),
        "server_cpu_s": round(cpu, 2),
        "server_cpu_pct": round(100 * cpu / wall, 1),
        # The server's core busy with anything but the server (other engineers' work, the kernel).
        "other_work_on_server_core_pct": None if core_before is None else round(100 * (core_after - core_before - cpu) / wall, 1),
        "server_cpu_ms_per_run": round(1000 * cpu / len(ok), 1) if ok else None,
    }


async def drive(base_url: str, model: Model, pid: int, args: argparse.Namespace) -> dict:
    url = f"{base_url}/teams/{TEAM_ID}/runs"
    limits = httpx.Limits(max_connections=args.concurrency + 2, max_keepalive_connections=args.concurrency + 2)
    async with httpx.AsyncClient(timeout=httpx.Timeout(TIMEOUT_S, connect=30), limits=limits) as client:
        single = await one_at_a_time(client, url, model, args)
        many = await burst(client, url, model, pid, args)
    return {"one_at_a_time": single, "burst": many}


def servers(bench: Bench, model: Model, only: list[str]):
    """(label, server) for each server measured: AgentOS with its broadcast team, Agno Site with ours."""
    if "agentos" in only:
        reference = agentos_server(bench, model)
        command = reference.command
        yield "agentos", dataclasses.replace(reference, command=lambda db, port: [*command(db, port), "--broadcast-team"])
    if "site" in only:
        yield "site", site_server(bench, model)


def measure(bench: Bench, label: str, server, model: Model, args: argparse.Namespace) -> dict:
    db = bench.database(label)
    server.prepare(db)
    port = free_port()
    process = bench.start(label, server.command(db, port), server.env(db))
    try:
        base_url = f"http://127.0.0.1:{port}"
        bench.wait_healthy(label, process, base_url)
        result = asyncio.run(drive(base_url, model, process.pid, args))
        result["server_survived"] = process.poll() is None
    finally:
        stop(process)
    result["server"] = label
    single, many = result["one_at_a_time"], result["burst"]
    print(f"{label}: one run {single['wall_median_s']} s (best case {single['best_case_s']} s, "
          f"{single['ratio']}x), {len(single['errors'])} errors; {many['concurrency']} at once: "
          f"{many['wall_s']} s, {many['errors']} errors {many['errors_by_kind']}, threads idle "
          f"{many['threads_idle']}, during {many['threads_during_min']}-{many['threads_during_max']}, model peak "
          f"{many['model_peak_in_flight']}, server CPU {many['server_cpu_pct']} %, other work on its core "
          f"{many['other_work_on_server_core_pct']} %",
          file=sys.stderr, flush=True)
    return result


def seconds(ms: float | None) -> str:
    return "–" if ms is None else f"{ms / 1000:.2f} s"


def member_peaks(burst: dict) -> str:
    peaks = burst.get("model_peak_in_flight") or {}
    return " / ".join(str(peaks.get(model, "–")) for model in MEMBER_MODELS)


def markdown(results: list[dict], args: argparse.Namespace) -> str:
    mode = "streamed" if args.stream else "non-streamed"
    lines = [
        f"| server ({args.db}, {mode}) | one run: wall p50 | / best case | {args.concurrency} at once: wall "
        "| run p50 / max | errors | model calls | member calls at once (peak) | threads idle → during (min–max) "
        "| server CPU ms/run | server's core: server / other work |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        if "failed" in r:
            lines.append(f"| {r['server']} | failed: {r['failed'][:120]} |" + " |" * 9)
            continue
        single, many = r["one_at_a_time"], r["burst"]
        errors = len(single["errors"]) + many["errors"]
        lines.append(
            f"| {r['server']} | {single['wall_median_s'] or '–'} s | **{single['ratio']}×** (of {single['best_case_s']} s) "
            f"| {many['wall_s']:.2f} s | {seconds(many['run_p50_ms'])} / {seconds(many['run_max_ms'])} | {errors} "
            f"| {many['model_calls']} / {many['model_calls_expected']} | {member_peaks(many)} "
            f"| {many['threads_idle']} → {many['threads_during_min']}–{many['threads_during_max']} "
            f"| {many['server_cpu_ms_per_run']} | {many['server_cpu_pct']} / {many['other_work_on_server_core_pct']} % |"
        )
    return "\n".join(lines)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="sqlite", choices=["sqlite", "postgres"])
    parser.add_argument("--only", default="agentos,site", type=lambda t: [p for p in t.split(",") if p],
                        help="agentos, site (default both)")
    parser.add_argument("--runs", type=int, default=3, help="team runs one at a time (default 3)")
    parser.add_argument("--concurrency", type=int, default=100, help="team runs at once (default 100)")
    parser.add_argument("--stream", action="store_true", help="streamed runs (default: stream=false)")
    parser.add_argument("--leader-ms", type=Pace.parse, default=Pace(500, 50), metavar="FIRST:TOKEN")
    parser.add_argument("--member-ms", default=[Pace(1000, 100), Pace(1500, 100), Pace(2000, 100)],
                        type=lambda t: [Pace.parse(p) for p in t.split(",")], metavar="FIRST:TOKEN,...")
    parser.add_argument("--venv", default=os.environ.get("BENCH_VENV", "/tmp/agentos-bench-venv"))
    parser.add_argument("--site-env", action="append", default=[], metavar="KEY=VALUE",
                        help="extra environment for Agno Site (repeatable)")
    parser.add_argument("--on-disk", action="store_true", help="SQLite files on disk and PostgreSQL commits flushed")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs, SQLite files)")
    args = parser.parse_args()
    if len(args.member_ms) != len(MEMBER_MODELS):
        parser.error(f"--member-ms needs {len(MEMBER_MODELS)} paces, one per member")
    if set(args.only) - {"agentos", "site"}:
        parser.error("--only takes agentos and site")
    args.site_env = ["AGENT_MODULES=bench.team_agents", *args.site_env]
    return args


def main() -> None:
    args = parse_args()
    bench = Bench(args)
    if bench.client_pin:
        os.sched_setaffinity(0, {int(bench.client_pin[-1])})  # the load shares the model's CPU
    port = free_port()
    model_command = [sys.executable, "-m", "bench.fake_openai", "--port", str(port),
                     "--model-delay", f"{LEADER_MODEL}={args.leader_ms}",
                     *[f"--model-delay={model}={pace}" for model, pace in zip(MEMBER_MODELS, args.member_ms)],
                     "--call-tool", f"delegate_task_to_members={TOOL_ARGUMENTS}"]
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
        "settings": {k: (str(v) if isinstance(v, Pace) else [str(p) for p in v] if k == "member_ms" else v)
                     for k, v in vars(args).items() if k != "keep"},
        "model": f"bench.fake_openai: leader {args.leader_ms} ms, members "
                 f"{', '.join(map(str, args.member_ms))} ms (first token:token), delegate_task_to_members scripted",
        "machine": {"cpus": os.cpu_count(), "loadavg_before": loadavg_before, "loadavg_after": os.getloadavg()},
        "agno_site_revision": git_revision(),
        "results": results,
    }
    RESULTS_DIR.mkdir(exist_ok=True)
    out = RESULTS_DIR / f"team_broadcast_{args.db}_{'stream' if args.stream else 'json'}_{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\n## Broadcast team of {len(MEMBER_MODELS)}: one run, then {args.concurrency} at once\n")
    print(markdown(results, args))
    print(f"\n{bench.pinning}. Load average before/after: {loadavg_before[0]:.2f}/{os.getloadavg()[0]:.2f}. "
          f"Results: {out}")
    bench.finish()


if __name__ == "__main__":
    main()
