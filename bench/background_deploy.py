"""The configurations bench.background measures, and how each is started, frozen and stopped."""
from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass

from .background_record import AgentOSWatcher, CpuSampler, SiteTables
from .compare import ROOT, STARTUP_DEADLINE_S, Bench, Model, ServerFailed, agentos_server, free_port, site_server, stop

# The bench's own Redis database (flushed before and after each configuration); --redis-url to choose.
REDIS_URL = "redis://127.0.0.1:6379/13"


@dataclass(frozen=True)
class Config:
    name: str
    server: str  # "agentos" | "site"
    db: str  # "sqlite" | "postgres"
    workers: int  # Celery worker processes; 0: the server process executes the runs itself
    title: str
    threads: int = 0  # Celery's threads pool with this many threads per worker; 0: -P solo


CONFIGS = {
    c.name: c
    for c in (
        Config("agentos-sqlite", "agentos", "sqlite", 0, "AgentOS 3.1.10, in-process (SQLite)"),
        Config("agentos-postgres", "agentos", "postgres", 0, "AgentOS 3.1.10, in-process (PostgreSQL)"),
        Config("embedded", "site", "sqlite", 0, "Agno Site, embedded worker (SQLite)"),
        Config("celery-1", "site", "postgres", 1, "Agno Site + Celery, 1 worker (PostgreSQL + Redis)"),
        Config("celery-2", "site", "postgres", 2, "Agno Site + Celery, 2 workers (PostgreSQL + Redis)"),
        Config("celery-1-threads", "site", "postgres", 1, "Agno Site + Celery, 1 worker, 2 threads (PostgreSQL + Redis)", threads=2),
        Config("celery-2-threads", "site", "postgres", 2, "Agno Site + Celery, 2 workers, 2 threads each (PostgreSQL + Redis)", threads=2),
    )
}
WORKER_CPUS = {1: [1], 2: [0, 1]}


