"""Read an Agno database (2.x, 3.x or a 2.x one half-migrated by 3.x), SQLite or PostgreSQL, read-only.

The source is never written: SQLite files are opened with ``mode=ro`` (a URI connection), and
PostgreSQL sessions run with ``default_transaction_read_only = on``. Everything here returns plain
Python values: JSON cells are decoded as many times as needed (2.x SQLite double-encodes them,
and a half-migrated file holds both encodings), and JSON ``null`` reads as None like SQL NULL.
"""
from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit


class SourceError(Exception):
    """The source cannot be opened or is not an Agno database."""


class MalformedValue(ValueError):
    """A cell that should hold JSON does not."""


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def decode_json(value: Any, *, column: str = "value") -> Any:
    """A JSON cell as Python: bytes and (possibly nested) JSON strings decoded until not a string."""
    if isinstance(value, (bytes, memoryview)):
        value = bytes(value).decode("utf-8")
    depth = 0
    while isinstance(value, str) and depth < 3:
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise MalformedValue(f"{column} is not JSON: {exc}") from None
        depth += 1
    return value


def decode_text(value: Any) -> str:
    """A JSON-string cell (``agno_memories.memory``) as its text; plain text passes through."""
    if isinstance(value, (bytes, memoryview)):
        value = bytes(value).decode("utf-8")
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError:
            return value
        return decoded if isinstance(decoded, str) else value
    return "" if value is None else str(value)


@dataclass
class AgnoSource:
    """An open, read-only Agno database."""

    label: str
    connection: Any
    placeholder: str
    schema: str | None
    tables: set[str] = field(default_factory=set)
    session_columns: set[str] = field(default_factory=set)
    session_table: str = "agno_sessions"
    runs_table: str = "agno_runs"
    memory_table: str = "agno_memories"

    def _table(self, name: str) -> str:
        return f'"{self.schema}"."{name}"' if self.schema else f'"{name}"'

    def _rows(self, sql: str, params: tuple = ()) -> list[dict[str, Any]]:
        cursor = self.connection.cursor()
        cursor.execute(sql.replace("?", self.placeholder), params)
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]

    @property
    def has_runs_table(self) -> bool:
        return self.runs_table in self.tables

    @property
    def has_runs_blob(self) -> bool:
        return "runs" in self.session_columns

    @property
    def layout(self) -> str:
        if self.has_runs_table and self.has_runs_blob:
            return "2.x migrated by 3.x"
        return "3.x" if self.has_runs_table else "2.x"

    def sessions(self) -> Iterator[dict[str, Any]]:
        if self.session_table not in self.tables:
            return
        blob = ", runs" if self.has_runs_blob else ""
        for row in self._rows(
            "SELECT session_id, session_type, agent_id, team_id, workflow_id, user_id, session_data, agent_data, "
            f"team_data, workflow_data, metadata, summary, created_at, updated_at{blob} "
            f"FROM {self._table(self.session_table)} ORDER BY created_at, session_id"
        ):
            yield row

    def session_runs(self, session_id: str) -> list[dict[str, Any]]:
        """The session's run rows in their order (``run_index``, then ``created_at``, ``run_id``, as v3 reads them)."""
        if not self.has_runs_table:
            return []
        return self._rows(
            "SELECT run_id, session_id, run_type, agent_id, team_id, workflow_id, user_id, parent_run_id, status, "
            f"run_index, run_data, created_at, updated_at FROM {self._table(self.runs_table)} "
            "WHERE session_id = ? ORDER BY run_index, created_at, run_id",
            (session_id,),
        )

    def orphan_runs(self) -> list[dict[str, Any]]:
        """Run rows whose session is not in the sessions table (nothing to attach them to)."""
        if not self.has_runs_table or self.session_table not in self.tables:
            return []
        owner = ", user_id" if "user_id" in self._columns(self.runs_table) else ""
        return self._rows(
            f"SELECT run_id, session_id{owner} FROM {self._table(self.runs_table)} r WHERE NOT EXISTS "
            f"(SELECT 1 FROM {self._table(self.session_table)} s WHERE s.session_id = r.session_id) ORDER BY run_id"
        )

    def memories(self) -> Iterator[dict[str, Any]]:
        if self.memory_table not in self.tables:
            return
        columns = self._columns(self.memory_table)
        wanted = [c for c in ("memory_id", "memory", "input", "agent_id", "team_id", "user_id", "topics", "created_at", "updated_at") if c in columns]
        yield from self._rows(f"SELECT {', '.join(wanted)} FROM {self._table(self.memory_table)} ORDER BY memory_id")

    def table_rows(self, table: str, order_by: str) -> list[dict[str, Any]]:
        """Every row of one of agno's other tables (evals, metrics, knowledge, schedules), or none
        when the source never made that table (agno creates tables lazily)."""
        if table not in self.tables:
            return []
        columns = self._columns(table)  # older agno versions lack some (2.x: no user_id on metrics)
        order = ", ".join(column for column in order_by.split(", ") if column in columns) or "1"
        return self._rows(f"SELECT * FROM {self._table(table)} ORDER BY {order}")

    def _columns(self, table: str) -> set[str]:
        if self.placeholder == "?":
            return {row["name"] for row in self._rows(f"PRAGMA table_info({self._table(table)})")}
        return {
            row["column_name"]
            for row in self._rows(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ?",
                (self.schema or "public", table),
            )
        }

    def close(self) -> None:
        self.connection.close()


