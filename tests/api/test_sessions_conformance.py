"""Agno's own AgentOSClient against a live server: every /sessions method parses what we send."""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar

import httpx
import pytest
from agno.client.os import AgentOSClient
from agno.db.base import SessionType
from agno.os.schema import (
    AgentSessionDetailSchema,
    RunSchema,
    SessionRunPreviewSchema,
    TeamRunSchema,
    TeamSessionDetailSchema,
    WorkflowRunSchema,
    WorkflowSessionDetailSchema,
)
from agno.utils.http import aclose_default_clients, close_sync_client

from sessions.models import Run, Session
from tests.factories import make_run, make_session

T = TypeVar("T")
T0 = datetime(2026, 11, 30, 9, 42, 53, tzinfo=timezone.utc)


def drive(scenario: Callable[[AgentOSClient], Awaitable[T]], base_url: str) -> T:
    """Run one async scenario; the client's shared httpx clients are bound to its event loop."""

    async def main() -> T:
        try:
            return await scenario(AgentOSClient(base_url=base_url))
        finally:
            await aclose_default_clients()

    try:
        return asyncio.run(main())
    finally:
        close_sync_client()


def seeded() -> None:
    agent = make_session("alice", session_id="s-agent", component_id="assistant", component_data={"name": "Assistant", "model": {"id": "m", "provider": "offline"}})
    make_run("alice", session=agent, run_id="a1", status="COMPLETED", input={"input_content": "Hello"}, created_at=T0,
             run_data={"content": "Hi!", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi!"}],
                       "tools": [{"tool_call_id": "c1", "tool_name": "add", "tool_args": {"a": 1}, "result": "1"}]})
    make_run("alice", session=agent, run_id="a2", status="ERROR", input={"input_content": "Again"}, created_at=T0 + timedelta(seconds=10))
    team = make_session("bob", session_id="s-team", session_type="team", component_id="crew")
    make_run("bob", session=team, run_id="t1", run_type="team", component_id="crew", status="COMPLETED", input={"input_content": "Plan"}, created_at=T0)
    make_run("bob", session=team, run_id="t1-m", run_type="agent", component_id="researcher", parent_run_id="t1", status="COMPLETED", created_at=T0)
    flow = make_session("bob", session_id="s-flow", session_type="workflow", component_id="flow", component_data={"name": "Flow", "steps": []})
    make_run("bob", session=flow, run_id="w1", run_type="workflow", component_id="flow", status="PAUSED", input={"input_content": "Go"}, created_at=T0)


def test_create_session_for_every_type(live_api: str) -> None:
    async def scenario(client: AgentOSClient) -> list[Any]:
        return [
            await client.create_session(session_id="c-agent", user_id="alice", session_name="Mine", session_state={"a": 1}, metadata={"m": 1}, agent_id="assistant"),
            await client.create_session(session_type=SessionType.TEAM, team_id="crew", user_id="bob"),
            await client.create_session(session_type=SessionType.WORKFLOW, workflow_id="flow"),
        ]

    agent, team, workflow = drive(scenario, live_api)
    assert isinstance(agent, AgentSessionDetailSchema)
    assert (agent.session_id, agent.agent_session_id, agent.session_name, agent.session_state, agent.metadata, agent.agent_id, agent.user_id, agent.chat_history) == (
        "c-agent", "c-agent", "Mine", {"a": 1}, {"m": 1}, "assistant", "alice", []
    )
    assert isinstance(team, TeamSessionDetailSchema) and (team.team_id, team.user_id, team.session_name) == ("crew", "bob", "")
    assert isinstance(workflow, WorkflowSessionDetailSchema) and workflow.workflow_id == "flow"
    assert Session.all_users.get(pk=team.session_id).session_type == "team"
    assert agent.created_at is not None and agent.created_at.tzinfo is not None


def test_create_session_with_a_taken_id_raises_409(live_api: str) -> None:
    make_session("alice", session_id="dup")

    async def scenario(client: AgentOSClient) -> Any:
        return await client.create_session(session_id="dup")

    with pytest.raises(httpx.HTTPStatusError) as caught:
        drive(scenario, live_api)
    assert caught.value.response.status_code == 409


