"""Run the same HTTP load against AgentOS 3.1.10 and Agno Site on this machine; print ratios.

    bash bench/agentos_reference/setup.sh        # once (compare runs it itself if the venv is missing)
    .venv/bin/python -m bench.compare [--db sqlite|postgres] [--duration 10] [--only agentos,site,floor]

Starts bench.fake_openai (an instant model), then for each server: a fresh database, the server
(uvicorn, one worker), bench.http_load's run and stream scenarios; then for each --sessions size a
fresh database seeded with that many one-run sessions and the GET /sessions scenario. With two or
more CPUs the server is pinned to CPU 0 and the load generator and the model server to CPU 1, so
"per core" figures mean one core. SQLite files live on tmpfs and PostgreSQL commits with
synchronous_commit=off (--on-disk for neither), so runs/s follows CPU cost, not this VM's fsync.
--repeat N alternates the servers N times and reports medians, skipping rounds in which other work
used the server's CPU. ``--only`` names the servers (default all three): ``floor`` is
bench.floor, a Django server that only calls the model (runs and streams only: it lists no sessions),
to show how far any server on this stack can go beside AgentOS.
Results: bench/results/compare_<db>_<time>.json.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import httpx

from .http_load import RESULTS_DIR, markdown

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = Path(__file__).resolve().parent / "agentos_reference"
POSTGRES = "postgresql://postgres@127.0.0.1:5432"
STARTUP_DEADLINE_S = 120
# Above this share of the server's CPU used by other work, its figures are flagged as disturbed.
DISTURBED_PCT = 10


class ServerFailed(Exception):
    pass


@dataclass
class Database:
    sqlite_file: Path | None = None
    postgres_name: str | None = None

    @property
    def sqlalchemy_url(self) -> str:
        return f"{POSTGRES.replace('postgresql:', 'postgresql+psycopg:')}/{self.postgres_name}"

    @property
    def django_url(self) -> str:
        if self.sqlite_file:
            return f"sqlite:///{self.sqlite_file}"
        return f"{POSTGRES.replace('postgresql:', 'postgres:')}/{self.postgres_name}"

    def agentos_args(self) -> list[str]:
        return ["--db-file", str(self.sqlite_file)] if self.sqlite_file else ["--db-url", self.sqlalchemy_url]


@dataclass
class Model:
    """The running bench.fake_openai server."""

    process: subprocess.Popen
    url: str  # http://host:port; the OpenAI base URL is url + "/v1"


@dataclass
class Server:
    """How to prepare, seed and start one of the two servers."""

    name: str
    prepare: Callable[[Database], None]
    seed: Callable[[Database, int], None]
    command: Callable[[Database, int], list[str]]
    env: Callable[[Database], dict | None] = lambda db: None  # None: inherit ours
    lists_sessions: bool = True  # False: the GET /sessions scenarios are not measured


class Bench:
    """Owns the work folder, the pinning, the processes it starts and the databases it creates."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        # This VM's fsync latency swings 2x with other work on the disk, so by default the
        # databases don't wait on it: SQLite files live on tmpfs and PostgreSQL commits with
        # synchronous_commit=off. Then runs/s follows the servers' CPU cost. --on-disk measures with it.
        in_memory = not args.on_disk and Path("/dev/shm").is_dir()
        self.work = Path(tempfile.mkdtemp(prefix="agno-http-bench-", dir="/dev/shm" if in_memory else None))
        self.durability = "on disk, default durability" if not in_memory else (
            "SQLite on tmpfs (/dev/shm)" if args.db == "sqlite" else "PostgreSQL with synchronous_commit=off"
        )
        self.databases: list[str] = []
        if shutil.which("taskset") and (os.cpu_count() or 1) >= 2:
            self.server_pin, self.client_pin = ["taskset", "-c", "0"], ["taskset", "-c", "1"]
            self.pinning = "server pinned to CPU 0; load generator and model server pinned to CPU 1 (taskset)"
        else:
            self.server_pin, self.client_pin = [], []
            self.pinning = "unpinned (needs taskset and two CPUs): CPU figures are not per core"

    def database(self, name: str) -> Database:
        """A new, empty database (rounds reuse names: whatever a name held before is dropped)."""
        if self.args.db == "sqlite":
            path = self.work / f"{name}.sqlite3"
            for leftover in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")):
                leftover.unlink(missing_ok=True)
            return Database(sqlite_file=path)
        import psycopg

        db_name = f"bench_http_{name}".replace("-", "_")
        with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {db_name} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {db_name}")
            if not self.args.on_disk:
                conn.execute(f"ALTER DATABASE {db_name} SET synchronous_commit = off")
        self.databases.append(db_name)
        return Database(postgres_name=db_name)

    def drop_databases(self) -> None:
        if not self.databases:
            return
        import psycopg

        with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
            for name in self.databases:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def start(
        self, name: str, command: list[str], env: dict | None = None, pin: list[str] | None = None
    ) -> subprocess.Popen:
        with open(self.work / f"{name}.log", "ab") as log:
            # A session of its own, so stopping it also stops anything it forked.
            return subprocess.Popen(
                [*(self.server_pin if pin is None else pin), *command],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )

    def finish(self) -> None:
        """Keep the work folder when asked to (--keep), else remove it."""
        if self.args.keep:
            print(f"Work folder (logs, databases): {self.work}")
        else:
            shutil.rmtree(self.work, ignore_errors=True)

    def log_tail(self, name: str, lines: int = 15) -> str:
        path = self.work / f"{name}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""

    def check(self, name: str, command: list[str], env: dict | None = None) -> None:
        """Run a set-up step to completion; its output goes to the step's log."""
        with open(self.work / f"{name}.log", "ab") as log:
            code = subprocess.run(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
        if code:
            raise ServerFailed(f"{name} exited with {code}:\n{self.log_tail(name)}")

    def wait_healthy(self, name: str, process: subprocess.Popen, base_url: str) -> None:
        deadline = time.monotonic() + STARTUP_DEADLINE_S
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base_url}/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            try:
                process.wait(timeout=0.2)  # the poll interval, and notices a server that died
            except subprocess.TimeoutExpired:
                continue
            raise ServerFailed(f"{name} exited with {process.returncode}:\n{self.log_tail(name)}")
        stop(process)
        raise ServerFailed(f"{name} not healthy after {STARTUP_DEADLINE_S} s:\n{self.log_tail(name)}")

    def load(self, label: str, base_url: str, server_pid: int, model: Model, scenarios: str) -> list[dict]:
        args = self.args
        out = self.work / f"load_{label}.json"
        command = [
            *self.client_pin, sys.executable, "-m", "bench.http_load", "--base-url", base_url,
            "--agent-id", "bench-agent", "--scenarios", scenarios, "--server-pid", str(server_pid),
            "--model-pid", str(model.process.pid), "--model-url", model.url,
            "--duration", str(args.duration), "--warmup", str(args.warmup),
            "--concurrency", args.concurrency, "--stream-concurrency", args.stream_concurrency,
            "--session-mode", args.session_mode, "--label", label, "--out", str(out),
        ]
        # The load generator's own table is replaced by one table per server at the end.
        subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, check=True)
        return json.loads(out.read_text())["results"]


