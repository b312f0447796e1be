"""The process's span processors: the database's, always, and the OpenTelemetry SDK's batch
processor to an OTLP collector when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or its traces-specific
variable) is set.

A run's finished tree (``traces.tracing.RunTracer``) is handed to each. The database's
(``traces.exporter.DatabaseWriter``) takes the tree as it is and writes batches of them from its
own thread; only the OTLP path turns the tree into the SDK's ``ReadableSpan`` objects, which its
exporter encodes. The processors are built on first use and rebuilt in a forked child (their
threads do not survive a fork).
"""
from __future__ import annotations

import atexit
import os
import threading
from typing import Any

from django.conf import settings

_lock = threading.Lock()
_database: Any = None
_otlp: Any = None
_resource: Any = None
_pid = 0


def _built() -> tuple[Any, Any]:
    global _database, _otlp, _resource, _pid
    if _database is not None and _pid == os.getpid():
        return _database, _otlp
    with _lock:
        if _database is None or _pid != os.getpid():
            from .exporter import DatabaseWriter

            otlp = resource = None
            if otlp_endpoint():
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
                from opentelemetry.sdk.resources import Resource
                from opentelemetry.sdk.trace.export import BatchSpanProcessor

                resource = Resource.create({"service.name": settings.OTEL_SERVICE_NAME})
                # The exporter reads OTEL_EXPORTER_OTLP_* (endpoint, headers, timeout) itself.
                otlp = BatchSpanProcessor(OTLPSpanExporter())
            database = DatabaseWriter(delay_seconds=settings.TRACING_EXPORT_DELAY_MS / 1000)
            _database, _otlp, _resource, _pid = database, otlp, resource, os.getpid()
        return _database, _otlp


def submit(tracer: Any) -> None:
    """Hand a run's finished tree to every processor."""
    database, otlp = _built()
    database.submit(tracer)
    if otlp is not None:
        for span in readable_spans(tracer, _resource):
            otlp.on_end(span)


def otlp_processor() -> Any:
    """The OTLP batch processor, or None when no collector is configured."""
    return _built()[1]


def otlp_endpoint() -> str:
    return os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or ""


def readable_spans(tracer: Any, resource: Any) -> list[Any]:
    """The tree as the OpenTelemetry SDK's finished spans (``ReadableSpan``), parents first, with
    the tree's ids and times: what the OTLP exporter encodes."""
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import SpanContext, Status, StatusCode, TraceFlags

    scope = InstrumentationScope("agno_site")
    sampled = TraceFlags(TraceFlags.SAMPLED)
    contexts: dict[int, SpanContext] = {}
    common = {"user.id": tracer.user_id or "", "session.id": tracer.session_id}
    ok = Status(StatusCode.OK)
    finished = []
    for span in tracer.spans:  # in start order: a parent before its children
        context = SpanContext(tracer.trace_id, span.span_id, is_remote=False, trace_flags=sampled)
        contexts[id(span)] = context
        attributes = {"openinference.span.kind": span.kind, **common}
        attributes.update((key, value) for key, value in span.attributes.items() if value is not None)
        finished.append(ReadableSpan(
            name=span.name, context=context, parent=contexts.get(id(span.parent)) if span.parent is not None else None,
            resource=resource, attributes=attributes, instrumentation_scope=scope,
            status=Status(StatusCode.ERROR, span.error[:500]) if span.error else ok, start_time=span.start, end_time=span.end,
        ))
    return finished


def flush(timeout_millis: int = 10_000) -> bool:
    """Write (and send) every tree handed over so far (tests, and a worker before it exits)."""
    database, otlp = _built()
    written = database.flush(timeout_millis)
    return (otlp.force_flush(timeout_millis) if otlp is not None else True) and written


# The longest a trace read waits for this process's writer (a writer that is behind is not
# waited for past it: the read answers what is written).
READ_YOUR_WRITES_MILLIS = 2_000


def written_through() -> None:
    """Write the trees this process has handed over so far before a read of the trace tables, so
    a client that has just had a run's answer finds its trace, as AgentOS (which writes each span
    as it ends) answers it. Waits only for this process's writer, if it has one, and at most
    ``READ_YOUR_WRITES_MILLIS``; the OTLP collector is not waited for."""
    database = _database if _pid == os.getpid() else None
    if database is not None:
        database.flush(READ_YOUR_WRITES_MILLIS)


def _shut(database: Any, otlp: Any) -> None:
    database.shutdown()
    if otlp is not None:
        otlp.shutdown()


def reset() -> None:
    """Stop the processors after writing what they hold (at exit; tests that change the
    exporters' settings, or drop the database); the next use builds new ones."""
    global _database, _otlp
    with _lock:
        database, otlp, _database, _otlp = _database, _otlp, None, None
        current = _pid == os.getpid()
    if database is not None and current:
        _shut(database, otlp)


atexit.register(reset)
