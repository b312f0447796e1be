"""The standard OTLP exporter sends the same spans to a collector, by configuration alone: a
local collector stub receives them over OTLP/HTTP (protobuf) and decodes them."""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from traces import provider

pytestmark = pytest.mark.django_db(transaction=True)


class Collector:
    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                message = ExportTraceServiceRequest()
                message.ParseFromString(body)
                collector.requests.append((self.path, self.headers.get("Content-Type"), message))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def spans(self) -> list:
        return [span for _, _, message in self.requests for resource in message.resource_spans for scope in resource.scope_spans for span in scope.spans]


@pytest.fixture
def collector(monkeypatch):
    stub = Collector()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", stub.url)
    provider.reset()
    yield stub
    provider.reset()
    stub.server.shutdown()


def test_spans_reach_an_otlp_collector_with_their_attributes(client, collector):
    response = client.post("/agents/assistant/runs", {"message": '/call add {"a": 4, "b": 5}', "stream": "false", "user_id": "alice"})
    run_id = response.json()["run_id"]
    assert provider.flush()
    path, content_type, _ = collector.requests[0]
    assert path == "/v1/traces" and content_type == "application/x-protobuf"
    spans = collector.spans()
    names = {span.name for span in spans}
    assert {"Agent.run", "add"} <= names
    root = next(span for span in spans if span.name == "Agent.run")
    attributes = {item.key: item.value.string_value for item in root.attributes}
    assert attributes["agno.run.id"] == run_id and attributes["user.id"] == "alice"
    assert attributes["openinference.span.kind"] == "AGENT"
    tool = next(span for span in spans if span.name == "add")
    assert tool.parent_span_id == root.span_id and tool.trace_id == root.trace_id
    resource = {item.key: item.value.string_value for item in collector.requests[0][2].resource_spans[0].resource.attributes}
    assert resource["service.name"] == "agno-site"


def test_without_an_endpoint_nothing_is_sent_but_the_database_still_gets_the_trace(client, monkeypatch):
    from traces.models import Trace

    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    provider.reset()
    assert provider.otlp_endpoint() == ""
    run_id = client.post("/agents/assistant/runs", {"message": "hi", "stream": "false", "user_id": "alice"}).json()["run_id"]
    assert provider.flush()
    assert Trace.all_users.filter(run_id=run_id).exists()
    assert provider.otlp_processor() is None
