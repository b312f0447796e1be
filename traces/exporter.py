"""Finished runs' span trees to the trace and span tables, owned by the run's user, in batches.

``DatabaseWriter`` is the database's span processor: a run's end hands it the tracer's own tree
(``traces.tracing.RunTracer``: spans with their parents, times, attributes and OpenTelemetry ids)
and returns; the writer's thread gathers trees for ``TRACING_EXPORT_DELAY_MS`` (or until a batch
is full) and writes each batch in one transaction of two statements: the traces' rows, then the
spans' rows, each one ``executemany`` of a compiled INSERT (``core.statements.Insert``).

The tree goes to the rows directly. Going through the OpenTelemetry SDK's ``ReadableSpan``
objects, its ``BatchSpanProcessor`` and the ORM's ``bulk_create``, in a new connection per batch,
cost a traced run 37% more instructions on the instant offline model; this way costs it 8%
(bench/README.md, "What tracing costs a run"). The SDK is still what sends spans to an OTLP
collector when one is configured (``traces.provider``).
A run's tree is never split across batches, so each trace's row is written once, with its spans.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from datetime import datetime, timedelta, timezone
from typing import Any

from django.db import connections, transaction

from core.db import release_connections
from core.logging import Throttle
from core.statements import Insert

from .models import Span, Trace  # imported once apps are ready (by traces.provider, lazily)

logger = logging.getLogger("agno_site.traces")

BATCH_SPANS = 2048  # a batch is written early once it holds this many spans
# A tree that finds this many spans waiting is dropped (and logged): a database that stopped
# answering must not make every traced run's spans pile up in memory.
MAX_PENDING_SPANS = 65_536
IDLE_CLOSE_SECONDS = 60.0  # the writer's connection is closed after this long without a tree

_TYPES = {"LLM": "LLM", "TOOL": "TOOL", "CHAIN": "CHAIN", "AGENT": "AGENT"}


def span_type(kind: str, attributes: dict[str, Any]) -> str:
    """AgentOS's span types: AGENT, TEAM, WORKFLOW, LLM, TOOL, and STEP for a workflow's steps."""
    if kind == "AGENT":
        return "TEAM" if attributes.get("agno.team.id") else "AGENT"
    if kind == "CHAIN":
        if attributes.get("agno.workflow.id"):
            return "WORKFLOW"
        return "STEP" if attributes.get("agno.step.type") else "CHAIN"
    return _TYPES.get(kind, kind or "UNKNOWN")


class DatabaseWriter:
    """Batches of finished trees, written from a thread of its own.

    ``submit`` costs the run's thread an append under a lock; the thread starts on the first
    tree (a forked child gets a writer of its own: ``traces.provider``). Between batches the
    thread keeps its connection as the run threads do (a pooled one goes back to the pool; a
    SQLite one is kept: opening it again re-reads the whole schema, which costs more than a
    batch), and closes it once no tree has come for ``IDLE_CLOSE_SECONDS``.
    """

    def __init__(self, *, delay_seconds: float, batch_spans: int = BATCH_SPANS, max_pending_spans: int = MAX_PENDING_SPANS) -> None:
        self.delay, self.batch_spans, self.max_pending_spans = delay_seconds, batch_spans, max_pending_spans
        self.dropped = 0
        self.condition = threading.Condition(threading.Lock())
        self.pending: deque[Any] = deque()
        self.pending_spans = 0
        self.submitted = self.written = 0
        self.hurry = self.stopping = False
        self.thread: threading.Thread | None = None

    def submit(self, tracer: Any) -> None:
        with self.condition:
            if self.stopping:
                return
            if self.pending_spans >= self.max_pending_spans:
                self.dropped += 1
                if _drops.due():
                    logger.warning("trace writer behind (%d spans waiting): run %s's trace dropped, %d so far", self.pending_spans, tracer.run_id, self.dropped)
                return
            self.pending.append(tracer)
            self.submitted += 1
            self.pending_spans += len(tracer.spans)
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="agno-trace-writer", daemon=True)
                self.thread.start()
            elif self.pending_spans >= self.batch_spans:
                self.condition.notify_all()

    def flush(self, timeout_millis: int = 10_000) -> bool:
        """Wait until every tree submitted so far is written (or failed, logged); False if that
        took longer than ``timeout_millis``."""
        deadline = time.monotonic() + timeout_millis / 1000
        with self.condition:
            target = self.submitted
            while self.written < target:
                if self.thread is None or not self.thread.is_alive():
                    return False
                self.hurry = True
                self.condition.notify_all()
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self.condition.wait(remaining)
        return True

    def shutdown(self, timeout_millis: int = 10_000) -> None:
        """Write what is pending, then stop the thread (which closes its connection) and take no
        more trees."""
        self.flush(timeout_millis)
        with self.condition:
            self.stopping = True
            self.condition.notify_all()
            thread = self.thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_millis / 1000)

    def _run(self) -> None:
        idle_since = time.monotonic()
        try:
            while True:
                with self.condition:
                    if not (self.hurry or self.stopping or self.pending_spans >= self.batch_spans):
                        self.condition.wait(self.delay)
                    if self.stopping and not self.pending:
                        return
                    batch = list(self.pending)
                    self.pending.clear()
                    self.pending_spans = 0
                    self.hurry = False
                if batch:
                    self._write(batch)
                    idle_since = time.monotonic()
                elif time.monotonic() - idle_since >= IDLE_CLOSE_SECONDS:
                    connections.close_all()  # an idle process holds no connection for it
                with self.condition:
                    self.written += len(batch)
                    self.condition.notify_all()
        finally:
            connections.close_all()

    def _write(self, batch: list[Any]) -> None:
        try:
            traces_write(batch)
        except Exception:
            logger.exception("writing %d traces failed", len(batch))
            connections.close_all()  # the database went away, say: the next batch connects anew
        else:
            release_connections()


_drops = Throttle(60.0)
_TRACE_INSERT = Insert(Trace, (
    "trace_id", "user_id", "run_id", "session_id", "name", "status", "start_time", "end_time", "duration_ms",
    "total_spans", "error_count", "input", "output", "error", "agent_id", "team_id", "workflow_id", "created_at",
))
_SPAN_INSERT = Insert(Span, (
    "user_id", "trace_id", "span_id", "parent_span_id", "name", "span_type", "step_type", "status", "status_message",
    "start_time", "end_time", "duration_ms", "run_id", "attributes",
))
# Attributes the rows keep in columns of their own (the run span's owner and session).
_IN_COLUMNS = frozenset({"user.id", "session.id"})


def traces_write(tracers: list[Any]) -> None:
    """Write finished trees: each a trace row owned by its run's user, and its spans' rows with the
    same owner, all in one transaction. Inserts only: a tree is written once, whole.

    The values are made in the form the database driver takes (``Insert.rows(converted=True)``):
    a timestamp straight from the tracer's nanoseconds, the attributes encoded to JSON once."""
    connection = connections["default"]
    when = _SqliteTime() if connection.vendor == "sqlite" else _aware_time
    to_json = connection.ops.adapt_json_value
    trace_rows, span_rows = [], []
    for tracer in tracers:
        _rows(tracer, when, to_json, trace_rows, span_rows)
    with transaction.atomic():
        _TRACE_INSERT.rows(trace_rows, converted=True)
        _SPAN_INSERT.rows(span_rows, converted=True)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _aware_time(nanos: int) -> datetime:
    """An aware UTC datetime (what PostgreSQL's driver takes), exact to the microsecond."""
    return _EPOCH + timedelta(microseconds=nanos // 1000)


class _SqliteTime:
    """A timestamp as Django stores a DateTimeField on SQLite: UTC text,
    ``YYYY-MM-DD HH:MM:SS.ffffff``. A batch's spans fall in few seconds: each second's text is
    made once (``str(datetime)``, what Django's own conversion does, costs more than the insert)."""

    def __init__(self) -> None:
        self.seconds: dict[int, str] = {}

    def __call__(self, nanos: int) -> str:
        seconds, micros = divmod(nanos // 1000, 1_000_000)
        prefix = self.seconds.get(seconds)
        if prefix is None:
            prefix = self.seconds[seconds] = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds))
        return f"{prefix}.{micros:06d}"


