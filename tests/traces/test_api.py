"""The /traces routes and /trace_session_stats on the wire: AgentOS's shapes, filters, the search
DSL, isolation between two users under JWT auth, and AgentOSClient's trace methods."""
from __future__ import annotations

import json

import httpx
import pytest
from agno.client.os import AgentOSClient
from agno.os.routers.traces.schemas import TraceDetail, TraceSearchGroupBy, TraceSummary

from tests.api.test_agents_conformance import run
from tests.security.conftest import auth, jwt_server, token  # noqa: F401 (jwt_server: a fixture)
from traces import provider
from traces.provider import flush

pytestmark = pytest.mark.django_db(transaction=True)


def _ask(client, user: str, message: str, session_id: str) -> dict:
    response = client.post("/agents/assistant/runs", {"message": message, "stream": "false", "session_id": session_id}, **auth(token(user)))
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def runs(client, jwt_server):
    made = {
        "alice": _ask(client, "alice", '/call add {"a": 1, "b": 2}', "alice-s1"),
        "alice-fail": _ask(client, "alice", "/fail", "alice-s2"),
        "bob": _ask(client, "bob", "hello from bob", "bob-s1"),
    }
    assert flush()
    return made


def get(client, user: str, path: str, params=None):
    return client.get(path, params or {}, **auth(token(user)))


def test_a_user_lists_their_traces_only_and_filters_them(client, runs):
    listed = get(client, "alice", "/traces").json()
    assert {row["run_id"] for row in listed["data"]} == {runs["alice"]["run_id"], runs["alice-fail"]["run_id"]}
    row = next(item for item in listed["data"] if item["run_id"] == runs["alice"]["run_id"])
    assert set(row) >= {"trace_id", "name", "status", "duration", "start_time", "end_time", "total_spans", "error_count", "created_at"}
    assert row["name"] == "Agent.run" and row["status"] == "OK" and row["agent_id"] == "assistant" and row["user_id"] == "alice"
    assert row["duration"].endswith(("ms", "s")) and row["start_time"].endswith("Z") and row["input"].startswith("/call add")
    errors = get(client, "alice", "/traces", {"status": "ERROR"}).json()["data"]
    assert [item["run_id"] for item in errors] == [runs["alice-fail"]["run_id"]]
    assert get(client, "alice", "/traces", {"session_id": "alice-s1"}).json()["meta"]["total_count"] == 1
    assert {row["user_id"] for row in get(client, "alice", "/traces", {"user_id": "bob"}).json()["data"]} == {"alice"}  # isolation: forced to the caller
    assert get(client, "alice", "/traces", {"start_time": "2999-01-01T00:00:00Z"}).json()["data"] == []
    assert get(client, "alice", "/traces", {"start_time": "yesterday"}).status_code == 422
    assert get(client, "alice", "/traces", {"status": "MAYBE"}).status_code == 422


def test_the_detail_is_the_span_tree_and_a_span_id_picks_a_subtree(client, runs):
    trace_id = get(client, "alice", "/traces", {"run_id": runs["alice"]["run_id"]}).json()["data"][0]["trace_id"]
    detail = get(client, "alice", f"/traces/{trace_id}").json()
    [root] = detail["tree"]
    assert root["type"] == "AGENT" and root["metadata"]["run_id"] == runs["alice"]["run_id"]
    kinds = [node["type"] for node in root["spans"]]
    assert kinds.count("LLM") == 2 and kinds.count("TOOL") == 1
    tool = next(node for node in root["spans"] if node["type"] == "TOOL")
    assert tool["metadata"]["tool_name"] == "add" and json.loads(tool["input"]) == {"a": 1, "b": 2}
    llm = next(node for node in root["spans"] if node["type"] == "LLM")
    assert "input_tokens" in llm["metadata"] and llm["metadata"]["model"]
    assert detail["output"] and detail["error"] is None
    one = get(client, "alice", f"/traces/{trace_id}", {"span_id": tool["id"]}).json()
    assert one["id"] == tool["id"] and one["name"] == "add"
    assert get(client, "alice", f"/traces/{trace_id}", {"span_id": "0" * 16}).status_code == 404
    assert get(client, "alice", f"/traces/{trace_id}", {"run_id": "another-run"}).status_code == 404
    assert get(client, "bob", f"/traces/{trace_id}").status_code == 404


def test_a_failed_run_is_an_error_trace(client, runs):
    [row] = get(client, "alice", "/traces", {"run_id": runs["alice-fail"]["run_id"]}).json()["data"]
    detail = get(client, "alice", f"/traces/{row['trace_id']}").json()
    assert detail["status"] == "ERROR" and detail["error"] and detail["error_count"] >= 1


def _search(client, user: str, body: dict):
    return client.post("/traces/search", data=json.dumps(body), content_type="application/json", **auth(token(user)))