def stop(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def agentos_server(bench: Bench, model: Model) -> Server:
    python = str(Path(bench.args.venv) / "bin" / "python")
    app = str(REFERENCE / "app.py")
    if not Path(python).exists():
        print(f"creating the AgentOS venv {bench.args.venv} (setup.sh)", file=sys.stderr, flush=True)
        setup_env = {**os.environ, "BENCH_VENV": bench.args.venv}
        bench.check("agentos-setup", ["bash", str(REFERENCE / "setup.sh")], env=setup_env)
    return Server(
        name="agentos",
        prepare=lambda db: None,  # AgentOS creates its tables on first use
        seed=lambda db, n: bench.check(
            "agentos-seed", [python, app, *db.agentos_args(), "--seed-sessions", str(n), "--seed-only"]
        ),
        command=lambda db, port: [
            python, app, *db.agentos_args(), "--port", str(port), "--model-base-url", f"{model.url}/v1"
        ],
    )


def site_environment(model_url: str) -> dict[str, str]:
    """The settings Agno Site is measured with, against the instant model at ``model_url``."""
    return {
        "DJANGO_SETTINGS_MODULE": "agno_site.settings.local",
        "DEBUG": "false",
        "SECRET_KEY": f"bench-{secrets.token_urlsafe(32)}",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "OPENAI_BASE_URL": f"{model_url}/v1",
        "OPENAI_API_KEY": "bench",
        "AGENT_MODULES": "bench.agents",
        "LOG_LEVEL": "WARNING",
        # Open API and no effective request limit, like the reference AgentOS (no auth, no throttling);
        # the throttle still runs, so its cost is still measured.
        "ALLOW_UNAUTHENTICATED": "true",
        "RATE_LIMIT_ANONYMOUS": "1000000/minute",
        "RATE_LIMIT_USER": "1000000/minute",
        # A developer's .env (Redis, auth keys...) must not change what is measured.
        "AGNO_SITE_IGNORE_DOTENV": "true",
    }


def site_server(bench: Bench, model: Model) -> Server:
    python = str(ROOT / ".venv" / "bin" / "python")
    base_env = {
        **os.environ,
        **site_environment(model.url),
        **dict(item.split("=", 1) for item in bench.args.site_env),
    }

    def env(db: Database) -> dict:
        return {**base_env, "DATABASE_URL": db.django_url}

    return Server(
        name="site",
        prepare=lambda db: bench.check("site-migrate", [python, "manage.py", "migrate", "--noinput"], env(db)),
        seed=lambda db, n: bench.check(
            "site-seed", [python, "-m", "bench.seed_sessions", "--count", str(n)], env(db)
        ),
        # --no-access-log: AgentOS logs no requests either; a log line per request is not what we compare.
        command=lambda db, port: [
            python, "-m", "uvicorn", "agno_site.asgi:application", "--host", "127.0.0.1", "--port", str(port),
            "--workers", "1", "--lifespan", "off", "--no-access-log",
        ],
        env=env,
    )


def floor_server(bench: Bench, model: Model) -> Server:
    python = str(ROOT / ".venv" / "bin" / "python")
    env = {**os.environ, "OPENAI_BASE_URL": f"{model.url}/v1", "OPENAI_API_KEY": "bench",
           **dict(item.split("=", 1) for item in bench.args.site_env)}
    return Server(
        name="floor",
        prepare=lambda db: None,
        seed=lambda db, n: None,
        command=lambda db, port: [
            python, "-m", "uvicorn", "bench.floor:application", "--factory", "--host", "127.0.0.1",
            "--port", str(port), "--workers", "1", "--lifespan", "off", "--no-access-log",
        ],
        env=lambda db: env,
        lists_sessions=False,
    )


SERVERS = {"agentos": agentos_server, "site": site_server, "floor": floor_server}


def measure(bench: Bench, server: Server, model: Model) -> dict:
    """Every scenario against one server; a failure is recorded and ends that server's part."""
    results: list[dict] = []
    plans = [("runs", None)] + [("sessions", n) for n in bench.args.sessions if server.lists_sessions]
    for purpose, seeded in plans:
        label = f"{server.name}-{purpose}" + (f"-{seeded}" if seeded else "")
        try:
            db = bench.database(label)
            server.prepare(db)
            if seeded:
                server.seed(db, seeded)
            port = free_port()
            process = bench.start(label, server.command(db, port), server.env(db))
            try:
                base_url = f"http://127.0.0.1:{port}"
                bench.wait_healthy(label, process, base_url)
                scenarios = "runs,stream" if purpose == "runs" else "sessions"
                print(f"measuring {label}", file=sys.stderr, flush=True)
                for result in bench.load(label, base_url, process.pid, model, scenarios):
                    if seeded:
                        result["extra"]["seeded"] = seeded
                    results.append(result)
            finally:
                stop(process)
        except (ServerFailed, subprocess.CalledProcessError) as exc:
            print(f"{label}: {exc}", file=sys.stderr, flush=True)
            return {"results": results, "error": f"{label}: {exc}"}
    return {"results": results, "error": None}


def median_of_rounds(rounds: list[dict]) -> dict:
    """One server's rounds folded into one: the median of every figure, per scenario level.

    Errors are summed over every round, so a failure in a discarded round still shows.
    """
    if len(rounds) == 1:
        return rounds[0]
    groups: dict[tuple, list[dict]] = {}
    for side in rounds:
        for result in side["results"]:
            groups.setdefault(key(result), []).append(result)
    results = []
    for every_round in groups.values():
        # Rounds during which other work shared the server's CPU only count if all rounds did.
        group = [r for r in every_round if (r["other_cpu_pct"] or 0) <= DISTURBED_PCT] or every_round
        merged = {**group[0], "extra": {**group[0]["extra"], "rounds": len(every_round), "rounds_used": len(group)}}
        for name in group[0]:
            values = [r[name] for r in group if isinstance(r[name], (int, float))]
            if values and name != "concurrency":
                merged[name] = round(statistics.median(values), 2)
        merged["requests"] = sum(r["requests"] for r in group)
        merged["errors"] = sum(r["errors"] for r in every_round)
        merged["extra"]["per_s_by_round"] = [r["per_s"] for r in every_round]
        merged["error_samples"] = sorted({e for r in every_round for e in r["error_samples"]})[:5]
        results.append(merged)
    error = next((side["error"] for side in rounds if side["error"]), None)
    return {"results": results, "error": error, "rounds": rounds}


def key(result: dict) -> tuple:
    return result["scenario"], result["concurrency"], result["extra"].get("seeded")


# The figures the ratio table compares, per scenario: (column, result field).
FIGURES = {
    "runs": [
        ("runs/s", "per_s"), ("p50 ms", "p50_ms"), ("p99 ms", "p99_ms"), ("CPU ms/run", "server_cpu_ms_per_request"),
    ],
    "stream": [
        ("runs/s", "per_s"), ("p50 ms", "p50_ms"), ("p99 ms", "p99_ms"), ("TTFB p50 ms", "ttfb_p50_ms"),
        ("1st RunContent p50 ms", "first_content_p50_ms"), ("CPU ms/run", "server_cpu_ms_per_request"),
    ],
    "sessions": [("p50 ms", "p50_ms"), ("p99 ms", "p99_ms"), ("CPU ms/request", "server_cpu_ms_per_request")],
}


def ratios(agentos: list[dict], site: list[dict]) -> list[dict]:
    """One row per AgentOS measurement: both figures and Agno Site / AgentOS, or why it is missing."""
    site_by_key = {key(r): r for r in site}
    site_skipped = {r["scenario"]: r["extra"]["skipped"] for r in site if "skipped" in r["extra"]}
    rows = []
    for reference in agentos:
        if "skipped" in reference["extra"]:
            continue
        scenario, concurrency, seeded = key(reference)
        ours = site_by_key.get(key(reference))
        row = {"scenario": scenario, "concurrency": concurrency, "seeded": seeded, "figures": {}}
        if ours is None:
            row["not_measured"] = site_skipped.get(scenario, "no result (see the Agno Site error)")
        for label, field in FIGURES[scenario]:
            theirs, mine = reference[field], ours[field] if ours else None
            ratio = round(mine / theirs, 2) if theirs and mine is not None else None
            row["figures"][label] = {"agentos": theirs, "site": mine, "ratio": ratio}
        rows.append(row)
    return rows


def ratio_table(rows: list[dict], server: str = "Agno Site") -> str:
    lines = [f"| scenario | figure | AgentOS 3.1.10 | {server} | {server} / AgentOS |", "|---|---|---|---|---|"]
    reasons: dict[str, str] = {}
    for row in rows:
        name = f"{row['scenario']} c={row['concurrency']}" + (f", {row['seeded']:,} sessions" if row["seeded"] else "")
        if "not_measured" in row:
            reasons[row["scenario"]] = row["not_measured"]
        for label, figure in row["figures"].items():
            site = "n/m" if "not_measured" in row else figure["site"]
            ratio = "–" if figure["ratio"] is None else f"{figure['ratio']:.2f}"
            lines.append(f"| {name} | {label} | {figure['agentos']} | {site} | {ratio} |")
    lines += [""] + [f"n/m, {scenario}: {server} answered {reason[:160]}" for scenario, reason in reasons.items()]
    return "\n".join(lines).rstrip()


def git_revision() -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    dirty = " (with uncommitted changes)" if git("status", "--porcelain") else ""
    return git("rev-parse", "--short", "HEAD") + dirty


def servers(text: str) -> list[str]:
    names = [name for name in text.split(",") if name]
    unknown = sorted(set(names) - set(SERVERS))
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"servers are {', '.join(SERVERS)}; not {', '.join(unknown) or 'none'}")
    return names


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--only", default="agentos,site,floor", type=servers,
                        help="the servers to measure, of agentos, site and floor (default all three)")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per level (default 10)")
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--repeat", type=int, default=1, help="rounds (servers alternate); figures are medians")
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--stream-concurrency", default="1,8")
    parser.add_argument("--sessions", default="1000,10000", type=lambda t: [int(n) for n in t.split(",") if n])
    parser.add_argument("--session-mode", choices=["fresh", "shared"], default="fresh")
    parser.add_argument("--venv", default=os.environ.get("BENCH_VENV", "/tmp/agentos-bench-venv"))
    parser.add_argument("--site-env", action="append", default=[], metavar="KEY=VALUE",
                        help="extra environment for Agno Site (repeatable)")
    parser.add_argument("--on-disk", action="store_true",
                        help="SQLite files on disk and PostgreSQL commits flushed (default: neither; see Bench)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs, SQLite files)")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    bench = Bench(args)
    port = free_port()
    model = Model(
        process=bench.start("fake-openai", [sys.executable, "-m", "bench.fake_openai", "--port", str(port)],
                            pin=bench.client_pin),
        url=f"http://127.0.0.1:{port}",
    )
    servers = [(name, build) for name, build in SERVERS.items() if name in args.only]
    rounds: dict[str, list[dict]] = {name: [] for name, _ in servers}
    loadavg_before = os.getloadavg()
    try:
        bench.wait_healthy("fake-openai", model.process, model.url)
        # Rounds alternate the servers, so a burst of other work on the machine hits both alike.
        for _ in range(args.repeat):
            for name, build in servers:
                try:
                    rounds[name].append(measure(bench, build(bench, model), model))
                except ServerFailed as exc:
                    rounds[name].append({"results": [], "error": str(exc)})
    finally:
        stop(model.process)
        bench.drop_databases()
    sides = {name: median_of_rounds(side_rounds) for name, side_rounds in rounds.items()}
    extra_env = dict(item.split("=", 1) for item in args.site_env)
    floor_client = extra_env.get("FLOOR_CLIENT", os.environ.get("FLOOR_CLIENT", "thread"))
    reference = sides.get("agentos", {}).get("results", [])
    rows = ratios(reference, sides.get("site", {}).get("results", []))
    floor_rows = ratios(reference, sides["floor"]["results"]) if "floor" in sides else []
    report = {
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "database": args.db,
        "pinning": bench.pinning,
        "durability": bench.durability,
        "settings": {k: v for k, v in vars(args).items() if k not in ("site_env", "keep")},
        "machine": {"cpus": os.cpu_count(), "loadavg_before": loadavg_before, "loadavg_after": os.getloadavg()},
        "agno_site_revision": git_revision(),
        "servers": {
            "agentos": "agno 3.1.10 AgentOS, uvicorn 0.54 (uvloop, httptools), 1 worker, lifespan on",
            "site": "Agno Site ASGI, uvicorn 0.54 (uvloop, httptools), 1 worker, --lifespan off",
            "floor": f"bench.floor (FLOOR_CLIENT={floor_client}), the same uvicorn",
        },
        "sides": sides,
        "ratios": rows,
        "floor_ratios": floor_rows,
    }
    RESULTS_DIR.mkdir(exist_ok=True)
    out = RESULTS_DIR / f"compare_{args.db}_{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")

    for name, title in (("agentos", "AgentOS 3.1.10"), ("site", "Agno Site"), ("floor", "The floor (bench.floor)")):
        if name in sides:
            print(f"\n## {title} ({args.db})\n\n{markdown(sides[name]['results'])}")
            if sides[name]["error"]:
                print(f"\nStopped early: {sides[name]['error']}")
    if rows:
        print("\n## Ratios (Agno Site / AgentOS: above 1 is better for runs/s, worse for times and CPU)\n")
        print(ratio_table(rows))
    if floor_rows:
        print("\n## The floor / AgentOS (Django, the model call and uvicorn, doing nothing else)\n")
        print(ratio_table(floor_rows, "The floor"))
    disturbed = [
        f"{name} {r['scenario']} c={r['concurrency']} ({r['other_cpu_pct']} %)"
        for name, side in sides.items() for r in side["results"]
        if (r["other_cpu_pct"] or 0) > DISTURBED_PCT
    ]
    if disturbed:
        print(f"\nDisturbed: other work used more than {DISTURBED_PCT} % of the server's CPU in: "
              f"{', '.join(disturbed)}. Rerun when the machine is quieter, or use --repeat.")
    print(f"\n{bench.pinning}. Databases: {bench.durability}.")
    if args.db == "postgres":
        print("PostgreSQL itself is neither pinned nor counted in the server CPU figures; the PostgreSQL "
              "backends serving the server count as 'other work' on its CPU, so that is never near 0 here.")
    print(f"Load average before/after: {loadavg_before[0]:.2f}/{os.getloadavg()[0]:.2f}. Results: {out}")
    bench.finish()


if __name__ == "__main__":
    main()
