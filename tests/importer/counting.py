"""What an Agno SQLite file holds, counted straight from its tables (not through the importer), per
kind of the import report: the number an import of it must reach."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

EXTRA_TABLES = {
    "evals": "agno_eval_runs", "metrics": "agno_metrics", "knowledge": "agno_knowledge", "schedules": "agno_schedules",
    "schedule_runs": "agno_schedule_runs", "learnings": "agno_learnings",
}


def _decoded(value: Any) -> Any:
    while isinstance(value, str):  # agno 2.x SQLite encodes session JSON twice
        value = json.loads(value)
    return value


def source_runs(conn: sqlite3.Connection) -> dict[str, dict]:
    """Every run once, by id: the runs table's, and the legacy blob's (2.x, or half-migrated)."""
    tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    runs: dict[str, dict] = {}
    if "agno_runs" in tables:
        for (data,) in conn.execute("SELECT run_data FROM agno_runs"):
            run = _decoded(data)
            runs[run["run_id"]] = run
    columns = {row[1] for row in conn.execute("PRAGMA table_info(agno_sessions)")}
    if "runs" in columns:
        for (blob,) in conn.execute("SELECT runs FROM agno_sessions"):
            for run in _decoded(blob) or []:
                runs.setdefault(run["run_id"], run)
    return runs


def source_counts(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as conn:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

        def count(table: str) -> int:
            return conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] if table in tables else 0

        runs = list(source_runs(conn).values())
        counts = {"sessions": count("agno_sessions"), "memories": count("agno_memories")}
        counts.update({kind: count(table) for kind, table in EXTRA_TABLES.items()})
    counts["runs"] = sum(1 for run in runs if not run.get("parent_run_id"))
    counts["members"] = sum(1 for run in runs if run.get("parent_run_id"))
    counts["steps"] = sum(len(run.get("step_executor_runs") or []) for run in runs)
    return counts
