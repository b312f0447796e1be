"""Where an HTTP run's CPU goes, in process: requests through the ASGI application itself.

    .venv/bin/python -m bench.inprocess_http [--requests 2000] [--busy] [--db sqlite|postgres]

Calls ``agno_site.asgi.application`` directly from an event loop (uvloop, as uvicorn runs it), with
no server and no network in front of it, against bench.fake_openai (an instant model, over
loopback) and the agent bench.compare serves. For each scenario it reports the CPU of this whole
process per request, and for runs the part spent in the run threads (the run's database phases)
and in the OpenAI SDK's call (``client.post``, awaited on the event loop; timed on the loop
thread's own CPU clock, which is fair here because requests go one at a time):

- ``health``: ``GET /health``, the least any request costs through Django;
- ``run``: ``POST /agents/bench-agent/runs``, ``stream=false``, each in a new session;
- ``run-shared``: the same, all in one session (three runs of history read and sent);
- ``stream``: ``stream=true``, each in a new session, the whole event stream read;
- ``sessions``: ``GET /sessions?limit=20&page=1`` over the sessions the runs before it made.

The process runs on CPU 0 and the model on CPU 1 when there are two. ``--busy`` also starts a
spinning process at the lowest priority on CPU 0: the core then never goes idle while a run waits
for its model, which shows what the idle and wake-up cycle itself costs on the machine (on the
virtual machines of bench/README.md, a good share of each run).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from .compare import free_port, site_environment

SCENARIOS = ("health", "run", "run-shared", "stream", "sessions")


class ThreadClock:
    """Sums a callable's CPU, measured on the calling thread's clock."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0
        self._lock = threading.Lock()

    def wrap(self, fn):
        def timed(*args, **kwargs):
            started = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = time.thread_time() - started
                with self._lock:
                    self.seconds += spent
                    self.calls += 1

        return timed

    def wrap_async(self, fn):
        """The same for a coroutine function: the calling thread's CPU from its start to its end."""

        async def timed(*args, **kwargs):
            started = time.thread_time()
            try:
                return await fn(*args, **kwargs)
            finally:
                spent = time.thread_time() - started
                with self._lock:
                    self.seconds += spent
                    self.calls += 1

        return timed

    def reset(self) -> None:
        with self._lock:
            self.seconds, self.calls = 0.0, 0


def instrument() -> tuple[ThreadClock, ThreadClock]:
    """Clocks on the run threads' jobs and on the SDK's call (wrapping, not replacing, either)."""
    from engine.models._common import LoopClients
    from jobs.services import executor

    jobs, sdk = ThreadClock(), ThreadClock()
    # Every job of the run threads goes through in_run_thread, which looks this name up at each call.
    executor.with_connection_care = jobs.wrap(executor.with_connection_care)
    # The provider's SDK clients are async, kept per event loop and handed out for each call by
    # LoopClients.take (engine.models._common); the call is client.post, awaited on the loop.
    take = LoopClients.take

    def timed_take(self):
        client, release = take(self)
        if not getattr(client, "_bench_timed", False):
            client.post = sdk.wrap_async(client.post)
            client._bench_timed = True
        return client, release

    LoopClients.take = timed_take
    return jobs, sdk


async def request(application, method: str, path: str, body: bytes = b"", query: bytes = b"") -> tuple[int, bytes]:
    sent: list[dict] = []
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive():
        if pending:
            return pending.pop()
        await asyncio.Event().wait()  # the client stays connected

    async def send(message):
        sent.append(message)

    headers = [(b"host", b"127.0.0.1")]
    if body:
        headers += [(b"content-type", b"application/x-www-form-urlencoded"), (b"content-length", str(len(body)).encode())]
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
        "path": path, "raw_path": path.encode(), "query_string": query, "root_path": "", "headers": headers,
        "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 7777),
    }
    await application(scope, receive, send)
    return sent[0]["status"], b"".join(message.get("body", b"") for message in sent[1:])