def _discover(source: AgnoSource) -> AgnoSource:
    if source.placeholder == "?":
        names = source._rows("SELECT name FROM sqlite_master WHERE type = 'table'")
        source.tables = {row["name"] for row in names}
    else:
        names = source._rows("SELECT table_name FROM information_schema.tables WHERE table_schema = ?", (source.schema,))
        source.tables = {row["table_name"] for row in names}
    if source.session_table not in source.tables and source.memory_table not in source.tables:
        raise SourceError(f"{source.label}: no {source.session_table} or {source.memory_table} table; not an Agno database?")
    if source.session_table in source.tables:
        source.session_columns = source._columns(source.session_table)
    return source


def _default_runs_table(session_table: str) -> str:
    """agno's default: ``agno_runs``, or ``<session_table>_runs`` when the session table was renamed."""
    return "agno_runs" if session_table == "agno_sessions" else f"{session_table}_runs"


def open_source(
    url: str, *, schema: str | None = None, session_table: str = "agno_sessions", memory_table: str = "agno_memories",
    runs_table: str | None = None,
) -> AgnoSource:
    """Open ``url`` read-only: a SQLite file path, ``sqlite:///path``, or ``postgres(ql)://...``.

    PostgreSQL tables are looked for in ``schema`` (default: ``ai``, agno's, then ``public``).
    ``runs_table`` defaults as agno's does (``agno_runs``, or ``<session_table>_runs`` for a renamed session table).
    """
    for name in (session_table, memory_table, runs_table or "x", schema or "x"):
        if not _NAME.match(name):
            raise SourceError(f"Not a table or schema name: {name!r}")
    tables = {"session_table": session_table, "memory_table": memory_table, "runs_table": runs_table or _default_runs_table(session_table)}
    parts = urlsplit(url)
    if parts.scheme in ("postgres", "postgresql", "postgresql+psycopg"):
        return _open_postgres(url.replace("postgresql+psycopg://", "postgresql://", 1), schema=schema, **tables)
    if parts.scheme in ("sqlite", "sqlite+pysqlite"):
        path = url.split("://", 1)[1]
        path = path[1:] if path.startswith("/") else path
    elif parts.scheme in ("", "file") or len(parts.scheme) == 1:  # a path (C:\... on Windows)
        path = url[len("file://"):] if parts.scheme == "file" else url
    else:
        raise SourceError(f"Unsupported database URL scheme {parts.scheme!r}: use a SQLite path, sqlite:///path or postgresql://")
    file = Path(path)
    if not file.is_file():
        raise SourceError(f"No such SQLite file: {path}")
    try:
        connection = sqlite3.connect(f"file:{quote(str(file.resolve()))}?mode=ro", uri=True)
        connection.execute("PRAGMA query_only = ON")
    except sqlite3.Error as exc:
        raise SourceError(f"{path}: {exc}") from None
    source = AgnoSource(label=str(file), connection=connection, placeholder="?", schema=None, **tables)
    try:
        return _discover(source)
    except sqlite3.DatabaseError as exc:
        connection.close()
        raise SourceError(f"{path}: {exc}") from None


def _open_postgres(url: str, *, schema: str | None, **tables: str) -> AgnoSource:
    import psycopg

    parts = urlsplit(url)
    label = f"{parts.scheme}://{parts.hostname or ''}{':' + str(parts.port) if parts.port else ''}{parts.path}"
    try:
        connection = psycopg.connect(url, autocommit=True)
        connection.execute("SET default_transaction_read_only = on")
    except psycopg.Error as exc:
        raise SourceError(f"{label}: {exc}") from None
    candidates = [schema] if schema else ["ai", "public"]
    last: SourceError | None = None
    for candidate in candidates:
        source = AgnoSource(label=label, connection=connection, placeholder="%s", schema=candidate, **tables)
        try:
            return _discover(source)
        except SourceError as exc:
            last = exc
    connection.close()
    raise last or SourceError(f"{label}: not an Agno database")