def _rows(tracer: Any, when: Any, to_json: Any, trace_rows: list[Any], span_rows: list[Any]) -> None:
    """Append a tree's trace row and span rows, in the order of ``_TRACE_INSERT``'s and
    ``_SPAN_INSERT``'s columns."""
    owner = tracer.user_id or None
    trace_id = "%032x" % tracer.trace_id
    errors = 0
    root = root_type = None
    start = end = tracer.spans[0].start
    first = len(span_rows)
    for span in tracer.spans:
        attributes = {key: value for key, value in span.attributes.items() if value is not None and key not in _IN_COLUMNS}
        kind = span_type(span.kind, attributes)
        errors += bool(span.error)
        if span.parent is None and root is None:
            root, root_type = span, kind
        start, end = min(start, span.start), max(end, span.end)
        span_rows.append((
            owner, trace_id, "%016x" % span.span_id, "%016x" % span.parent.span_id if span.parent is not None else "",
            span.name[:255], kind, str(attributes.get("agno.step.type") or "")[:32], "ERROR" if span.error else "OK",
            span.error[:500], when(span.start), when(span.end), (span.end - span.start) / 1e6,
            str(attributes.get("agno.run.id") or "")[:64], to_json(attributes, None),
        ))
    if root is None:  # every span has a parent: cannot happen (the first span is the run's)
        root, root_type = tracer.spans[0], span_rows[first][5]
    attributes = root.attributes
    trace_rows.append((
        trace_id, owner, str(attributes.get("agno.run.id") or "")[:64], str(attributes.get("session.id") or tracer.session_id),
        root.name[:255], "ERROR" if root.error else "OK", when(start), when(end), (end - start) / 1e6,
        len(tracer.spans), errors, str(attributes.get("input.value") or ""), str(attributes.get("output.value") or ""),
        root.error[:500],
        str(attributes.get("agno.agent.id") or "") if root_type == "AGENT" else "",
        str(attributes.get("agno.team.id") or "") if root_type == "TEAM" else "",
        str(attributes.get("agno.workflow.id") or "") if root_type == "WORKFLOW" else "",
        when(root.start),
    ))