async def measure(application, scenario: str, count: int, jobs: ThreadClock, sdk: ThreadClock) -> dict:
    session_id = None

    async def one(index: int) -> bytes:
        if scenario == "health":
            status, body = await request(application, "GET", "/health")
        elif scenario == "sessions":
            status, body = await request(application, "GET", "/sessions", query=b"limit=20&page=1")
        else:
            form = f"message=question+{index}&stream={'true' if scenario == 'stream' else 'false'}"
            if session_id:
                form += f"&session_id={session_id}"
            status, body = await request(application, "POST", "/agents/bench-agent/runs", form.encode())
        if status != 200:
            raise SystemExit(f"{scenario}: HTTP {status}: {body[:300]!r}")
        return body

    first = await one(0)
    if scenario == "run-shared":
        session_id = json.loads(first)["session_id"]
    for index in range(min(200, count)):  # warm-up (and three runs of history for run-shared)
        await one(index)
    if scenario == "stream" and b"RunCompleted" not in first:
        raise SystemExit(f"stream: no RunCompleted in {first[:300]!r}")
    jobs.reset()
    sdk.reset()
    started_cpu, started_wall = time.process_time(), time.perf_counter()
    for index in range(count):
        await one(index)
    cpu, wall = time.process_time() - started_cpu, time.perf_counter() - started_wall
    result = {"scenario": scenario, "requests": count, "cpu_ms_per_request": round(1000 * cpu / count, 3), "wall_ms_per_request": round(1000 * wall / count, 3)}
    if scenario not in ("health", "sessions"):
        result["run_threads_cpu_ms"] = round(1000 * jobs.seconds / count, 3)
        result["sdk_call_cpu_ms"] = round(1000 * sdk.seconds / max(sdk.calls, 1), 3)
    return result


def wait_listening(port: int, seconds: float = 20.0) -> None:
    import socket

    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def pin(cpu: int) -> None:
    if hasattr(os, "sched_setaffinity") and cpu < (os.cpu_count() or 1):
        os.sched_setaffinity(0, {cpu})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--busy", action="store_true", help="keep this process's core from going idle")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    args = parser.parse_args()
    scenarios = [name for name in args.scenarios.split(",") if name]
    unknown = set(scenarios) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenario(s): {', '.join(sorted(unknown))}")

    two_cores = (os.cpu_count() or 1) >= 2
    port = free_port()
    model_command = [sys.executable, "-m", "bench.fake_openai", "--port", str(port)]
    model = subprocess.Popen((["taskset", "-c", "1"] if two_cores else []) + model_command)
    spinner = None
    try:
        wait_listening(port)
        pin(0)
        if args.busy:
            spinner = subprocess.Popen(["nice", "-n", "19", sys.executable, "-c", "import os; os.sched_setaffinity(0, {0})\nwhile True: pass"])
        os.environ.update(site_environment(f"http://127.0.0.1:{port}"))
        from ._django import bench_database

        # SQLite in memory-backed files where the machine has them (as bench.compare does).
        with bench_database(args.db, under="/dev/shm" if Path("/dev/shm").is_dir() else None) as url:
            os.environ["DATABASE_URL"] = url
            import django
            from django.core.management import call_command

            django.setup()
            call_command("migrate", verbosity=0, interactive=False)
            jobs, sdk = instrument()
            from agno_site.asgi import application

            import uvloop

            results = [uvloop.run(measure(application, name, args.requests, jobs, sdk)) for name in scenarios]
            from django.db import connections

            connections.close_all()
    finally:
        for process in (spinner, model):
            if process is not None:
                process.terminate()
                process.wait(10)
    report = {"db": args.db, "busy": args.busy, "results": results}
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / f"inprocess_http_{args.db}{'_busy' if args.busy else ''}.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"{'scenario':12} {'CPU ms/req':>10} {'wall ms':>8} {'run threads':>11} {'SDK call':>9}")
    for row in results:
        print(f"{row['scenario']:12} {row['cpu_ms_per_request']:10.3f} {row['wall_ms_per_request']:8.3f} "
              f"{row.get('run_threads_cpu_ms', float('nan')):11.3f} {row.get('sdk_call_cpu_ms', float('nan')):9.3f}")


if __name__ == "__main__":
    main()
