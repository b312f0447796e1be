"""Durable background runs beside AgentOS 3.1.10: accepted/s, accept-to-start, completed/s per worker.

    bash bench/agentos_reference/setup.sh        # once (run by this script if the venv is missing)
    .venv/bin/python -m bench.background [--runs 600] [--concurrency 8] [--paced-rate 10 --paced-seconds 10]
        [--only agentos-sqlite,agentos-postgres,embedded,celery-1,celery-2,celery-1-threads,celery-2-threads] [--profile celery-1]
        [--first-token-ms 2000 --token-ms 100] [--in-flight 256] [--redis-url redis://127.0.0.1:6379/13]
    .venv/bin/python -m bench.background --runs 1000 --concurrency 32 --first-token-ms 2000 --token-ms 100 \
        --only agentos-postgres,celery-1      # issue 18: one worker process on the slow model

Configurations, each on a fresh database and after a warm-up, one after the other:

* ``agentos-sqlite``, ``agentos-postgres``: bench/agentos_reference/app.py; ``background=true``
  runs are asyncio tasks of the server process (cap ``AGNO_BACKGROUND_MAX_CONCURRENCY``, default 32).
* ``embedded``: Agno Site without ``REDIS_URL``: the web process runs its job loop (up to
  ``WORKER_RUNS_PER_PROCESS`` jobs at once), as ``make run`` does. SQLite.
* ``celery-1``, ``celery-2``: Agno Site with ``REDIS_URL`` (--redis-url, default Redis db 13, flushed): the web process
  only accepts; one or two ``celery -P solo`` workers execute. PostgreSQL.
* ``celery-1-threads``, ``celery-2-threads``: as ``celery-1`` and ``celery-2``, each worker with
  ``-P threads -c 2``.

The model is bench.fake_openai: instant by default; ``--first-token-ms``/``--token-ms`` make it the
slow model of bench.slow_streams (2000/100: a whole answer after about 3 s). On the slow model a
worker has many runs in flight at once (``--in-flight``: Agno Site's ``WORKER_RUNS_PER_PROCESS``,
and AgentOS's ``AGNO_BACKGROUND_MAX_CONCURRENCY`` in place of its default 32), and Agno Site's
queue caps are raised to the burst's size so that they never refuse or hold back a run.

SQLite files live on tmpfs and PostgreSQL commits with synchronous_commit=off (bench.compare's
databases), so the figures follow CPU cost, not this VM's fsync.

Scenarios:

* ``burst``: --runs runs, a fresh session each, sent at --concurrency as fast as possible:
  accepted/s (202 answers per second over the submission; anything else is an error). Then until
  every run has finished: completed/s and accept-to-start p50/p99 (once a backlog builds, that is
  the time runs wait in line). AgentOS and the embedded worker execute in the process that
  accepts, on the same core, while it accepts: completed/s = runs / (last finish - first
  submission). Celery workers are frozen (SIGSTOP) while the burst is submitted and thawed
  (SIGCONT) once every run is accepted, so the web process's accept rate and the workers' drain
  rate are each measured without the other on its core: completed/s = runs / (last finish - thaw).
* ``paced``: --paced-rate runs/s for --paced-seconds, everything live: accept-to-start and
  accept-to-finish at a load every configuration sustains.

Pinning (taskset, two CPUs): the server on CPU 0; this script (load generator and timing reader)
and bench.fake_openai on CPU 1, as in bench.compare; one Celery worker on CPU 1, two on CPU 0
and CPU 1 (the web process and the load generator idle while frozen workers drain). PostgreSQL
and Redis are not pinned. CPU time is read from /proc for the server, the workers, PostgreSQL's
backends connected to the bench database, redis-server and the model server. On PostgreSQL the
bench database's connections are counted per process (pg_stat_activity by application_name, which
each process sets through PGAPPNAME) every --connections-interval during the burst: the most held
at once while accepting and while draining, against the pool of each process (DB_POOL_MAX_SIZE).

Timings: Agno Site's come from its job table (agno_jobs created_at, started_at, completed_at:
exact). AgentOS stores whole seconds only, so this script watches its agno_runs table every
--watch-interval (PENDING -> RUNNING -> COMPLETED); accepted = arrival of the 202. Resolution:
the watch interval. --profile CONFIG adds an unmeasured burst with py-spy (--gil, raw format) on
the executing process. Results: bench/results/background_<time>.json and markdown tables.

Parts: bench.background_load (submitting), bench.background_record (timings, CPU time),
bench.background_deploy (the configurations' processes), bench.background_profile (py-spy).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .background_deploy import CONFIGS, REDIS_URL, Config, Deployment
from .background_load import Submission, run_async, submit_burst, submit_paced
from .background_profile import profile_summary, start_profiler, stop_profiler
from .background_record import ConnectionSampler, CpuSampler, RunTiming
from .compare import ROOT, Bench, Model, ServerFailed, free_port, git_revision, stop
from .http_load import RESULTS_DIR, cpu_busy_seconds, cpus_allowed, percentile

# Above this 1-minute load average before the start, other work is running: wait for it.
QUIET_LOADAVG = 1.5
# Between configurations, other work above this (in CPUs) is waited for (--quiet-wait).
IDLE_CPUS = 0.10
# Above this share of a CPU used by other work during a burst, its figures are flagged as disturbed.
DISTURBED_PCT = 15


def _per_run_ms(seconds: float, runs: int) -> float | None:
    return round(1000 * seconds / runs, 2) if runs else None


def _busy_pct(delta: dict[str, Any]) -> list[float]:
    return [round(100 * busy / delta["elapsed"], 1) for busy in delta["busy"]] if delta["elapsed"] > 0 else []


def _latency_ms(values: list[float]) -> tuple[float | None, float | None]:
    return percentile(values, 0.50), percentile(values, 0.99)


def _timing_figures(timings: list[RunTiming]) -> dict[str, Any]:
    to_start = [t.started - t.accepted for t in timings if t.started is not None]
    to_finish = [t.finished - t.accepted for t in timings if t.finished is not None]
    statuses: dict[str, int] = {}
    for t in timings:
        statuses[t.status] = statuses.get(t.status, 0) + 1
    p50, p99 = _latency_ms(to_start)
    f50, f99 = _latency_ms(to_finish)
    return {
        "completed": statuses.get("COMPLETED", 0),
        "run_statuses": statuses,
        "accept_to_start_p50_ms": p50, "accept_to_start_p99_ms": p99,
        "accept_to_finish_p50_ms": f50, "accept_to_finish_p99_ms": f99,
        "timed_runs": len(to_start),
    }


def _in_flight_figures(timings: list[RunTiming], window_start: float) -> dict[str, Any]:
    """How many runs executed at once (the most, from their start and finish times), and when the
    first and the last run started after the window opened: on the slow model, a worker that
    carries its runs side by side has many in flight; one that claims too slowly has few."""
    spans = [(t.started, t.finished) for t in timings if t.started is not None and t.finished is not None]
    if not spans:
        return {}
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    running = peak = 0
    for _, step in edges:
        running += step
        peak = max(peak, running)
    starts = sorted(start for start, _ in spans)
    return {
        "peak_running": peak,
        "first_start_after_s": round(starts[0] - window_start, 3),
        "last_start_after_s": round(starts[-1] - window_start, 3),
        "run_p50_ms": percentile([end - start for start, end in spans], 0.50),
    }


def _submission_figures(submissions: list[Submission]) -> dict[str, Any]:
    accepted = [s for s in submissions if s.run_id]
    window = max(s.received for s in submissions) - min(s.sent for s in submissions)
    p50, p99 = _latency_ms([s.received - s.sent for s in accepted])
    return {
        "submitted": len(submissions),
        "accepted": len(accepted),
        "errors": len(submissions) - len(accepted),
        "accept_window_s": round(window, 3),
        "accepted_per_s": round(len(accepted) / window, 2) if window > 0 else None,
        "accept_p50_ms": p50, "accept_p99_ms": p99,
        "error_samples": sorted({s.error for s in submissions if s.error})[:5],
    }


def burst(deployment: Deployment, args: argparse.Namespace, profile_to: Path | None = None) -> dict[str, Any]:
    """--runs runs as fast as --concurrency allows, then until all have finished."""
    sampler, frozen = deployment.sampler, bool(deployment.workers)
    if frozen:
        deployment.freeze()
    connections = (
        ConnectionSampler(deployment.db.postgres_name, deployment.reader.backend_pids, args.connections_interval)
        if deployment.db.postgres_name else None
    )
    redis_before = deployment.redis_stats()
    # The profile covers execution: from the thaw for frozen workers, else from the first submission.
    profiler = start_profiler(deployment, profile_to) if profile_to and not frozen else None
    before = sampler.sample()
    submissions = run_async(submit_burst(deployment.base_url, args.runs, args.concurrency))
    accepted_sample = sampler.sample()
    if profile_to and frozen:
        profiler = start_profiler(deployment, profile_to)
    thawed_at = None
    if frozen:
        thawed_at = time.time()
        deployment.thaw()
    finished = deployment.wait_finished(args.drain_deadline)
    done_sample = sampler.sample()
    if connections is not None:
        connections.close()
    if profiler is not None:
        stop_profiler(profiler)
    idle_s = deployment.wait_broker_idle()
    idle_sample = sampler.sample()
    redis_after = deployment.redis_stats()

    result = _submission_figures(submissions)
    accepted = [s for s in submissions if s.run_id]
    timings = deployment.reader.timings(accepted)
    result.update(_timing_figures(timings))
    result["all_finished"] = finished
    ends = [t.finished for t in timings if t.finished is not None]
    # Single-process configurations execute while they accept: their window opens with the first
    # submission. Frozen workers start at the thaw.
    window_start = thawed_at if frozen else min(s.sent for s in submissions)
    window = (max(ends) - window_start) if ends else None
    result["drain_window_s"] = round(window, 3) if window else None
    result["completed_per_s"] = round(result["completed"] / window, 2) if window else None
    result["execution_started_at"] = "thaw (workers frozen during submission)" if frozen else "first submission"
    result.update(_in_flight_figures(timings, window_start))

    runs = result["completed"]
    whole = CpuSampler.delta(before, done_sample)
    accept_phase = CpuSampler.delta(before, accepted_sample)
    drain = CpuSampler.delta(accepted_sample, done_sample)
    after = CpuSampler.delta(done_sample, idle_sample)
    cpu = {
        # The web process: while accepting (Celery: it does nothing else), or all along.
        "server_ms_per_run": _per_run_ms(accept_phase["server"] if frozen else whole["server"], runs),
        "workers_ms_per_run": _per_run_ms(whole["workers"], runs) if frozen else None,
        "postgres_ms_per_run": _per_run_ms(whole["postgres"], runs),
        "redis_ms_per_run": _per_run_ms(whole.get("redis", 0.0), runs),
        "model_ms_per_run": _per_run_ms(whole["model"], runs),
        "busy_pct_per_cpu_accepting": _busy_pct(accept_phase),
        "busy_pct_per_cpu_draining": _busy_pct(drain) if frozen else _busy_pct(whole),
        "other_cpu_pct": whole["other_cpu_pct"],
    }
    cpu["server_side_ms_per_run"] = _per_run_ms(
        sum(whole[name] for name in ("server", "workers", "postgres") ) + whole.get("redis", 0.0), runs
    )
    if frozen:
        cpu["server_ms_while_draining"] = round(1000 * drain["server"], 1)
        # The workers' CPU while draining, in % of one core (each worker process is one core's worth).
        cpu["workers_pct_draining"] = round(100 * drain["workers"] / drain["elapsed"], 1) if drain["elapsed"] else None
        # After the last run: the drain_queue messages sent per accepted run, each claiming nothing.
        cpu["leftover_tasks_s"] = None if idle_s is None else round(idle_s, 2)
        cpu["workers_ms_on_leftover_tasks"] = round(1000 * after["workers"], 1)
    result["cpu"] = cpu
    if redis_before and runs:
        # Connections Redis accepted and commands it ran, per run, burst and leftover tasks included.
        result["redis_per_run"] = {
            name: round((redis_after[name] - redis_before[name]) / runs, 2) for name in redis_before
        }
    result["stored_events_per_run"] = deployment.events_per_run()
    if connections is not None:
        # Accepting: from the first submission to the last 202; draining: from then (the thaw) to
        # the last run's end. Every process's pool is DB_POOL_MAX_SIZE (10 by default).
        last_accept = max(s.received for s in submissions)
        result["postgres_connections"] = {
            "interval_s": args.connections_interval,
            "accepting": connections.peaks(min(s.sent for s in submissions), last_accept),
            "draining": connections.peaks(last_accept, max(ends) if ends else time.time()),
        }
    return result


def paced(deployment: Deployment, args: argparse.Namespace) -> dict[str, Any]:
    before = deployment.sampler.sample()
    submissions = run_async(submit_paced(deployment.base_url, args.paced_rate, args.paced_seconds))
    finished = deployment.wait_finished(args.drain_deadline)
    done_sample = deployment.sampler.sample()
    deployment.wait_broker_idle()
    result = _submission_figures(submissions)
    result["rate_per_s"] = args.paced_rate
    result.update(_timing_figures(deployment.reader.timings([s for s in submissions if s.run_id])))
    result["all_finished"] = finished
    whole = CpuSampler.delta(before, done_sample)
    runs = result["completed"]
    result["cpu"] = {
        "server_ms_per_run": _per_run_ms(whole["server"], runs),
        "workers_ms_per_run": _per_run_ms(whole["workers"], runs) if deployment.workers else None,
        "postgres_ms_per_run": _per_run_ms(whole["postgres"], runs),
        "redis_ms_per_run": _per_run_ms(whole.get("redis", 0.0), runs),
        "busy_pct_per_cpu": _busy_pct(whole),
        "other_cpu_pct": whole["other_cpu_pct"],
    }
    return result


def warm_up(deployment: Deployment, args: argparse.Namespace) -> dict[str, Any]:
    submissions = run_async(submit_burst(deployment.base_url, args.warmup_runs, args.concurrency))
    if not any(s.run_id for s in submissions):
        raise ServerFailed(f"no warm-up run was accepted: {submissions[0].error}")
    deployment.wait_finished(args.drain_deadline)
    deployment.wait_broker_idle()
    figures = _timing_figures(deployment.reader.timings([s for s in submissions if s.run_id]))
    if not figures["completed"]:
        raise ServerFailed(f"no warm-up run completed: {figures['run_statuses']}")
    return {"runs": len(submissions), "run_statuses": figures["run_statuses"]}


def profile(deployment: Deployment, args: argparse.Namespace, stamp: str) -> dict[str, Any]:
    out = deployment.bench.work / f"profile_{deployment.config.name}"
    result = burst(deployment, args, profile_to=out)
    paths = sorted(deployment.bench.work.glob(f"profile_{deployment.config.name}.*.txt"))
    kept = []
    for path in paths:
        target = RESULTS_DIR / f"background_profile_{deployment.config.name}_{stamp}_{path.suffixes[-2][1:]}.txt"
        shutil.copyfile(path, target)
        kept.append(str(target.relative_to(ROOT)))
    return {"completed_per_s_while_profiled": result["completed_per_s"], "files": kept, **profile_summary(paths)}


# --- The whole benchmark -----------------------------------------------------------------------

def measure(bench: Bench, config: Config, model: Model, args: argparse.Namespace, stamp: str) -> dict[str, Any]:
    deployment = Deployment(bench, config, model, args)
    result: dict[str, Any] = {"config": asdict(config), "error": None}
    try:
        result["idle_check"] = wait_for_idle_cpus(args.quiet_wait)
        print(f"{config.name}: starting", file=sys.stderr, flush=True)
        deployment.start()
        result["pinning"] = {
            "server": cpus_allowed(deployment.server.pid),
            "workers": [cpus_allowed(w.pid) for w in deployment.workers],
            "load_generator": cpus_allowed(os.getpid()),
            "model": cpus_allowed(model.process.pid),
        }
        result["warmup"] = warm_up(deployment, args)
        result["burst"] = burst(deployment, args)
        b = result["burst"]
        print(f"{config.name}: burst accepted {b['accepted_per_s']}/s, completed {b['completed_per_s']}/s, "
              f"accept-to-start p50 {b['accept_to_start_p50_ms']} ms", file=sys.stderr, flush=True)
        result["paced"] = paced(deployment, args)
        p = result["paced"]
        print(f"{config.name}: paced {args.paced_rate}/s accept-to-start p50/p99 {p['accept_to_start_p50_ms']}"
              f"/{p['accept_to_start_p99_ms']} ms", file=sys.stderr, flush=True)
        if config.name in args.profile:
            result["profile"] = profile(deployment, args, stamp)
    except (ServerFailed, subprocess.CalledProcessError) as exc:
        print(f"{config.name}: {exc}", file=sys.stderr, flush=True)
        result["error"] = str(exc)
    finally:
        deployment.close()
    return result


def disturbed(result: dict[str, Any]) -> bool:
    return (result.get("burst", {}).get("cpu", {}).get("other_cpu_pct") or 0) > DISTURBED_PCT


def reference_for(config: Config, results: dict[str, dict]) -> dict | None:
    """The AgentOS measurement to compare with: on the same database if measured, else the other."""
    candidates = [f"agentos-{config.db}", "agentos-sqlite", "agentos-postgres"]
    for name in candidates:
        measured = results.get(name, {}).get("burst", {}).get("completed_per_s")
        if measured:
            return {"name": name, "completed_per_s": measured,
                    "accepted_per_s": results[name]["burst"]["accepted_per_s"]}
    return None


def ratios(results: dict[str, dict]) -> dict[str, dict]:
    out = {}
    for name, result in results.items():
        burst_result = result.get("burst")
        if not burst_result or not burst_result.get("completed_per_s"):
            continue
        config = CONFIGS[name]
        per_worker = burst_result["completed_per_s"] / max(1, config.workers)
        row = {"completed_per_s_per_worker": round(per_worker, 2)}
        reference = reference_for(config, results)
        if reference and config.server == "site":
            row["agentos"] = reference["name"]
            row["per_worker_vs_agentos"] = round(per_worker / reference["completed_per_s"], 2)
            row["accepted_vs_agentos"] = round(burst_result["accepted_per_s"] / reference["accepted_per_s"], 2)
        out[name] = row
    return out


def fmt(value: Any) -> str:
    return "–" if value is None else f"{value:g}" if isinstance(value, (int, float)) else str(value)


def tables(results: dict[str, dict], rows: dict[str, dict], args: argparse.Namespace) -> str:
    lines = [
        f"Burst: {args.runs} runs at concurrency {args.concurrency}, then until all finished.\n",
        "| configuration | accepted/s | 202 p50 / p99 ms | errors | completed/s | per worker (core) "
        "| × AgentOS per worker | × AgentOS accepted/s | accept→start p50 / p99 ms | not COMPLETED |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, result in results.items():
        title = CONFIGS[name].title
        if "burst" not in result:
            lines.append(f"| {title} | not measured: {(result['error'] or '')[:100]} |" + " |" * 8)
            continue
        b, r = result["burst"], rows.get(name, {})
        lines.append(
            f"| {title} | {fmt(b['accepted_per_s'])} | {fmt(b['accept_p50_ms'])} / {fmt(b['accept_p99_ms'])} "
            f"| {b['errors']} | {fmt(b['completed_per_s'])} | {fmt(r.get('completed_per_s_per_worker'))} "
            f"| {fmt(r.get('per_worker_vs_agentos'))} | {fmt(r.get('accepted_vs_agentos'))} "
            f"| {fmt(b['accept_to_start_p50_ms'])} / {fmt(b['accept_to_start_p99_ms'])} "
            f"| {b['accepted'] - b['completed']} |"
        )
    lines += [
        "",
        f"Paced: {args.paced_rate:g} runs/s for {args.paced_seconds:g} s, everything live; "
        "CPU per run of the burst (server-side: web process + workers + PostgreSQL backends + Redis).\n",
        "| configuration | paced accept→start p50 / p99 ms | paced accept→finish p50 / p99 ms "
        "| paced 202 p50 / p99 ms | burst CPU ms/run: web / workers / PostgreSQL / Redis | server-side ms/run "
        "| CPU busy % (cpu0, cpu1) draining | other work, % of a CPU (burst / paced) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, result in results.items():
        if "burst" not in result or "paced" not in result:
            continue
        p, c = result["paced"], result["burst"]["cpu"]
        lines.append(
            f"| {CONFIGS[name].title} | {fmt(p['accept_to_start_p50_ms'])} / {fmt(p['accept_to_start_p99_ms'])} "
            f"| {fmt(p['accept_to_finish_p50_ms'])} / {fmt(p['accept_to_finish_p99_ms'])} "
            f"| {fmt(p['accept_p50_ms'])} / {fmt(p['accept_p99_ms'])} "
            f"| {fmt(c['server_ms_per_run'])} / {fmt(c['workers_ms_per_run'])} / {fmt(c['postgres_ms_per_run'])} "
            f"/ {fmt(c['redis_ms_per_run'])} | {fmt(c['server_side_ms_per_run'])} "
            f"| {', '.join(fmt(v) for v in c['busy_pct_per_cpu_draining'])} "
            f"| {fmt(c['other_cpu_pct'])} / {fmt(p['cpu']['other_cpu_pct'])} |"
        )
    lines += connection_table(results)
    flagged = [CONFIGS[name].title for name, result in results.items() if disturbed(result)]
    if flagged:
        lines.append(f"\nDisturbed: other work used more than {DISTURBED_PCT} % of a CPU during the burst of: "
                     f"{'; '.join(flagged)}. Rerun when the machine is quiet.")
    return "\n".join(lines)


def connection_table(results: dict[str, dict]) -> list[str]:
    """PostgreSQL connections the burst held at once (sampled), against a pool per process."""
    measured = {name: r["burst"]["postgres_connections"] for name, r in results.items()
                if r.get("burst", {}).get("postgres_connections")}
    if not measured:
        return []
    lines = [
        "",
        "PostgreSQL connections to the bench database during the burst, the most seen at once "
        "(all / per process: web, worker1, …), and the workers' CPU while draining.\n",
        "| configuration | accepting: all / per process | draining: all / per process | samples | workers' CPU draining, % of a core |",
        "|---|---|---|---|---|",
    ]
    for name, phases in measured.items():
        cells = []
        for phase in ("accepting", "draining"):
            peaks = phases[phase]
            per = ", ".join(f"{client} {n}" for client, n in peaks["peak_per_client"].items())
            cells.append(f"{fmt(peaks['peak_total'])} / {per or '–'}")
        samples = phases["accepting"]["samples"] + phases["draining"]["samples"]
        cpu = results[name]["burst"]["cpu"].get("workers_pct_draining")
        lines.append(f"| {CONFIGS[name].title} | {cells[0]} | {cells[1]} | {samples} | {fmt(cpu)} |")
    return lines


def other_cpu_busy(seconds: float = 1.0) -> float:
    """Busy CPU time of the whole machine per second, in CPUs (between configurations: all other work)."""
    cpus = range(os.cpu_count() or 1)
    before = sum(cpu_busy_seconds(cpu) for cpu in cpus)
    time.sleep(seconds)
    return (sum(cpu_busy_seconds(cpu) for cpu in cpus) - before) / seconds


def wait_for_idle_cpus(deadline_s: float) -> dict[str, Any]:
    """Before each configuration (none of its processes running): until other work uses < 10 % of a CPU."""
    started = time.monotonic()
    busy = other_cpu_busy()
    while busy > IDLE_CPUS and time.monotonic() - started < deadline_s:
        print(f"other work is using {100 * busy:.0f} % of a CPU; waiting for it to stop", file=sys.stderr, flush=True)
        busy = other_cpu_busy(5)
    return {"other_cpu_pct_before": round(100 * busy, 1), "waited_s": round(time.monotonic() - started, 1)}


def wait_for_quiet(deadline_s: float) -> dict[str, Any]:
    """Other work on the machine skews every figure: wait (up to a deadline) for it to stop."""
    started = time.monotonic()
    before = os.getloadavg()
    while os.getloadavg()[0] > QUIET_LOADAVG and time.monotonic() - started < deadline_s:
        time.sleep(5)  # the load average itself moves slowly
    waited = round(time.monotonic() - started, 1)
    now = os.getloadavg()
    if now[0] > QUIET_LOADAVG:
        print(f"load average still {now[0]:.2f} after {waited} s: other work is running, figures may be low",
              file=sys.stderr, flush=True)
    elif waited:
        print(f"waited {waited} s for the load average to fall below {QUIET_LOADAVG}", file=sys.stderr, flush=True)
    return {"loadavg_at_start": before, "waited_s": waited, "loadavg_before_measuring": now}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names = lambda text: [part for part in text.split(",") if part]  # noqa: E731
    parser.add_argument("--only", type=names, default=list(CONFIGS), help=f"configurations ({','.join(CONFIGS)})")
    parser.add_argument("--runs", type=int, default=600, help="runs per burst (default 600)")
    parser.add_argument("--concurrency", type=int, default=8, help="client concurrency of the burst (default 8)")
    parser.add_argument("--paced-rate", type=float, default=10.0, help="runs/s of the paced scenario (default 10)")
    parser.add_argument("--paced-seconds", type=float, default=10.0)
    parser.add_argument("--warmup-runs", type=int, default=40)
    parser.add_argument("--drain-deadline", type=float, default=300.0, help="seconds to wait for a burst to finish")
    parser.add_argument("--watch-interval", type=float, default=0.005, help="AgentOS table poll interval (s)")
    parser.add_argument("--profile", type=names, default=[], help="configurations to profile (an extra burst)")
    parser.add_argument("--first-token-ms", type=float, default=0.0,
                        help="the slow model: bench.fake_openai's wait before its answer's first token (default 0)")
    parser.add_argument("--token-ms", type=float, default=0.0,
                        help="the slow model: then this long a token, 10 tokens (default 0: the instant model)")
    parser.add_argument("--in-flight", type=int, default=256,
                        help="Agno Site's WORKER_RUNS_PER_PROCESS (default 256, its default); on the slow model "
                             "also AgentOS's AGNO_BACKGROUND_MAX_CONCURRENCY")
    parser.add_argument("--redis-url", default=REDIS_URL, help=f"Celery's broker, flushed (default {REDIS_URL})")
    parser.add_argument("--connections-interval", type=float, default=0.5,
                        help="PostgreSQL: seconds between two counts of the bench database's connections")
    parser.add_argument("--retries", type=int, default=1,
                        help=f"measure a configuration again when other work used > {DISTURBED_PCT} %% of a CPU")
    parser.add_argument("--quiet-wait", type=float, default=180.0,
                        help=f"seconds to wait for the load average to fall below {QUIET_LOADAVG}")
    parser.add_argument("--venv", default=os.environ.get("BENCH_VENV", "/tmp/agentos-bench-venv"))
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs, SQLite files)")
    args = parser.parse_args()
    unknown = set(args.only) - set(CONFIGS)
    if unknown:
        parser.error(f"unknown configurations: {', '.join(sorted(unknown))}")
    # What bench.compare.Bench reads: tmpfs SQLite and synchronous_commit=off PostgreSQL, no --site-env.
    args.db, args.on_disk, args.site_env = "sqlite", False, []
    args.slow = bool(args.first_token_ms or args.token_ms)
    return args


def main() -> None:
    args = parse_args()
    started = time.monotonic()
    stamp = time.strftime("%Y%m%dT%H%M%S")
    bench = Bench(args)
    if bench.client_pin:
        os.sched_setaffinity(0, {1})  # this process is the load generator: CPU 1, like bench.compare's
    quiet = wait_for_quiet(args.quiet_wait)
    port = free_port()
    model = Model(
        process=bench.start("fake-openai", [
            sys.executable, "-m", "bench.fake_openai", "--port", str(port),
            "--first-token-ms", str(args.first_token_ms), "--token-ms", str(args.token_ms),
        ], pin=bench.client_pin),
        url=f"http://127.0.0.1:{port}",
    )
    results: dict[str, dict] = {}
    try:
        bench.wait_healthy("fake-openai", model.process, model.url)
        for name in args.only:
            earlier: list[dict] = []
            for _ in range(1 + args.retries):
                result = measure(bench, CONFIGS[name], model, args, stamp)
                if not disturbed(result):
                    break
                print(f"{name}: other work used {result['burst']['cpu']['other_cpu_pct']} % of a CPU "
                      "during the burst", file=sys.stderr, flush=True)
                earlier.append(result)
            if earlier:
                result["disturbed_attempts"] = earlier if result is not earlier[-1] else earlier[:-1]
            results[name] = result
    finally:
        stop(model.process)
        bench.drop_databases()
    rows = ratios(results)
    report = {
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "agno_site_revision": git_revision(),
        "settings": {k: v for k, v in vars(args).items() if k not in ("site_env", "keep", "db", "on_disk")},
        "model": (f"bench.fake_openai, {args.first_token_ms:g} ms to the first token, then {args.token_ms:g} ms "
                  "a token" if args.slow else "bench.fake_openai, instant"),
        "machine": {"cpus": os.cpu_count(), **quiet, "loadavg_after": os.getloadavg()},
        "pinning": (
            "server (web process) on CPU 0; load generator, timing reader and fake model on CPU 1; Celery "
            "workers: one on CPU 1, two on CPU 0 and CPU 1; PostgreSQL and Redis unpinned"
            if bench.client_pin else "unpinned (needs taskset and two CPUs)"
        ),
        "durability": "SQLite on tmpfs; PostgreSQL with synchronous_commit=off",
        "timing_sources": {
            "agno_site": "agno_jobs created_at / started_at / completed_at",
            "agentos": f"202 arrival; agno_runs watched every {args.watch_interval * 1000:g} ms",
        },
        "results": results,
        "ratios": rows,
        "duration_s": round(time.monotonic() - started, 1),
    }
    RESULTS_DIR.mkdir(exist_ok=True)
    out = RESULTS_DIR / f"background_{'slow_' if args.slow else ''}{stamp}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print("\n" + tables(results, rows, args))
    for name, result in results.items():
        if result.get("profile"):
            prof = result["profile"]
            print(f"\nProfile of {name} (py-spy --gil, {prof['samples']} samples; "
                  f"{prof['off_main_thread_pct']} % off the main thread). Project code, inclusive %:")
            for frame, pct in prof["project_inclusive_pct"]:
                print(f"  {pct:5.1f}  {frame}")
            print("Leaf functions, self %:")
            for frame, pct in prof["self_pct"][:10]:
                print(f"  {pct:5.1f}  {frame}")
    print(f"\n{report['pinning']}. {report['durability']}. Load average before/after: "
          f"{quiet['loadavg_before_measuring'][0]:.2f}/{os.getloadavg()[0]:.2f}. "
          f"Took {report['duration_s']:.0f} s. Results: {out}")
    bench.finish()


if __name__ == "__main__":
    main()