class Deployment:
    """The processes of one configuration: the server, its workers, the readers of its tables."""

    def __init__(self, bench: Bench, config: Config, model: Model, args: argparse.Namespace) -> None:
        self.bench, self.config, self.model, self.args = bench, config, model, args
        self.label = f"bg-{config.name}"
        self.workers: list[subprocess.Popen] = []
        self.server: subprocess.Popen | None = None
        self.reader: SiteTables | AgentOSWatcher | None = None
        self.sampler: CpuSampler | None = None
        self.redis = None

    def start(self) -> None:
        bench, config = self.bench, self.config
        bench.args.db = config.db  # Bench.database makes a database of the kind args.db names
        self.db = bench.database(self.label)
        port = free_port()
        self.base_url = f"http://127.0.0.1:{port}"
        # Every process names its PostgreSQL connections (libpq reads PGAPPNAME), so the
        # connections a burst holds can be counted per process (background_record.ConnectionSampler).
        if config.server == "agentos":
            server = agentos_server(bench, self.model)
            env = {**os.environ, "PGAPPNAME": "web"}
            if self.args.slow:
                # AgentOS's default cap (32 runs executing at once) would bound it to ~10 runs/s on a
                # 3 s model: give it the room Agno Site's worker has (WORKER_RUNS_PER_PROCESS).
                env["AGNO_BACKGROUND_MAX_CONCURRENCY"] = str(self.args.in_flight)
            self.server = bench.start(self.label, server.command(self.db, port), env)
        else:
            server = site_server(bench, self.model)
            # High enough never to cap: the queue's own bounds are not what is measured here. On the
            # slow model a run is in flight for seconds, so every run of a burst may be at once.
            cap = str(max(64, self.args.runs) if self.args.slow else 64)
            env = {
                **server.env(self.db),
                "AGENTOS_BACKGROUND_MAX_CONCURRENCY": cap,
                "AGENTOS_BACKGROUND_MAX_PER_USER": cap,
                "AGENTOS_BACKGROUND_MAX_QUEUE_DEPTH": str(max(1000, 2 * self.args.runs)),
                "AGENTOS_BACKGROUND_MAX_QUEUE_PER_USER": "0",  # every run is bench-user's
                "WORKER_RUNS_PER_PROCESS": str(self.args.in_flight),
                "PGAPPNAME": "web",
            }
            env.pop("REDIS_URL", None)
            if config.workers:
                env["REDIS_URL"] = self.args.redis_url
                import redis

                self.redis = redis.Redis.from_url(self.args.redis_url)
                self.redis.flushdb()
            server.prepare(self.db)
            # Lifespan on, as `make run` serves it: it starts the embedded worker (no REDIS_URL).
            command = ["on" if part == "off" else part for part in server.command(self.db, port)]
            self.server = bench.start(self.label, command, env)
            celery = str(ROOT / ".venv" / "bin" / "celery")
            host = socket.gethostname()
            self.nodes = [f"bench-w{i + 1}@{host}" for i in range(config.workers)]
            pool = ["-P", "threads", "-c", str(config.threads)] if config.threads else ["-P", "solo"]
            for i, cpu in enumerate(WORKER_CPUS.get(config.workers, [])):
                pin = ["taskset", "-c", str(cpu)] if bench.server_pin else []
                self.workers.append(bench.start(f"{self.label}-worker{i + 1}", [
                    celery, "-A", "agno_site", "worker", *pool, "--without-gossip", "--without-mingle",
                    "--without-heartbeat", "-l", "warning", "-n", self.nodes[i],
                ], {**env, "PGAPPNAME": f"worker{i + 1}"}, pin=pin))
        bench.wait_healthy(self.label, self.server, self.base_url)
        self._wait_workers_ready()
        if config.server == "agentos":
            self.reader = AgentOSWatcher(self.db, self.args.watch_interval).start()
        else:
            self.reader = SiteTables(self.db)
        processes = {
            "server": [self.server.pid], "workers": [w.pid for w in self.workers],
            "model": [self.model.process.pid], "bench": [os.getpid()],
        }
        if self.redis is not None:
            processes["redis"] = [int(self.redis.info("server")["process_id"])]
        self.sampler = CpuSampler(processes, self.db.postgres_name, self.reader.backend_pids)

    def _wait_workers_ready(self) -> None:
        if not self.workers:
            return
        from celery import Celery

        app = Celery(broker=self.args.redis_url)
        deadline = time.monotonic() + STARTUP_DEADLINE_S
        waiting = set(self.nodes)
        try:
            while waiting:
                self._check_alive()
                replies = app.control.ping(destination=sorted(waiting), timeout=0.5) or []
                waiting -= {node for reply in replies for node in reply}
                if waiting and time.monotonic() > deadline:
                    raise ServerFailed(f"Celery workers {sorted(waiting)} did not answer a ping in {STARTUP_DEADLINE_S} s")
        finally:
            app.close()

    def freeze(self, attempts: int = 100) -> None:
        """Stop the workers, never inside a transaction: a worker stopped while it claims holds the
        queue's lock, which every accept then waits for. (A loop worker claims once more after each
        run ends, so the warm-up's last runs can leave one claiming just as the burst begins.)"""
        for _ in range(attempts):
            for worker in self.workers:
                os.kill(worker.pid, signal.SIGSTOP)
            time.sleep(0.02)  # a statement already on its way reaches PostgreSQL, which shows it active
            if not self._workers_in_transaction():
                return
            self.thaw()
            time.sleep(0.05)
        raise ServerFailed(f"the workers were inside a transaction at each of {attempts} attempts to stop them")

    def _workers_in_transaction(self) -> int:
        return self.sampler.admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND application_name LIKE 'worker%%' "
            "AND state <> 'idle'", (self.db.postgres_name,)
        ).fetchone()[0]

    def thaw(self) -> None:
        for worker in self.workers:
            if worker.poll() is None:
                os.kill(worker.pid, signal.SIGCONT)

    def wait_finished(self, deadline_s: float) -> bool:
        """Until no accepted run is queued or running (every 202 is in by then), or the deadline."""
        deadline = time.monotonic() + deadline_s
        while self.reader.unfinished():
            if time.monotonic() > deadline:
                return False
            self._check_alive()
            time.sleep(0.05)
        return True

    def wait_broker_idle(self, deadline_s: float = 120) -> float | None:
        """Celery: until the workers have taken every drain_queue message (one was sent per run)."""
        if self.redis is None:
            return 0.0
        started = time.monotonic()
        while self.redis.llen("celery") or self.redis.hlen("unacked"):
            if time.monotonic() - started > deadline_s:
                return None
            self._check_alive()
            time.sleep(0.05)
        return time.monotonic() - started

    def redis_stats(self) -> dict[str, int]:
        if self.redis is None:
            return {}
        stats = self.redis.info("stats")
        return {"connections": stats["total_connections_received"], "commands": stats["total_commands_processed"]}

    def events_per_run(self) -> float | None:
        """Agno Site: run events stored per run, over every run so far (they are alike)."""
        if not isinstance(self.reader, SiteTables):
            return None
        conn = self.reader.conn
        runs = conn.execute("SELECT count(*) FROM agno_runs").fetchone()[0]
        events = conn.execute("SELECT count(*) FROM agno_run_events").fetchone()[0]
        return round(events / runs, 1) if runs else None

    def _check_alive(self) -> None:
        for name, process in [(self.label, self.server), *((f"{self.label}-worker{i + 1}", w) for i, w in enumerate(self.workers))]:
            if process.poll() is not None:
                raise ServerFailed(f"{name} exited with {process.returncode}:\n{self.bench.log_tail(name)}")

    def executing_pids(self) -> list[int]:
        return [w.pid for w in self.workers] or [self.server.pid]

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()
        if self.sampler is not None:
            self.sampler.close()
        self.thaw()  # a stopped process would only act on SIGTERM once continued
        for worker in self.workers:
            stop(worker)
        if self.server is not None:
            stop(self.server)
        if self.redis is not None:
            self.redis.flushdb()  # the bench's own Redis database: leave nothing behind
            self.redis.close()
