"""What Python's cyclic garbage collector costs a run, with Python's settings and with the
server's (core.collector), alternating in one process.

    .venv/bin/python -m bench.collector [--db sqlite|postgres] [--runs 2000] [--rounds 3] [--concurrency 8]

Non-streamed runs of bench.compare's agent on the instant model (bench.fake_openai, on CPU 1),
through ``agno_site.asgi.application`` in this process (on CPU 0), ``--concurrency`` at a time,
each in a new session of one of seven users. Each round measures ``--runs`` runs under Python's
defaults (700 allocations for the young generation, nothing frozen), then as many under
``core.collector.collector_tune``. The collector's own time is read from ``gc.callbacks`` on the
clock of the thread it ran in, by generation; CPU per run is the process's. Results:
bench/results/collector_<db>.json.
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from .compare import free_port, site_environment
from .inprocess_http import pin, request, wait_listening

PYTHON_DEFAULTS = (700, 10, 10)


class CollectorClock:
    """The collector's passes and their CPU (the collecting thread's clock), by generation."""

    def __init__(self) -> None:
        self.started = 0.0
        self.reset()

    def reset(self) -> None:
        self.passes = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self.started = time.thread_time()
        else:
            self.passes[info["generation"]] += 1
            self.seconds[info["generation"]] += time.thread_time() - self.started


def settings_python() -> None:
    gc.unfreeze()
    gc.set_threshold(*PYTHON_DEFAULTS)


def settings_served() -> None:
    from core.collector import collector_tune

    collector_tune()


async def measure(application, runs: int, concurrency: int, clock: CollectorClock, offset: int) -> dict:
    numbers = iter(range(offset, offset + runs))

    async def client() -> None:
        for number in numbers:
            form = f"message=question+{number}&stream=false&user_id=bench-user-{number % 7}"
            status, body = await request(application, "POST", "/agents/bench-agent/runs", form.encode())
            if status != 200:
                raise SystemExit(f"HTTP {status}: {body[:300]!r}")

    clock.reset()
    started = time.process_time()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    await asyncio.sleep(0.3)  # the last runs' ends, written by the watch
    cpu = time.process_time() - started
    return {
        "cpu_ms_per_run": round(1000 * cpu / runs, 3),
        "collector_ms_per_run": round(1000 * sum(clock.seconds) / runs, 4),
        "passes": list(clock.passes),
        "collector_ms_by_generation": [round(1000 * seconds, 1) for seconds in clock.seconds],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()

    port = free_port()
    two_cores = (os.cpu_count() or 1) >= 2
    model = subprocess.Popen((["taskset", "-c", "1"] if two_cores else []) + [sys.executable, "-m", "bench.fake_openai", "--port", str(port)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rounds: dict[str, list[dict]] = {"python": [], "served": []}
    try:
        wait_listening(port)
        pin(0)
        os.environ.update(site_environment(f"http://127.0.0.1:{port}"))
        from ._django import bench_database

        with bench_database(args.db, under="/dev/shm" if Path("/dev/shm").is_dir() else None) as url:
            os.environ["DATABASE_URL"] = url
            import django
            from django.core.management import call_command

            django.setup()
            call_command("migrate", verbosity=0, interactive=False)
            from agno_site.asgi import application

            import uvloop

            clock = CollectorClock()
            gc.callbacks.append(clock)

            async def all_rounds() -> None:
                await measure(application, 200, args.concurrency, clock, 0)  # warm-up: imports, caches, statements
                offset = 1000
                for _ in range(args.rounds):
                    for name, apply in (("python", settings_python), ("served", settings_served)):
                        apply()
                        rounds[name].append(await measure(application, args.runs, args.concurrency, clock, offset))
                        offset += args.runs
                        print(name, rounds[name][-1], flush=True)

            uvloop.run(all_rounds())
            from django.db import connections

            connections.close_all()
    finally:
        model.terminate()
        model.wait(10)
    summary = {
        name: {key: statistics.median(r[key] for r in results) for key in ("cpu_ms_per_run", "collector_ms_per_run")}
        for name, results in rounds.items()
    }
    report = {"db": args.db, "runs": args.runs, "concurrency": args.concurrency, "rounds": rounds, "medians": summary}
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / f"collector_{args.db}.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
