"""Agno's own AgentOSClient (agno 3.1.10) against a live Agno Site: agents, teams, runs, config."""
from __future__ import annotations

import asyncio
import json
import threading

import httpx
import pytest
from agno.client.os import AgentOSClient
from agno.run.agent import RunCompletedEvent, RunContentEvent, RunStartedEvent
from agno.run.base import RunStatus
from agno.run.team import RunCompletedEvent as TeamRunCompletedEvent
from agno.run.team import RunContentEvent as TeamRunContentEvent
from agno.run.team import RunStartedEvent as TeamRunStartedEvent
from agno.run.team import TeamRunOutput
from agno.run.team import ToolCallStartedEvent as TeamToolCallStartedEvent
from agno.utils.http import aclose_default_clients, close_sync_client

from sessions.models import Run, RunEvent
from tests.fakes._base import Reply

pytestmark = pytest.mark.django_db(transaction=True)


def run(coro):
    """One event loop per call: the client's shared httpx clients are closed with it."""

    async def main():
        try:
            return await coro
        finally:
            await aclose_default_clients()

    try:
        return asyncio.run(main())
    finally:
        close_sync_client()


@pytest.fixture
def client(live_api: str) -> AgentOSClient:
    return AgentOSClient(base_url=live_api, timeout=30)


def test_config_lists_agents_models_and_databases(client: AgentOSClient) -> None:
    config = client.get_config()
    assert config.os_id == "agno-site"
    assert [agent.id for agent in config.agents] == ["assistant", "hitl-agent", "openai-agent"]
    assert {(model.id, model.provider) for model in config.available_models} == {("demo", "Offline"), ("gpt-4o-mini", "OpenAI")}
    assert config.databases == [config.os_database]
    assert [(team.id, team.mode) for team in config.teams] == [("research-team", "coordinate"), ("hitl-team", "route")]
    assert [workflow.id for workflow in config.workflows] == ["draft-flow", "review-flow"]
    assert config.interfaces == []


def test_list_and_get_agents(client: AgentOSClient) -> None:
    agents = run(client.list_agents())
    assert [(agent.id, agent.name) for agent in agents] == [("assistant", "Assistant"), ("hitl-agent", "HITL Agent"), ("openai-agent", "OpenAI Agent")]
    detail = client.get_agent("assistant")
    assert (detail.id, detail.name, detail.model.model, detail.model.provider) == ("assistant", "Assistant", "demo", "Offline")
    assert "add" in {tool["name"] for tool in detail.tools["tools"]}
    hitl = client.get_agent("hitl-agent")
    assert {tool["name"]: tool.get("requires_confirmation") for tool in hitl.tools["tools"]} == {"delete_file": True, "wire_money": None}


def test_run_agent_returns_a_parsed_run_output(client: AgentOSClient) -> None:
    output = run(client.run_agent("assistant", "hello client", session_id="c-1", user_id="alice", session_state={"plan": "pro"}))
    assert output.status == RunStatus.completed
    assert output.content == "(offline demo) You said: hello client This is the first message I see from you."
    assert (output.session_id, output.user_id, output.agent_id) == ("c-1", "alice", "assistant")
    assert output.session_state == {"plan": "pro"}
    assert output.metrics.total_tokens > 0
    assert [message.role for message in output.messages][-2:] == ["user", "assistant"]
    assert Run.objects.for_user("alice").get(pk=output.run_id).status == "COMPLETED"


def test_run_agent_stream_yields_typed_events(client: AgentOSClient) -> None:
    async def collect():
        return [event async for event in client.run_agent_stream("assistant", "stream for the client", user_id="alice")]

    events = run(collect())
    assert isinstance(events[0], RunStartedEvent)
    assert isinstance(events[-1], RunCompletedEvent)
    deltas = [event.content for event in events if isinstance(event, RunContentEvent)]
    assert "".join(deltas) == events[-1].content


def test_continue_agent_run_after_a_pause(client: AgentOSClient) -> None:
    paused = run(client.run_agent("hitl-agent", '/call delete_file {"path": "a.txt"}', session_id="c-h", user_id="alice"))
    assert paused.status == RunStatus.paused and paused.is_paused
    tools = paused.tools
    tools[0].confirmed = True
    done = run(client.continue_agent_run("hitl-agent", paused.run_id, tools=tools, session_id="c-h", user_id="alice"))
    assert done.status == RunStatus.completed
    assert done.tools[0].result == "deleted a.txt"


def test_continue_agent_run_stream(client: AgentOSClient) -> None:
    paused = run(client.run_agent("hitl-agent", '/call delete_file {"path": "b.txt"}', session_id="c-hs", user_id="alice"))
    tools = paused.tools
    tools[0].confirmed = False
    tools[0].confirmation_note = "not today"

    async def collect():
        return [event async for event in client.continue_agent_run_stream("hitl-agent", paused.run_id, tools=tools, session_id="c-hs", user_id="alice")]

    events = run(collect())
    assert events[0].event == "RunContinued" and isinstance(events[-1], RunCompletedEvent)
    assert "not today" in events[-1].content