def test_get_sessions_pages_and_filters(live_api: str) -> None:
    seeded()

    async def scenario(client: AgentOSClient) -> tuple[Any, Any, Any]:
        return (
            await client.get_sessions(limit=2, page=1, sort_by="session_id", sort_order="asc"),
            await client.get_sessions(session_type=SessionType.TEAM),
            await client.get_sessions(user_id="alice", component_id="assistant"),
        )

    first_page, teams, alices = drive(scenario, live_api)
    assert [s.session_id for s in first_page.data] == ["s-agent", "s-flow"]
    assert (first_page.meta.page, first_page.meta.limit, first_page.meta.total_pages, first_page.meta.total_count) == (1, 2, 2, 3)
    assert [(s.session_id, s.session_type, s.team_id, s.user_id) for s in teams.data] == [("s-team", "team", "crew", "bob")]
    (alice_session,) = alices.data
    assert (alice_session.session_id, alice_session.agent_id, alice_session.session_name) == ("s-agent", "assistant", "Hello")
    assert alice_session.created_at is not None


def test_get_session_picks_the_schema_by_type_or_by_id(live_api: str) -> None:
    seeded()

    async def scenario(client: AgentOSClient) -> list[Any]:
        return [
            await client.get_session("s-agent"),
            await client.get_session("s-team"),
            await client.get_session("s-flow"),
            await client.get_session("s-agent", session_type=SessionType.TEAM),
        ]

    agent, team, flow, agent_as_team = drive(scenario, live_api)
    assert isinstance(agent, AgentSessionDetailSchema)
    assert agent.chat_history == [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi!"}]
    assert agent.agent_data == {"name": "Assistant", "agent_id": "assistant", "model": {"id": "m", "provider": "offline"}}
    assert isinstance(team, TeamSessionDetailSchema) and team.team_id == "crew"
    assert isinstance(flow, WorkflowSessionDetailSchema) and (flow.workflow_id, flow.workflow_name) == ("flow", "Flow")
    assert isinstance(agent_as_team, TeamSessionDetailSchema) and agent_as_team.session_id == "s-agent"


def test_get_session_runs_classifies_each_run(live_api: str) -> None:
    seeded()

    async def scenario(client: AgentOSClient) -> list[Any]:
        return [
            await client.get_session_runs("s-agent"),
            await client.get_session_runs("s-team"),
            await client.get_session_runs("s-flow"),
            await client.get_session_runs("s-agent", status=["error"]),
            await client.get_session_runs("s-agent", created_after=int(T0.timestamp()) + 5),
        ]

    agent_runs, team_runs, flow_runs, errored, later = drive(scenario, live_api)
    assert [type(r) for r in agent_runs] == [RunSchema, RunSchema]
    first = agent_runs[0]
    assert (first.run_id, first.parent_run_id, first.agent_id, first.status, first.run_input, first.content, first.user_id) == (
        "a1", "", "assistant", "COMPLETED", "Hello", "Hi!", "alice"
    )
    assert first.tools == [{"tool_call_id": "c1", "tool_name": "add", "tool_args": {"a": 1}, "result": "1"}]
    assert first.created_at == T0
    assert [(type(r), r.run_id, r.parent_run_id) for r in team_runs] == [(RunSchema, "t1-m", "t1"), (TeamRunSchema, "t1", "")]  # members first, as AgentOS stores them
    assert [(type(r), r.workflow_id, r.status) for r in flow_runs] == [(WorkflowRunSchema, "flow", "PAUSED")]
    assert [r.run_id for r in errored] == [r.run_id for r in later] == ["a2"]


def test_run_previews_sync_and_async(live_api: str) -> None:
    seeded()

    async def scenario(client: AgentOSClient) -> tuple[Any, Any]:
        synced = await asyncio.to_thread(client.get_session_run_previews, "s-team")
        return synced, await client.aget_session_run_previews("s-team", status=["completed"])

    synced, asynced = drive(scenario, live_api)
    assert synced == asynced
    assert [(type(p), p.run_id, p.team_id, p.agent_id, p.parent_run_id, p.run_input) for p in synced] == [
        (SessionRunPreviewSchema, "t1-m", None, "researcher", "t1", "hello"),
        (SessionRunPreviewSchema, "t1", "crew", None, "", "Plan"),
    ]


def test_get_session_run(live_api: str) -> None:
    seeded()

    async def scenario(client: AgentOSClient) -> list[Any]:
        return [await client.get_session_run("s-agent", "a1"), await client.get_session_run("s-team", "t1"), await client.get_session_run("s-flow", "w1")]

    agent_run, team_run, flow_run = drive(scenario, live_api)
    assert isinstance(agent_run, RunSchema) and (agent_run.run_id, agent_run.content) == ("a1", "Hi!")
    assert isinstance(team_run, TeamRunSchema) and team_run.team_id == "crew"
    assert isinstance(flow_run, WorkflowRunSchema) and flow_run.run_input == "Go"


def test_get_session_run_of_an_unknown_run_raises_404(live_api: str) -> None:
    seeded()

    async def scenario(client: AgentOSClient) -> Any:
        return await client.get_session_run("s-agent", "nope")

    with pytest.raises(httpx.HTTPStatusError) as caught:
        drive(scenario, live_api)
    assert (caught.value.response.status_code, caught.value.response.json()) == (404, {"detail": "Run with ID nope not found in session s-agent"})


def test_rename_and_update_session(live_api: str) -> None:
    seeded()

    async def scenario(client: AgentOSClient) -> list[Any]:
        return [
            await client.rename_session("s-agent", "Greetings"),
            await client.update_session("s-team", session_type=SessionType.TEAM, session_state={"round": 2}, metadata={"k": "v"}, summary={"summary": "Planned"}),
            await client.update_session("s-flow", session_name="Flow run"),
        ]

    renamed, updated, flow = drive(scenario, live_api)
    assert isinstance(renamed, AgentSessionDetailSchema) and renamed.session_name == "Greetings"
    assert isinstance(updated, TeamSessionDetailSchema)
    assert (updated.session_state, updated.metadata, updated.session_summary) == ({"round": 2}, {"k": "v"}, {"summary": "Planned"})
    assert isinstance(flow, WorkflowSessionDetailSchema) and flow.session_name == "Flow run"
    assert Session.all_users.get(pk="s-agent").session_name == "Greetings"


def test_delete_session_and_sessions(live_api: str) -> None:
    seeded()

    async def scenario(client: AgentOSClient) -> list[Any]:
        return [
            await client.delete_session("s-agent"),
            await client.delete_sessions(["s-team", "s-flow"], [SessionType.TEAM, SessionType.WORKFLOW]),
            await client.delete_session("never-existed"),
        ]

    assert drive(scenario, live_api) == [None, None, None]
    assert not Session.all_users.exists()
    assert not Run.all_users.exists()


def test_a_sessions_runs_carry_their_events_and_the_session_adds_up_their_tokens(live_api: str) -> None:
    async def scenario(client: AgentOSClient) -> tuple[Any, ...]:
        streamed = [event async for event in client.run_agent_stream("assistant", "stream this", session_id="s-live", user_id="alice")]
        inline = await client.run_agent("assistant", "and this", session_id="s-live", user_id="alice")
        return (
            streamed, inline, await client.get_session_runs("s-live"),
            await client.get_session_run("s-live", streamed[0].run_id), await client.get_session("s-live"),
        )

    streamed, inline, runs, one, session = drive(scenario, live_api)
    kept = [event.event for event in streamed if event.event != "RunContent"]
    assert kept[0] == "RunStarted" and kept[-1] == "RunCompleted"
    assert [event["event"] for event in runs[0].events] == [event["event"] for event in one.events] == kept
    first = streamed[-1].metrics
    assert session.metrics["input_tokens"] == first.input_tokens + inline.metrics.input_tokens
    assert session.metrics["output_tokens"] == first.output_tokens + inline.metrics.output_tokens
    assert session.metrics["total_tokens"] == session.total_tokens == first.total_tokens + inline.metrics.total_tokens
    (model,) = session.metrics["details"]["model"]
    assert (model["id"], model["provider"], model["total_tokens"]) == (
        "demo", "Offline", first.details["model"][0].total_tokens + inline.metrics.details["model"][0].total_tokens,
    )
