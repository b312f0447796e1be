"""What bench.background reads about a round: when each run was accepted, started and finished,
and the CPU time of every process that served it."""
from __future__ import annotations

import bisect
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from .background_load import Submission
from .compare import POSTGRES, Database, ServerFailed
from .http_load import CLOCK_TICKS, cpu_busy_seconds, cpu_seconds

ACTIVE_JOBS = ("queued", "running")


@dataclass
class RunTiming:
    accepted: float
    started: float | None
    finished: float | None
    status: str  # the run's final status as the API spells it (COMPLETED, ERROR, ...)


def _connect(db: Database):
    """A read connection to the bench database (autocommit, so every poll sees fresh data)."""
    if db.sqlite_file:
        return sqlite3.connect(
            f"file:{db.sqlite_file}?mode=ro", uri=True, timeout=30, isolation_level=None, check_same_thread=False
        )
    import psycopg

    return psycopg.connect(f"{POSTGRES}/{db.postgres_name}", autocommit=True)


def _backend_pid(conn) -> int | None:
    return None if isinstance(conn, sqlite3.Connection) else conn.execute("SELECT pg_backend_pid()").fetchone()[0]


def _epoch(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, str):  # Django keeps UTC without an offset in SQLite
        value = datetime.fromisoformat(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.timestamp()


class SiteTables:
    """Agno Site's own record: agno_jobs has the accept, start and finish times of every job."""

    def __init__(self, db: Database) -> None:
        self.conn = _connect(db)
        self.backend_pids = {_backend_pid(self.conn)} - {None}
        self.param = "?" if db.sqlite_file else "%s"

    def unfinished(self) -> int:
        return self.conn.execute(
            f"SELECT count(*) FROM agno_jobs WHERE status IN ({self.param}, {self.param})", ACTIVE_JOBS
        ).fetchone()[0]

    def timings(self, submissions: list[Submission]) -> list[RunTiming]:
        rows = self.conn.execute(
            "SELECT j.id, j.created_at, j.started_at, j.completed_at, r.status "
            "FROM agno_jobs j LEFT JOIN agno_runs r ON r.run_id = j.id"
        ).fetchall()
        by_id = {row[0]: row for row in rows}
        timings = []
        for submission in submissions:
            row = by_id.get(submission.run_id)
            if row is None:
                timings.append(RunTiming(submission.received, None, None, "MISSING"))
                continue
            timings.append(RunTiming(_epoch(row[1]), _epoch(row[2]), _epoch(row[3]), row[4] or "MISSING"))
        return timings

    def close(self) -> None:
        self.conn.close()


class AgentOSWatcher:
    """Watches AgentOS's agno_runs: when each run is first seen RUNNING, and when it stops being
    PENDING or RUNNING. AgentOS's own timestamps are whole seconds, too coarse here."""

    def __init__(self, db: Database, interval: float) -> None:
        self.conn = _connect(db)
        self.backend_pids = {_backend_pid(self.conn)} - {None}
        self.table = "agno_runs" if db.sqlite_file else "ai.agno_runs"
        self.duration = (
            "json_extract(run_data, '$.metrics.duration')" if db.sqlite_file
            else "(run_data::json -> 'metrics' ->> 'duration')::float"
        )
        self.interval = interval
        self.running_seen: dict[str, float] = {}
        self.left_active: dict[str, float] = {}
        self.polls: list[float] = []
        self.last_poll = (0.0, -1)  # (started at, active runs seen)
        self._active: set[str] = set()
        self._lock = threading.Lock()  # one connection, used by the watcher thread and by timings()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="agentos-watcher", daemon=True)
        self.error: BaseException | None = None

    def start(self) -> AgentOSWatcher:
        self._thread.start()
        return self

    def _watch(self) -> None:
        query = f"SELECT run_id, status FROM {self.table} WHERE status IN ('PENDING', 'RUNNING')"
        try:
            while not self._stop.is_set():
                polled = time.time()
                try:
                    with self._lock:
                        rows = self.conn.execute(query).fetchall()
                except Exception as exc:  # AgentOS creates its tables on the first run
                    if "no such table" not in str(exc) and "does not exist" not in str(exc):
                        raise
                    rows = []
                active = set()
                for run_id, status in rows:
                    active.add(run_id)
                    if status == "RUNNING" and run_id not in self.running_seen:
                        self.running_seen[run_id] = polled
                for run_id in self._active - active:
                    self.left_active[run_id] = polled
                self._active = active
                self.polls.append(polled)
                self.last_poll = (polled, len(active))
                self._stop.wait(self.interval)
        except BaseException as exc:  # reported by unfinished(), never lost in a thread
            self.error = exc

    def unfinished(self) -> int:
        asked = time.time()
        deadline = asked + 10
        while self.last_poll[0] <= asked:
            if self.error is not None or time.time() > deadline:
                raise ServerFailed(f"the AgentOS watcher stopped: {self.error!r}")
            time.sleep(self.interval)
        return self.last_poll[1]

    def timings(self, submissions: list[Submission]) -> list[RunTiming]:
        with self._lock:
            rows = self.conn.execute(f"SELECT run_id, status, {self.duration} FROM {self.table}").fetchall()
        final = {run_id: (status, duration) for run_id, status, duration in rows}
        polls = list(self.polls)
        timings = []
        for submission in submissions:
            status, duration = final.get(submission.run_id, ("MISSING", None))
            finished = self.left_active.get(submission.run_id)
            if finished is None and status not in ("PENDING", "RUNNING", "MISSING"):
                # Finished before any poll saw it: at the latest by the first poll after its 202.
                index = bisect.bisect_right(polls, submission.received)
                finished = polls[index] if index < len(polls) else None
            started = self.running_seen.get(submission.run_id)
            if started is None and finished is not None and duration is not None:
                started = finished - float(duration)  # never seen RUNNING: its own run duration
            timings.append(RunTiming(submission.received, started, finished, status))
        return timings

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.conn.close()


def _cpu(pid: int) -> float:
    try:
        return cpu_seconds(pid)
    except (FileNotFoundError, ProcessLookupError):
        return 0.0


def _stat_fields(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rpartition(")")[2].split()


def _parent_pid(pid: int) -> int:
    return int(_stat_fields(pid)[1])


def _reaped_children_cpu(pid: int) -> float:
    """cutime + cstime: CPU time of the children a process has waited for (fields 16 and 17)."""
    fields = _stat_fields(pid)
    return (int(fields[13]) + int(fields[14])) / CLOCK_TICKS


class CpuSampler:
    """CPU seconds so far of the processes that serve the runs, and busy time of each CPU."""

    def __init__(self, processes: dict[str, list[int]], postgres_db: str | None, exclude: set[int]) -> None:
        self.processes = processes
        self.postgres_db = postgres_db
        self.exclude = exclude
        self.admin = None
        if postgres_db:
            import psycopg

            self.admin = psycopg.connect(f"{POSTGRES}/postgres", autocommit=True)
            self.postmaster = _parent_pid(_backend_pid(self.admin))
        self.cpus = range(os.cpu_count() or 1)

    def _backends(self) -> dict[int, float]:
        if self.admin is None:
            return {}
        pids = [row[0] for row in self.admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s", (self.postgres_db,)
        ).fetchall()]
        backends = {pid: _cpu(pid) for pid in pids if pid not in self.exclude}
        # A backend whose connection closed in between (AgentOS's pool closes its overflow
        # connections) is gone from /proc; its CPU time is added to the postmaster's reaped children
        # (with that of any other database's backend that exits: none on a quiet machine).
        backends[-1] = _reaped_children_cpu(self.postmaster)
        return backends

    def sample(self) -> dict[str, Any]:
        sample: dict[str, Any] = {name: sum(_cpu(pid) for pid in pids) for name, pids in self.processes.items()}
        sample["postgres"] = self._backends()
        sample["busy"] = [cpu_busy_seconds(cpu) for cpu in self.cpus]
        sample["at"] = time.time()
        return sample

    @staticmethod
    def delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
        out = {name: after[name] - before[name] for name in before if name not in ("postgres", "busy", "at")}
        # Backends that connected in between count from zero (their connection set-up included);
        # those that exited count in full in the postmaster's reaped children, so sums are compared.
        out["postgres"] = sum(after["postgres"].values()) - sum(before["postgres"].values())
        out["busy"] = [b - a for a, b in zip(before["busy"], after["busy"])]
        out["elapsed"] = after["at"] - before["at"]
        # CPU time no process of this benchmark used (other work on the machine; also the kernel's
        # interrupt handling and PostgreSQL's background processes, a few percent at most).
        ours = sum(v for name, v in out.items() if name not in ("busy", "elapsed"))
        out["other_cpu_pct"] = round(100 * max(0.0, sum(out["busy"]) - ours) / out["elapsed"], 1) if out["elapsed"] else None
        return out

    def close(self) -> None:
        if self.admin is not None:
            self.admin.close()


class ConnectionSampler:
    """PostgreSQL connections to the bench database, by client, every ``interval`` seconds (in a
    thread of its own): what a burst holds against the pool's bound (DB_POOL_MAX_SIZE per process).
    Each process names its connections (PGAPPNAME, which libpq reads); the bench's own readers
    (``exclude``) are not counted."""

    def __init__(self, postgres_db: str, exclude: set[int], interval: float = 0.5) -> None:
        import psycopg

        self.conn = psycopg.connect(f"{POSTGRES}/postgres", autocommit=True)
        self.exclude = sorted(exclude | {_backend_pid(self.conn)})
        self.postgres_db, self.interval = postgres_db, interval
        self.samples: list[tuple[float, dict[str, int]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="pg-connections", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        query = (
            "SELECT coalesce(nullif(application_name, ''), '?'), count(*) FROM pg_stat_activity "
            "WHERE datname = %s AND NOT (pid = ANY(%s)) GROUP BY 1"
        )
        while not self._stop.is_set():
            at = time.time()
            rows = self.conn.execute(query, (self.postgres_db, self.exclude)).fetchall()
            self.samples.append((at, dict(rows)))
            self._stop.wait(self.interval)

    def peaks(self, start: float, end: float) -> dict[str, Any]:
        """Between two epoch times: the most connections seen at once, in all and per client."""
        window = [counts for at, counts in self.samples if start <= at <= end]
        clients = sorted({name for counts in window for name in counts})
        return {
            "samples": len(window),
            "peak_total": max((sum(counts.values()) for counts in window), default=None),
            "peak_per_client": {name: max(counts.get(name, 0) for counts in window) for name in clients},
        }

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.conn.close()
