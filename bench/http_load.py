"""HTTP load generator for an AgentOS-compatible server (Agno Site or AgentOS itself).

    .venv/bin/python -m bench.http_load --base-url http://127.0.0.1:18901 --agent-id bench-agent \\
        [--scenarios runs,stream,sessions] [--server-pid PID] [--duration 10] [--label agentos]

Scenarios (each level gets a warm-up first, which is not counted; each scenario starts with one
probe request, and a server that fails it is reported as "not measured" instead of hammered):

* ``runs``: ``POST /agents/{id}/runs`` form ``message``, ``stream=false`` at each ``--concurrency``;
  an error is any exception, non-200, or a body whose ``status`` is not ``COMPLETED``. Each run
  gets a fresh ``session_id`` (``--session-mode shared``: round-robin over a few sessions).
* ``stream``: the same with ``stream=true`` at each ``--stream-concurrency``; also time to the
  response headers (TTFB) and to the first ``RunContent`` event. An error is a stream without
  ``RunCompleted``.
* ``sessions``: ``GET /sessions?limit=20&page=1`` latency at the database's current size (seed it
  first: ``--sessions-min N`` tops it up through the run endpoint; bench.compare seeds directly).

With ``--server-pid`` the server's CPU time (utime+stime of every thread, from /proc) is sampled
around each measured window and divided by the completed requests. When the server is pinned to
one CPU, that CPU's busy time not spent by the server is reported as "other work": above a few
percent the server shared its core and the window's figures are disturbed. The load generator's
own CPU use is reported too: near 100 % of its core it, not the server, is the limit. With
``--model-url`` (bench.fake_openai) it reports model calls and new model connections per request.
Writes a JSON file under bench/results/ and prints a markdown table.
"""
from __future__ import annotations

import argparse
import asyncio
import contextvars
import json
import os
import platform
import sys
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Awaitable, Callable

import httpx

RESULTS_DIR = Path(__file__).parent / "results"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# Which of drive()'s workers is sending: each worker has a client of its own (Load.client).
WORKER: contextvars.ContextVar[int] = contextvars.ContextVar("worker", default=0)


@dataclass
class Sample:
    latency: float
    ok: bool
    ttfb: float | None = None
    first_content: float | None = None
    error: str | None = None


@dataclass
class Result:
    scenario: str
    concurrency: int
    requests: int
    errors: int
    elapsed_s: float
    per_s: float
    p50_ms: float | None
    p99_ms: float | None
    ttfb_p50_ms: float | None = None
    ttfb_p99_ms: float | None = None
    first_content_p50_ms: float | None = None
    first_content_p99_ms: float | None = None
    server_cpu_ms_per_request: float | None = None
    server_cpu_pct: float | None = None
    other_cpu_pct: float | None = None
    loadgen_cpu_pct: float | None = None
    extra: dict = field(default_factory=dict)
    error_samples: list[str] = field(default_factory=list)


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, all threads included (fields 14 and 15 of /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as stat:
        # The command name may contain spaces and parentheses: split after its closing one.
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def cpu_busy_seconds(cpu: int) -> float:
    """Busy time of one CPU, every process and the kernel included (user..softirq, steal; /proc/stat)."""
    with open("/proc/stat") as stat:
        for line in stat:
            if line.startswith(f"cpu{cpu} "):
                user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, line.split()[1:9])
                return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS
    raise ValueError(f"no cpu{cpu} in /proc/stat")


def cpus_allowed(pid: int) -> str:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip()
    return "?"


def pinned_cpu(pid: int) -> int | None:
    """The one CPU a process may run on, or None when it may run on several."""
    allowed = cpus_allowed(pid)
    return int(allowed) if allowed.isdigit() else None