def test_search_applies_the_filter_dsl_and_groups_by_session(client, runs):
    ok = _search(client, "alice", {"filter": {"op": "EQ", "key": "status", "value": "OK"}}).json()
    assert [item["run_id"] for item in ok["data"]] == [runs["alice"]["run_id"]] and ok["data"][0]["tree"]
    both = _search(client, "alice", {"filter": {"op": "OR", "conditions": [
        {"op": "EQ", "key": "status", "value": "ERROR"}, {"op": "STARTSWITH", "key": "session_id", "value": "alice-s1"}]}}).json()
    assert both["meta"]["total_count"] == 2
    none = _search(client, "alice", {"filter": {"op": "AND", "conditions": [
        {"op": "IN", "key": "session_id", "values": ["alice-s1"]}, {"op": "NOT", "condition": {"op": "EQ", "key": "agent_id", "value": "assistant"}}]}}).json()
    assert none["data"] == []
    assert _search(client, "alice", {"filter": {"op": "GT", "key": "duration_ms", "value": -1}}).json()["meta"]["total_count"] == 2
    stats = _search(client, "alice", {"group_by": "session"}).json()["data"]
    assert {row["session_id"] for row in stats} == {"alice-s1", "alice-s2"} and all(row["total_traces"] == 1 for row in stats)
    assert _search(client, "bob", {"filter": {"op": "EQ", "key": "user_id", "value": "alice"}}).json()["data"] == []
    for bad in ({"op": "LIKE", "key": "name", "value": "x"}, {"op": "EQ", "key": "password", "value": "x"},
                {"op": "GT", "key": "duration_ms", "value": "fast"}, {"op": "AND", "conditions": []}, {"op": "EQ", "key": "status", "value": "MAYBE"}):
        response = _search(client, "alice", {"filter": bad})
        assert response.status_code == 400 and response.json()["detail"].startswith("Invalid filter: "), bad
    assert _search(client, "alice", {"group_by": "user"}).status_code == 422
    assert _search(client, "alice", {"limit": 101}).status_code == 422


def test_session_stats_and_the_filter_schema(client, runs):
    stats = get(client, "alice", "/trace_session_stats").json()
    assert {row["session_id"] for row in stats["data"]} == {"alice-s1", "alice-s2"}
    row = stats["data"][0]
    assert set(row) >= {"session_id", "total_traces", "first_trace_at", "last_trace_at"} and row["agent_id"] == "assistant"
    assert {row["session_id"] for row in get(client, "bob", "/trace_session_stats").json()["data"]} == {"bob-s1"}
    schema = get(client, "alice", "/traces/filter-schema").json()
    assert schema["logical_operators"] == ["AND", "OR"]
    status = next(field for field in schema["fields"] if field["key"] == "status")
    assert status == {"key": "status", "label": "Status", "type": "enum", "operators": ["EQ", "NEQ", "IN"], "values": ["OK", "ERROR"]}


def test_agentos_client_reads_and_searches_traces(live_api: str) -> None:
    made = httpx.post(f"{live_api}/agents/assistant/runs", data={"message": '/call add {"a": 2, "b": 2}', "stream": "false", "user_id": "carol", "session_id": "c-1"}, timeout=30).json()
    assert flush()
    client = AgentOSClient(base_url=live_api, timeout=30)
    listed = run(client.get_traces(run_id=made["run_id"]))
    assert [item.run_id for item in listed.data] == [made["run_id"]]
    detail = run(client.get_trace(listed.data[0].trace_id))
    assert detail.tree[0].type == "AGENT" and any(node.type == "TOOL" for node in detail.tree[0].spans)
    node = run(client.get_trace(listed.data[0].trace_id, span_id=detail.tree[0].spans[0].id))
    assert node.id == detail.tree[0].spans[0].id
    stats = run(client.get_trace_session_stats(user_id="carol"))
    assert [row.session_id for row in stats.data] == ["c-1"]
    found = run(client.search_traces({"op": "EQ", "key": "run_id", "value": made["run_id"]}))
    assert found.data[0].trace_id == listed.data[0].trace_id
    grouped = run(client.search_traces({"op": "EQ", "key": "user_id", "value": "carol"}, group_by=TraceSearchGroupBy.SESSION))
    assert grouped.data[0].total_traces == 1


def test_a_client_finds_the_trace_of_the_run_it_just_had_as_make_run_serves_it(live_api: str, settings) -> None:
    """make run's server: tracing on, anonymous callers kept apart as guests. As AgentOS writes
    each span as it ends, a client that has a run's answer finds its trace at once, by the run's
    id and then by the trace's, even when this server's writer would otherwise wait a minute."""
    settings.ANONYMOUS_ACCESS = "guests"
    default_delay = settings.TRACING_EXPORT_DELAY_MS
    settings.TRACING_EXPORT_DELAY_MS = 60_000
    provider.reset()  # the next trace goes to a writer built with that delay
    try:
        client = AgentOSClient(base_url=live_api, timeout=30)
        output = run(client.run_agent("assistant", '/call add {"a": 1, "b": 2}'))
        listed = run(client.get_traces(run_id=output.run_id))
        assert [type(item) for item in listed.data] == [TraceSummary] and listed.data[0].name == "Agent.run"
        found = run(client.search_traces({"op": "EQ", "key": "run_id", "value": output.run_id}))
        assert [type(item) for item in found.data] == [TraceDetail] and found.data[0].trace_id == listed.data[0].trace_id
        detail = run(client.get_trace(found.data[0].trace_id))
        assert (detail.run_id, detail.user_id, detail.tree[0].type) == (output.run_id, None, "AGENT")
        body = httpx.get(f"{live_api}/traces", params={"run_id": output.run_id}, timeout=30).json()
        assert [row["trace_id"] for row in body["data"]] == [detail.trace_id] and body["meta"]["total_count"] == 1
    finally:
        settings.TRACING_EXPORT_DELAY_MS = default_delay
        provider.reset()