def test_cancel_agent_run_stops_a_stream_in_flight(client: AgentOSClient, fake_openai) -> None:
    # The model sends its first word, then waits: the cancel lands while the run is mid-answer.
    gate = threading.Event()
    fake_openai.push(Reply(text="one two three four five", gate=gate, gate_after=2))

    async def cancel_mid_stream():
        events = []
        async for event in client.run_agent_stream("openai-agent", "talk slowly", session_id="c-cancel", user_id="alice"):
            events.append(event)
            if isinstance(event, RunContentEvent) and event.content == "one " and not gate.is_set():
                assert await client.cancel_agent_run("openai-agent", event.run_id) is None
                gate.set()
        return events

    events = run(cancel_mid_stream())
    assert [event.event for event in events if not isinstance(event, RunContentEvent)][-2:] == ["RunCancelled", "RunCompleted"]
    last = events[-1]
    assert "".join(event.content for event in events if isinstance(event, RunContentEvent)) == "one "
    assert (last.content, last.content_type, last.session_state) == ("one ", "str", {})
    assert last.metrics.duration > 0
    stored = Run.objects.for_user("alice").get(pk=last.run_id)
    assert stored.status == "CANCELLED"
    assert list(RunEvent.objects.for_user("alice").filter(run=stored).order_by("event_index").values_list("event", flat=True))[-2:] == ["RunCancelled", "RunCompleted"]
    assert run(client.cancel_agent_run("assistant", "some-run-id")) is None


@pytest.mark.parametrize(("call", "detail"), [
    (lambda client: client.run_team("crew", "hello"), "Team not found"),
    (lambda client: client.cancel_team_run("crew", "r1"), "Team not found"),
    (lambda client: client.run_workflow("flow", "hello"), "Workflow not found"),
    (lambda client: client.cancel_workflow_run("flow", "r1"), "Workflow not found"),
])
def test_team_and_workflow_calls_find_no_such_component(client: AgentOSClient, call, detail: str) -> None:
    with pytest.raises(httpx.HTTPStatusError) as caught:
        run(call(client))
    assert (caught.value.response.status_code, caught.value.response.json()) == (404, {"detail": detail})


def _delegate(member_id: str, task: str) -> str:
    return "/call delegate_task_to_member " + json.dumps({"member_id": member_id, "task": task})


def test_list_and_get_teams(client: AgentOSClient) -> None:
    teams = run(client.list_teams())
    assert [(team.id, team.mode) for team in teams] == [("research-team", "coordinate"), ("hitl-team", "route")]
    detail = client.get_team("research-team")
    assert (detail.id, detail.mode, detail.model.model) == ("research-team", "coordinate", "demo")
    assert [member.id for member in detail.members] == ["researcher", "writer"]
    assert run(client.aget_team("hitl-team")).members[0].id == "hitl-member"


def test_run_team_returns_a_team_run_output_with_its_members(client: AgentOSClient) -> None:
    output = run(client.run_team("research-team", _delegate("researcher", "look it up"), session_id="ct-1", user_id="alice"))
    assert isinstance(output, TeamRunOutput)
    assert (output.status, output.team_id, output.session_id) == (RunStatus.completed, "research-team", "ct-1")
    [member] = output.member_responses
    assert (member.agent_id, member.parent_run_id) == ("researcher", output.run_id)
    assert member.content.startswith("(offline demo) You said: look it up")


def test_run_team_stream_yields_team_and_member_events(client: AgentOSClient) -> None:
    async def collect():
        return [event async for event in client.run_team_stream("research-team", _delegate("writer", "write it"), user_id="alice")]

    events = run(collect())
    assert isinstance(events[0], TeamRunStartedEvent) and isinstance(events[-1], TeamRunCompletedEvent)
    assert any(isinstance(event, TeamToolCallStartedEvent) for event in events)
    assert "".join(event.content for event in events if isinstance(event, TeamRunContentEvent)) == events[-1].content


def test_continue_team_run_after_a_members_pause(client: AgentOSClient) -> None:
    paused = run(client.run_team("hitl-team", _delegate("hitl-member", '/call delete_file {"path": "x.txt"}'), session_id="ct-p", user_id="alice"))
    assert paused.status == RunStatus.paused
    [requirement] = paused.requirements
    assert requirement.member_agent_id == "hitl-member"
    requirement.confirm()
    done = run(client.continue_team_run("hitl-team", paused.run_id, [requirement], session_id="ct-p", user_id="alice"))
    assert (done.status, done.content) == (RunStatus.completed, "Tool delete_file returned: deleted x.txt")


def test_continue_team_run_stream_and_cancel(client: AgentOSClient) -> None:
    paused = run(client.run_team("hitl-team", _delegate("hitl-member", '/call delete_file {"path": "y.txt"}'), session_id="ct-s", user_id="alice"))
    [requirement] = paused.requirements
    requirement.reject("not that one")

    async def collect():
        return [event async for event in client.continue_team_run_stream("hitl-team", paused.run_id, [requirement], session_id="ct-s", user_id="alice")]

    events = run(collect())
    assert isinstance(events[-1], TeamRunCompletedEvent)
    assert "rejected" in events[-1].content
    assert run(client.cancel_team_run("research-team", "some-run-id")) is None


def test_a_team_session_reads_back_as_agentos_shapes_it(client: AgentOSClient) -> None:
    from agno.db.base import SessionType
    from agno.os.schema import RunSchema, TeamRunSchema, TeamSessionDetailSchema

    output = run(client.run_team("research-team", _delegate("researcher", "remember this"), session_id="ct-s1", user_id="alice"))
    session = run(client.get_session("ct-s1", session_type=SessionType.TEAM, user_id="alice"))
    assert isinstance(session, TeamSessionDetailSchema)
    assert (session.team_id, session.session_id) == ("research-team", "ct-s1")
    runs = run(client.get_session_runs("ct-s1", session_type=SessionType.TEAM, user_id="alice"))
    by_id = {item.run_id: item for item in runs}
    assert isinstance(by_id[output.run_id], TeamRunSchema)
    member = by_id[output.member_responses[0].run_id]
    assert isinstance(member, RunSchema) and (member.agent_id, member.parent_run_id) == ("researcher", output.run_id)
    listed = run(client.get_sessions(session_type=SessionType.TEAM, user_id="alice"))
    assert "ct-s1" in [item.session_id for item in listed.data]