def percentile(values: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile, in milliseconds."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(fraction * len(ordered) + 0.5) - 1))
    return round(ordered[rank] * 1000, 2)


async def drive(
    request: Callable[[int], Awaitable[Sample]], *, concurrency: int, duration: float, count: int | None
) -> tuple[list[Sample], float]:
    """Run ``request`` from ``concurrency`` workers until ``count`` requests or ``duration`` seconds."""
    samples: list[Sample] = []
    issued = 0
    started = time.perf_counter()
    deadline = started + duration

    async def worker(number: int) -> None:
        nonlocal issued
        WORKER.set(number)  # gather() runs each worker in a task of its own, with its own copy
        while (issued < count) if count is not None else (time.perf_counter() < deadline):
            issued += 1
            samples.append(await request(issued))

    await asyncio.gather(*(worker(number) for number in range(concurrency)))
    return samples, time.perf_counter() - started


class Load:
    def __init__(self, args: argparse.Namespace, new_client: Callable[[], httpx.AsyncClient]) -> None:
        self.args = args
        self.new_client = new_client
        self.clients: dict[int, httpx.AsyncClient] = {}
        self.run_url = f"/agents/{args.agent_id}/runs"
        self.shared = [f"bench-shared-{uuid.uuid4().hex[:8]}-{i}" for i in range(args.shared_sessions)]

    @property
    def client(self) -> httpx.AsyncClient:
        """The sending worker's own client, with one connection.

        One client shared by every worker costs this process more per request the more
        connections its pool holds: at c=32, 3.7 ms of CPU a request against 1.2 ms with a
        client per worker, which made the load generator, not the server, the limit.
        """
        worker = WORKER.get()
        if worker not in self.clients:
            self.clients[worker] = self.new_client()
        return self.clients[worker]

    async def close(self) -> None:
        for client in self.clients.values():
            await client.aclose()

    def session_id(self, number: int) -> str:
        if self.args.session_mode == "shared":
            return self.shared[number % len(self.shared)]
        return str(uuid.uuid4())

    def form(self, number: int, stream: bool) -> dict:
        return {
            "message": f"Benchmark question {number}",
            "stream": "true" if stream else "false",
            "session_id": self.session_id(number),
            "user_id": self.args.user_id,
        }

    async def run(self, number: int) -> Sample:
        started = time.perf_counter()
        try:
            response = await self.client.post(self.run_url, data=self.form(number, stream=False))
            latency = time.perf_counter() - started
            if response.status_code != 200:
                return Sample(latency, False, error=f"HTTP {response.status_code}: {response.text[:200]}")
            status = response.json().get("status")
            if status != "COMPLETED":
                return Sample(latency, False, error=f"run status {status}: {response.text[:200]}")
            return Sample(latency, True)
        except (httpx.HTTPError, ValueError) as exc:
            return Sample(time.perf_counter() - started, False, error=f"{type(exc).__name__}: {exc}")

    async def stream(self, number: int) -> Sample:
        started = time.perf_counter()
        ttfb = first_content = None
        body = b""
        try:
            async with self.client.stream("POST", self.run_url, data=self.form(number, stream=True)) as response:
                ttfb = time.perf_counter() - started
                async for chunk in response.aiter_raw():
                    # Search only the new bytes (plus a margin for a marker split across chunks).
                    window = body[-32:] + chunk
                    body += chunk
                    if first_content is None and b"event: RunContent\n" in window:
                        first_content = time.perf_counter() - started
            latency = time.perf_counter() - started
        except httpx.HTTPError as exc:
            return Sample(time.perf_counter() - started, False, error=f"{type(exc).__name__}: {exc}")
        text = body.decode(errors="replace")
        if response.status_code != 200:
            return Sample(latency, False, ttfb, error=f"HTTP {response.status_code}: {text[:200]}")
        if "event: RunCompleted\n" not in text:
            return Sample(latency, False, ttfb, first_content, error=f"no RunCompleted: {text[-300:]}")
        return Sample(latency, True, ttfb, first_content)

    async def sessions(self, number: int) -> Sample:
        started = time.perf_counter()
        try:
            response = await self.client.get("/sessions", params={"limit": 20, "page": 1})
            latency = time.perf_counter() - started
            if response.status_code != 200:
                return Sample(latency, False, error=f"HTTP {response.status_code}: {response.text[:200]}")
            page = response.json()
            expected = min(20, page["meta"]["total_count"])
            if not expected:
                return Sample(latency, False, error="no sessions to list: seed the database first")
            if len(page["data"]) != expected:
                return Sample(latency, False, error=f"{len(page['data'])} sessions on the page, expected {expected}")
            return Sample(latency, True)
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            return Sample(time.perf_counter() - started, False, error=f"{type(exc).__name__}: {exc}")

    async def measure(
        self, scenario: str, request: Callable[[int], Awaitable[Sample]], concurrency: int, count: int | None = None
    ) -> Result:
        args = self.args
        warmup_count = None if count is None else max(concurrency, count // 10)
        await drive(request, concurrency=concurrency, duration=args.warmup, count=warmup_count)
        server_before = cpu_seconds(args.server_pid) if args.server_pid else None
        # A server pinned to one CPU shares it with nothing else only if that CPU is otherwise idle.
        server_cpu = pinned_cpu(args.server_pid) if args.server_pid else None
        busy_before = cpu_busy_seconds(server_cpu) if server_cpu is not None else None
        model_before = cpu_seconds(args.model_pid) if args.model_pid else None
        stats_before = await self.model_stats()
        own_before = time.process_time()
        samples, elapsed = await drive(request, concurrency=concurrency, duration=args.duration, count=count)
        own_cpu = time.process_time() - own_before
        ok = [s for s in samples if s.ok]
        result = Result(
            scenario=scenario,
            concurrency=concurrency,
            requests=len(samples),
            errors=len(samples) - len(ok),
            elapsed_s=round(elapsed, 3),
            per_s=round(len(ok) / elapsed, 2),
            p50_ms=percentile([s.latency for s in ok], 0.50),
            p99_ms=percentile([s.latency for s in ok], 0.99),
            loadgen_cpu_pct=round(100 * own_cpu / elapsed, 1),
            error_samples=sorted({s.error for s in samples if s.error})[:5],
        )
        if scenario == "stream":
            result.ttfb_p50_ms = percentile([s.ttfb for s in ok], 0.50)
            result.ttfb_p99_ms = percentile([s.ttfb for s in ok], 0.99)
            result.first_content_p50_ms = percentile([s.first_content for s in ok if s.first_content], 0.50)
            result.first_content_p99_ms = percentile([s.first_content for s in ok if s.first_content], 0.99)
        stats_after = await self.model_stats()
        if stats_before and stats_after and samples:
            # 1.0 for a plain run: a server that skips the model or calls it twice shows here, and
            # one connection per call means the server's model client does not keep connections alive.
            for name in ("completions", "connections"):
                delta = stats_after[name] - stats_before[name]
                result.extra[f"model_{name}_per_request"] = round(delta / len(samples), 2)
        if model_before is not None:
            model_cpu = cpu_seconds(args.model_pid) - model_before
            result.extra["model_server_cpu_pct"] = round(100 * model_cpu / elapsed, 1)
        if server_before is not None:
            server_cpu_time = cpu_seconds(args.server_pid) - server_before
            result.server_cpu_pct = round(100 * server_cpu_time / elapsed, 1)
            if busy_before is not None:
                other = cpu_busy_seconds(server_cpu) - busy_before - server_cpu_time
                result.other_cpu_pct = round(100 * max(0.0, other) / elapsed, 1)
            if ok:
                result.server_cpu_ms_per_request = round(1000 * server_cpu_time / len(ok), 2)
        return result

    async def model_stats(self) -> dict | None:
        """bench.fake_openai's counters: completions served, connections accepted (needs --model-url)."""
        if not self.args.model_url:
            return None
        try:
            # Not a worker's client: its one connection is for the server under test.
            async with httpx.AsyncClient() as client:
                return (await client.get(f"{self.args.model_url}/stats")).json()
        except (httpx.HTTPError, ValueError):
            return None

    async def scenarios(self) -> list[Result]:
        args = self.args
        plans = {
            "runs": (self.run, args.concurrency),
            "stream": (self.stream, args.stream_concurrency),
            "sessions": (self.sessions, [args.sessions_concurrency]),
        }
        results = []
        for scenario in args.scenarios:
            request, levels = plans[scenario]
            extra = await self.top_up_sessions() if scenario == "sessions" else {}
            # One request first: a server that cannot answer it yet is reported, not hammered.
            probe = await request(0)
            if not probe.ok:
                results.append(skipped(scenario, probe.error or "failed"))
                print_progress(results[-1])
                continue
            count = args.sessions_requests if scenario == "sessions" else args.requests
            for concurrency in levels:
                results.append(await self.measure(scenario, request, concurrency, count))
                results[-1].extra.update(extra)
                print_progress(results[-1])
        return results

    async def top_up_sessions(self) -> dict:
        """Bring the database to --sessions-min sessions through the run endpoint; report its size."""
        total = await self.session_count()
        if total is not None and total < self.args.sessions_min:
            missing = self.args.sessions_min - total
            print(f"topping up {missing} sessions through the run endpoint", file=sys.stderr, flush=True)
            await drive(self.run, concurrency=8, duration=0, count=missing)
            total = await self.session_count()
        return {"total_sessions": total} if total is not None else {}

    async def session_count(self) -> int | None:
        try:
            response = await self.client.get("/sessions", params={"limit": 1, "page": 1})
            return int(response.json()["meta"]["total_count"]) if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            return None


def skipped(scenario: str, reason: str) -> Result:
    reason = " ".join(reason.split()).replace("|", "/")[:300]
    return Result(scenario, 0, 0, 0, 0.0, 0.0, None, None, extra={"skipped": reason})


def print_progress(result: Result) -> None:
    if "skipped" in result.extra:
        print(f"{result.scenario}: not measured: {result.extra['skipped']}", file=sys.stderr, flush=True)
        return
    print(
        f"{result.scenario} c={result.concurrency}: {result.per_s}/s p50 {result.p50_ms} ms "
        f"p99 {result.p99_ms} ms errors {result.errors}",
        file=sys.stderr,
        flush=True,
    )


def ms(value: float | None) -> str:
    return "–" if value is None else f"{value:g}"


def markdown(results: list[dict]) -> str:
    lines = [
        "| scenario | c | requests | errors | per s | p50 ms | p99 ms | TTFB p50/p99 ms | 1st RunContent p50/p99 ms "
        "| server CPU ms/req | server CPU % | other work on server's CPU % | loadgen CPU % | model CPU % "
        "| model calls / new conns per req |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        name = r["scenario"]
        if "skipped" in r["extra"]:
            lines.append(f"| {name} | – | not measured: {r['extra']['skipped'][:120]} |" + " |" * 12)
            continue
        if "total_sessions" in r["extra"]:
            name = f"sessions ({r['extra']['total_sessions']:,} in db)"
        stream_cells = (
            f"{ms(r['ttfb_p50_ms'])} / {ms(r['ttfb_p99_ms'])} | "
            f"{ms(r['first_content_p50_ms'])} / {ms(r['first_content_p99_ms'])}"
            if r["scenario"] == "stream"
            else "– | –"
        )
        lines.append(
            f"| {name} | {r['concurrency']} | {r['requests']} | {r['errors']} | {r['per_s']} | {ms(r['p50_ms'])} "
            f"| {ms(r['p99_ms'])} | {stream_cells} | {ms(r['server_cpu_ms_per_request'])} "
            f"| {ms(r['server_cpu_pct'])} | {ms(r['other_cpu_pct'])} | {ms(r['loadgen_cpu_pct'])} "
            f"| {ms(r['extra'].get('model_server_cpu_pct'))} "
            f"| {ms(r['extra'].get('model_completions_per_request'))} / "
            f"{ms(r['extra'].get('model_connections_per_request'))} |"
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ints = lambda text: [int(part) for part in text.split(",") if part]  # noqa: E731
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--agent-id", default="bench-agent")
    parser.add_argument("--scenarios", default="runs,stream,sessions", type=lambda t: t.split(","))
    parser.add_argument("--concurrency", default=[1, 8, 32], type=ints, help="non-streamed levels (1,8,32)")
    parser.add_argument("--stream-concurrency", default=[1, 8], type=ints, help="streamed levels (1,8)")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per level (default 10)")
    parser.add_argument("--requests", type=int, help="a fixed request count per level instead of --duration")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of uncounted warm-up per level")
    parser.add_argument("--session-mode", choices=["fresh", "shared"], default="fresh",
                        help="fresh: a new session_id per run; shared: round-robin over --shared-sessions")
    parser.add_argument("--shared-sessions", type=int, default=4)
    parser.add_argument("--user-id", default="bench-user")
    parser.add_argument("--sessions-requests", type=int, default=300)
    parser.add_argument("--sessions-concurrency", type=int, default=1)
    parser.add_argument("--sessions-min", type=int, default=0,
                        help="top the database up to N sessions through the run endpoint first")
    parser.add_argument("--server-pid", type=int, help="sample this process's CPU time")
    parser.add_argument("--model-pid", type=int, help="also report the model server's CPU use")
    parser.add_argument("--model-url", help="bench.fake_openai's base URL: report model calls per request")
    parser.add_argument("--header", action="append", default=[], help="'Name: value', e.g. Authorization")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--label", default="server")
    parser.add_argument("--out", type=Path, help="JSON file (default bench/results/http_<label>_<time>.json)")
    args = parser.parse_args(argv)
    unknown = set(args.scenarios) - {"runs", "stream", "sessions"}
    if unknown:
        parser.error(f"unknown scenarios: {', '.join(sorted(unknown))}")
    return args


async def run(args: argparse.Namespace) -> dict:
    headers = dict(h.split(":", 1) for h in args.header)
    headers = {name.strip(): value.strip() for name, value in headers.items()}
    one_connection = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    load = Load(args, lambda: httpx.AsyncClient(
        base_url=args.base_url, headers=headers, timeout=args.timeout, limits=one_connection
    ))
    try:
        health = await load.client.get("/health")
        health.raise_for_status()
        results = await load.scenarios()
    finally:
        await load.close()
    return {
        "label": args.label,
        "base_url": args.base_url,
        "agent_id": args.agent_id,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "settings": {
            "duration_s": args.duration,
            "requests_per_level": args.requests,
            "warmup_s": args.warmup,
            "session_mode": args.session_mode,
            "shared_sessions": args.shared_sessions if args.session_mode == "shared" else None,
        },
        "machine": {
            "cpus": os.cpu_count(),
            "loadavg": os.getloadavg(),
            "python": platform.python_version(),
            "httpx": httpx.__version__,
            "loadgen_cpus": cpus_allowed(os.getpid()),
            "server_cpus": cpus_allowed(args.server_pid) if args.server_pid else None,
        },
        "results": [asdict(result) for result in results],
    }


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    try:
        from uvloop import run as run_loop
    except ImportError:
        run_loop = asyncio.run
    report = run_loop(run(args))
    out = args.out or RESULTS_DIR / f"http_{args.label}_{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(markdown(report["results"]))
    print(f"\nserver CPUs: {report['machine']['server_cpus']}, load generator CPUs: "
          f"{report['machine']['loadgen_cpus']}; results: {out}")


if __name__ == "__main__":
    main()
