"""/mcp: the platform as an MCP server, driven by the MCP SDK's own client against a live server
(uvicorn serving agno_site.asgi). Every run goes through the one pipeline as the authenticated
principal: scopes decide, another user's session is refused, a refusal is an MCP error and no run."""
from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from sessions.models import Run
from tests.security.conftest import USER_SCOPES, jwt_server, token  # noqa: F401 (jwt_server: a fixture)

pytestmark = pytest.mark.django_db(transaction=True)

READ_ONLY = ["agents:read", "teams:read", "workflows:read", "sessions:read", "config:read"]


def call(base: str, bearer: str | None, tool: str | None = None, arguments: dict[str, Any] | None = None) -> Any:
    """List the tools (``tool`` None) or call one, as an MCP client does, over streamable HTTP."""

    async def go() -> Any:
        headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
        async with create_mcp_http_client(headers=headers) as http, Client(streamable_http_client(f"{base}/mcp", http_client=http), mode="legacy") as client:
            if tool is None:
                return (await client.list_tools()).tools
            return await client.call_tool(tool, arguments or {})

    return asyncio.run(go())


def body(result: Any) -> Any:
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


def runs_of(user: str) -> list[tuple[str, str]]:
    """The user's runs (not a team's member runs), oldest first."""
    return list(Run.objects.for_user(user).filter(parent_run_id=None).order_by("created_at").values_list("component_id", "status"))


AGENTOS_TOOLS = ["cancel_run", "continue_run", "get_agentos_config", "get_session_runs", "get_sessions", "run_agent", "run_team", "run_workflow"]


def test_the_tools_are_agentos_mcp_tools_and_the_callers_components(live_api, jwt_server):
    tools = {tool.name: tool for tool in call(live_api, token("alice"))}
    scoped = [tool.name for tool in call(live_api, token("alice", ["agents:assistant:read", "agents:assistant:run"]))]

    assert sorted(name for name in tools if "__" not in name) == AGENTOS_TOOLS
    assert {"agent__assistant", "agent__hitl-agent", "team__research-team", "workflow__draft-flow"} <= set(tools)
    assert tools["agent__assistant"].input_schema["required"] == ["message"]
    assert sorted(scoped) == sorted([*AGENTOS_TOOLS, "agent__assistant"])
    assert tools["run_agent"].input_schema["required"] == ["agent_id", "message"]
    assert sorted(tools["run_agent"].input_schema["properties"]) == ["agent_id", "message", "session_id", "user_id"]


def test_a_user_runs_an_agent_a_team_and_a_workflow_and_reads_them_back(live_api, jwt_server):
    alice = token("alice")

    agent = body(call(live_api, alice, "run_agent", {"agent_id": "assistant", "message": "What is 2 + 2?"}))
    again = body(call(live_api, alice, "run_agent", {"agent_id": "assistant", "message": "And 3 + 3?", "session_id": agent["session_id"]}))
    team = body(call(live_api, alice, "run_team", {"team_id": "research-team", "message": "Write about tea"}))
    flow = body(call(live_api, alice, "run_workflow", {"workflow_id": "draft-flow", "message": "tea"}))

    assert (agent["status"], agent["agent_id"], agent["user_id"]) == ("COMPLETED", "assistant", "alice")
    assert agent["content"]
    assert again["session_id"] == agent["session_id"]
    assert (team["status"], team["team_id"]) == ("COMPLETED", "research-team")
    assert (flow["status"], flow["workflow_id"]) == ("COMPLETED", "draft-flow")
    runs = body(call(live_api, alice, "get_session_runs", {"session_id": agent["session_id"]}))["runs"]
    assert [(r["run_id"], r["input"], r["status"]) for r in runs] == [
        (agent["run_id"], "What is 2 + 2?", "COMPLETED"), (again["run_id"], "And 3 + 3?", "COMPLETED"),
    ]
    sessions = body(call(live_api, alice, "get_sessions", {"session_type": "agent"}))["data"]
    assert [s["session_id"] for s in sessions] == [agent["session_id"]]


def test_a_component_tool_runs_it_through_the_pipeline(live_api, jwt_server):
    alice = token("alice")

    first = body(call(live_api, alice, "agent__assistant", {"message": "What is 2 + 2?"}))
    second = body(call(live_api, alice, "team__research-team", {"message": "Write about tea"}))
    refused = call(live_api, token("alice", READ_ONLY), "agent__assistant", {"message": "hi"})

    assert (first["status"], first["agent_id"], first["user_id"]) == ("COMPLETED", "assistant", "alice")
    assert (second["status"], second["team_id"]) == ("COMPLETED", "research-team")
    assert (refused.is_error, refused.content[0].text) == (True, "Error executing tool agent__assistant: Insufficient permissions. Required scope(s): agents:run")
    assert runs_of("alice") == [("assistant", "COMPLETED"), ("research-team", "COMPLETED")]  # and none refused


