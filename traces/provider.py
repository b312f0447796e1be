"""The process's OpenTelemetry tracer provider: a batch processor to the database, and one to
an OTLP collector when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or its traces-specific variable) is set.

The provider is built on first use and rebuilt in a forked child (its batch thread does not
survive a fork). Exporting happens on the processors' own threads, in batches, so a run pays for
building its spans and no more; the database exporter holds one connection while it writes.
"""
from __future__ import annotations

import atexit
import os
import threading
from typing import Any

from django.conf import settings

_lock = threading.Lock()
_provider: Any = None
_tracer: Any = None
_processors: list[Any] = []
_pid = 0


def tracer_provider() -> Any:
    global _provider, _tracer, _pid
    with _lock:
        if _provider is None or _pid != os.getpid():
            _provider, _pid = _build(), os.getpid()
            _tracer = _provider.get_tracer("agno_site")
        return _provider


def tracer() -> Any:
    """The process's tracer (built with its provider)."""
    tracer_provider()
    return _tracer


def processors() -> list[Any]:
    """The span processors finished spans are handed to (the database's, and OTLP's if set)."""
    tracer_provider()
    return _processors


def scope_and_resource() -> tuple[Any, Any]:
    """The instrumentation scope and resource every span of this process carries."""
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

    return InstrumentationScope("agno_site"), tracer_provider().resource


def _build() -> Any:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.sampling import ALWAYS_ON
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from .exporter import DatabaseSpanExporter

    # Every run is traced (the switch is TRACING): no sampler decision to make per span.
    provider = TracerProvider(resource=Resource.create({"service.name": settings.OTEL_SERVICE_NAME}), sampler=ALWAYS_ON, shutdown_on_exit=False)
    chosen = [BatchSpanProcessor(DatabaseSpanExporter(), schedule_delay_millis=settings.TRACING_EXPORT_DELAY_MS, max_export_batch_size=512)]
    if otlp_endpoint():
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        # The exporter reads OTEL_EXPORTER_OTLP_* (endpoint, headers, timeout) itself.
        chosen.append(BatchSpanProcessor(OTLPSpanExporter()))
    for processor in chosen:
        provider.add_span_processor(processor)
    _processors[:] = chosen
    atexit.register(provider.shutdown)
    return provider


def otlp_endpoint() -> str:
    return os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or ""


def flush(timeout_millis: int = 10_000) -> bool:
    """Export every span emitted so far (tests, and a worker before it exits)."""
    return tracer_provider().force_flush(timeout_millis)


def reset() -> None:
    """Forget the provider (tests that change the exporters' settings); the next use builds one."""
    global _provider, _tracer
    with _lock:
        old, _provider, _tracer = _provider, None, None
    if old is not None:
        old.shutdown()