def test_the_config_lists_only_what_the_caller_may_read(live_api, jwt_server):
    scoped = token("alice", ["agents:assistant:read", "config:read"])

    config = body(call(live_api, scoped, "get_agentos_config"))

    assert config["agents"] == [{"id": "assistant", "name": "Assistant", "description": config["agents"][0]["description"]}]
    assert (config["teams"], config["workflows"]) == ([], [])


def test_a_reader_who_may_not_run_gets_an_mcp_error_and_no_run(live_api, jwt_server):
    reader = token("alice", READ_ONLY)

    refused = [call(live_api, reader, tool, {key: value, "message": "hi"}) for tool, key, value in (
        ("run_agent", "agent_id", "assistant"), ("run_team", "team_id", "research-team"), ("run_workflow", "workflow_id", "draft-flow"),
    )]

    assert [(r.is_error, r.content[0].text) for r in refused] == [
        (True, "Error executing tool run_agent: Insufficient permissions. Required scope(s): agents:run"),
        (True, "Error executing tool run_team: Insufficient permissions. Required scope(s): teams:run"),
        (True, "Error executing tool run_workflow: Insufficient permissions. Required scope(s): workflows:run"),
    ]
    assert runs_of("alice") == []


def test_another_users_session_is_refused(live_api, jwt_server):
    bobs = body(call(live_api, token("bob"), "run_agent", {"agent_id": "assistant", "message": "bob's secret"}))

    hijack = call(live_api, token("alice"), "run_agent", {"agent_id": "assistant", "message": "hi", "session_id": bobs["session_id"]})
    peek = call(live_api, token("alice"), "get_session_runs", {"session_id": bobs["session_id"]})
    as_bob = body(call(live_api, token("alice"), "get_sessions", {"user_id": "bob"}))["data"]

    assert (hijack.is_error, peek.is_error) == (True, True)
    assert hijack.content[0].text == "Error executing tool run_agent: Session not found"  # the words the API answers (core.errors)
    assert peek.content[0].text == "Error executing tool get_session_runs: Session not found"
    assert as_bob == []  # isolated: alice reads her own sessions whatever user_id she names
    assert runs_of("alice") == []
    assert runs_of("bob") == [("assistant", "COMPLETED")]


def test_missing_or_bad_credentials_are_refused_before_mcp(live_api, jwt_server):
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    headers = {"Accept": "application/json, text/event-stream"}

    missing = httpx.post(f"{live_api}/mcp", json=initialize, headers=headers)
    wrong = httpx.post(f"{live_api}/mcp", json=initialize, headers={**headers, "Authorization": "Bearer nope"})

    assert (missing.status_code, missing.json()) == (401, {"detail": "Authorization header missing", "error_code": "not_authenticated"})
    assert wrong.status_code == 401 and wrong.json()["error_code"] == "authentication_failed"


def test_a_setting_turns_the_server_off(live_api, jwt_server, settings):
    settings.MCP_SERVER_ENABLED = False

    answer = httpx.post(f"{live_api}/mcp", json={}, headers={"Authorization": f"Bearer {token('alice')}"})

    assert answer.status_code == 404
    assert answer.json()["error_code"] == "not_found"


def test_info_and_config_say_mcp_is_enabled(live_api, jwt_server, settings):
    headers = {"Authorization": f"Bearer {token('alice', USER_SCOPES)}"}

    on = httpx.get(f"{live_api}/config", headers=headers).json()
    settings.MCP_SERVER_ENABLED = False
    off = httpx.get(f"{live_api}/config", headers=headers).json()

    info = httpx.get(f"{live_api}/info").json()["mcp"]

    assert on["mcp"] == {"enabled": True, "path": "/mcp", "oauth": None, "tool_run_endpoint": False}
    assert off["mcp"] == info == {"enabled": False, "path": None, "oauth": None, "tool_run_endpoint": False}


def test_on_make_runs_open_server_a_guest_needs_no_header(live_api, settings):
    settings.AGENT_OS_AUTH_MODE = "none"
    settings.ANONYMOUS_ACCESS = "guests"

    answer = body(call(live_api, None, "run_agent", {"agent_id": "assistant", "message": "hello", "user_id": "ada"}))

    assert (answer["status"], answer["user_id"]) == ("COMPLETED", "ada")
    assert runs_of("ada") == [("assistant", "COMPLETED")]


def test_host_and_origin_are_checked_as_the_sites(live_api, jwt_server, settings):
    headers = {"Authorization": f"Bearer {token('alice')}", "Accept": "application/json, text/event-stream"}
    settings.ALLOWED_HOSTS = ["agents.example.com"]

    wrong_host = httpx.post(f"{live_api}/mcp", json={}, headers=headers)
    settings.ALLOWED_HOSTS = ["127.0.0.1"]
    wrong_origin = httpx.post(f"{live_api}/mcp", json={}, headers={**headers, "Origin": "https://evil.example"})

    assert (wrong_host.status_code, wrong_host.json()["error_code"]) == (400, "bad_request")
    assert wrong_origin.status_code == 403 and wrong_origin.json() == {"detail": "Origin not allowed", "error_code": "forbidden"}
