"""Issue 35's acceptance harness: every public method of Agno's own ``AgentOSClient`` (agno 3.1.10,
a test-only dependency) against a live server serving what `make run` serves (the seeded demo
agent, ``agents.demo``'s team and workflow, the offline model, anonymous callers as guests,
tracing on).

A method works when it returns without raising and what it returns is right: the values the
client parsed (into its pydantic models and dataclasses) are checked, not only that parsing passed.
Each test names the methods it calls (``covers``); the last test checks that the names are every
public method of the client, so a method added to the client fails here until it is tested.
"""
from __future__ import annotations

import inspect
import io
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from agno.client.os import AgentOSClient
from agno.db.base import SessionType
from agno.db.schemas.evals import EvalType
from agno.knowledge.chunking.strategy import ChunkingStrategyType
from agno.media import File
from agno.os.routers.traces.schemas import TraceSearchGroupBy
from agno.run.base import RunStatus
from django.core.management import call_command

from sessions.models import Run
from tests.api.test_agents_conformance import run
from tests.security.conftest import jwt_server, token  # noqa: F401 (jwt_server: a fixture)
from traces.provider import flush

pytestmark = pytest.mark.django_db(transaction=True)

USER = "alice"  # nobody signs in as alice: a guest may act for her, as on `make run`
ADD = '/call add {"a": 2, "b": 3}'  # the demo agent's calculator
EMAIL = '/call send_email {"to": "bob@example.com", "subject": "Hi"}'  # asks the user to confirm
TEAM_EMAIL = f"Ask the Writer to email Bob.\n{EMAIL}"  # the demo team's Writer asks to confirm


def covers(*methods: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Name the client methods a test calls (read by test_every_public_method_is_covered)."""

    def mark(test: Callable[..., Any]) -> Callable[..., Any]:
        test.client_methods = methods  # type: ignore[attr-defined]
        return test

    return mark


@pytest.fixture
def client(live_api: str, settings, offline_demo) -> AgentOSClient:
    """The client, against the components and defaults `make run` serves without a key."""
    settings.AGENT_MODULES = ["agents.demo"]
    settings.ANONYMOUS_ACCESS = "guests"
    settings.TRACING = True
    call_command("bootstrap", stdout=io.StringIO())
    return AgentOSClient(base_url=live_api, timeout=60)


async def collect(events) -> list[Any]:
    return [event async for event in events]


def names(events: list[Any]) -> list[str]:
    return [type(event).__name__ for event in events]


def confirmed(requirements: list[Any]) -> list[dict[str, Any]]:
    """A paused team run's requirements, each confirmed (as a caller sends them back)."""
    answered = []
    for requirement in requirements:
        body = requirement.to_dict()
        body["confirmation"] = True
        body["tool_execution"]["confirmed"] = True
        answered.append(body)
    return answered


def public_methods() -> set[str]:
    return {name for name, _ in inspect.getmembers(AgentOSClient, inspect.isfunction) if not name.startswith("_")}


# ---- discovery ------------------------------------------------------------------------------



@covers("get_config", "aget_config")
def test_config(client: AgentOSClient) -> None:
    for config in (client.get_config(), run(client.aget_config())):
        assert [workflow.id for workflow in config.workflows] == ["demo-workflow"]
        assert config.learning is not None and config.learning.dbs
        assert config.queue is not None and config.queue.durable is True



@covers("migrate_database")
def test_migrate_database(client: AgentOSClient, jwt_server) -> None:
    """An admin's operation: called with an admin's token (JWT on), as AgentOS's control plane does."""
    admin = {"Authorization": f"Bearer {token('ops', ['agent_os:admin'])}"}
    answer = run(client.migrate_database("agno-site-db", headers=admin))
    assert answer == {"message": "Database migrated successfully to latest version"}


# ---- agents ---------------------------------------------------------------------------------


@covers("list_agents", "get_agent", "aget_agent")
def test_agents_catalogue(client: AgentOSClient) -> None:
    listed = run(client.list_agents())
    assert [agent.id for agent in listed][:5] == ["demo-docs", "demo-planets", "demo-learner", "demo-planner", "demo"]
    assert client.get_agent("demo").name == "Demo Agent"
    assert run(client.aget_agent("demo-docs")).name == "Docs Agent"


@covers("run_agent", "run_agent_stream", "cancel_agent_run")
def test_agent_runs(client: AgentOSClient) -> None:
    output = run(client.run_agent("demo", "What is 6 times 7?", session_id="a-1", user_id=USER))
    assert (output.status, output.agent_id, output.session_id, output.user_id) == (RunStatus.completed, "demo", "a-1", USER)
    assert output.content
    events = run(collect(client.run_agent_stream("demo", "hello", session_id="a-1", user_id=USER)))
    assert names(events)[0] == "RunStartedEvent" and names(events)[-1] == "RunCompletedEvent"
    assert events[-1].run_id == events[0].run_id and events[-1].content
    assert run(client.cancel_agent_run("demo", output.run_id)) is None


@covers("continue_agent_run", "continue_agent_run_stream")
def test_agent_pause_and_continue(client: AgentOSClient) -> None:
    paused = run(client.run_agent("demo", EMAIL, session_id="a-p", user_id=USER))
    assert paused.status == RunStatus.paused and paused.tools[0].requires_confirmation
    paused.tools[0].confirmed = True
    done = run(client.continue_agent_run("demo", paused.run_id, paused.tools, session_id="a-p", user_id=USER))
    assert done.status == RunStatus.completed and "bob@example.com" in done.content

    paused = run(client.run_agent("demo", EMAIL, session_id="a-p", user_id=USER))
    paused.tools[0].confirmed = True
    events = run(collect(client.continue_agent_run_stream("demo", paused.run_id, paused.tools, session_id="a-p", user_id=USER)))
    assert names(events)[-1] == "RunCompletedEvent" and "bob@example.com" in events[-1].content


# ---- teams (item 5) ---------------------------------------------------------------------------


@covers("list_teams", "get_team", "aget_team")
def test_teams_catalogue(client: AgentOSClient) -> None:
    assert [team.id for team in run(client.list_teams())] == ["demo-team"]
    team = client.get_team("demo-team")
    assert (team.mode, [member.id for member in team.members]) == ("coordinate", ["demo-researcher", "demo-writer"])
    assert run(client.aget_team("demo-team")).name == "Demo Team"


@covers("run_team", "run_team_stream", "cancel_team_run")
def test_team_runs(client: AgentOSClient) -> None:
    output = run(client.run_team("demo-team", "What is 2 plus 2?", session_id="t-1", user_id=USER))
    assert (output.status, output.team_id, output.session_id) == (RunStatus.completed, "demo-team", "t-1")
    [member] = output.member_responses
    assert (member.agent_id, member.parent_run_id, member.status) == ("demo-researcher", output.run_id, RunStatus.completed)
    [delegation] = output.tools
    assert (delegation.tool_name, delegation.tool_args["member_id"]) == ("delegate_task_to_member", "demo-researcher")
    assert output.events == []  # Agno keeps no events of a non-streamed run that simply ends

    events = run(collect(client.run_team_stream("demo-team", "hello team", session_id="t-1", user_id=USER)))
    assert names(events)[0] == "RunStartedEvent" and names(events)[-1] == "RunCompletedEvent"
    assert events[0].team_id == "demo-team" and events[-1].content
    assert "RunStartedEvent" in names(events)[1:]  # the member's, relayed between the team's
    assert run(client.cancel_team_run("demo-team", output.run_id)) is None


@covers("run_team", "continue_team_run")
def test_a_team_paused_by_its_member_answers_requirements_tools_and_events_and_continues(client: AgentOSClient) -> None:
    paused = run(client.run_team("demo-team", TEAM_EMAIL, session_id="t-p", user_id=USER))
    assert paused.status == RunStatus.paused
    [requirement] = paused.requirements
    assert (requirement.member_agent_id, requirement.tool_execution.tool_name) == ("demo-writer", "send_email")
    assert requirement.needs_confirmation
    [delegation] = paused.tools
    assert (delegation.tool_name, delegation.tool_args["member_id"]) == ("delegate_task_to_member", "demo-writer")
    [pause] = paused.events
    assert (type(pause).__name__, pause.run_id, pause.team_id) == ("RunPausedEvent", paused.run_id, "demo-team")
    assert [req.id for req in pause.requirements] == [requirement.id]

    done = run(client.continue_team_run("demo-team", paused.run_id, confirmed(paused.requirements), session_id="t-p", user_id=USER))
    assert (done.run_id, done.status) == (paused.run_id, RunStatus.completed)
    assert "Email to bob@example.com with subject 'Hi' was queued" in done.content
    assert [type(event).__name__ for event in done.events] == ["RunPausedEvent", "RunContinuedEvent"]
    assert done.requirements == []  # answered in the member's run, as AgentOS keeps them
    [member] = done.member_responses
    assert (member.agent_id, member.status, member.tools[0].confirmed) == ("demo-writer", RunStatus.completed, True)
    assert "was queued" in member.tools[0].result
    assert Run.objects.for_user(USER).get(pk=member.run_id).status == "COMPLETED"


@covers("run_team_stream", "continue_team_run_stream")
def test_a_streamed_team_pause_is_continued_as_a_stream(client: AgentOSClient) -> None:
    events = run(collect(client.run_team_stream("demo-team", TEAM_EMAIL, session_id="t-s", user_id=USER)))
    pause = events[-1]
    # The member's RunPaused, the delegation's end, then the team's TeamRunPaused, as AgentOS streams them.
    assert names(events)[-3:] == ["RunPausedEvent", "ToolCallCompletedEvent", "RunPausedEvent"]
    assert (events[-3].agent_id, pause.team_id) == ("demo-writer", "demo-team")
    [requirement] = pause.requirements
    assert requirement.member_agent_id == "demo-writer"
    continued = run(collect(client.continue_team_run_stream("demo-team", pause.run_id, confirmed(pause.requirements), session_id="t-s", user_id=USER)))
    assert "RunContinuedEvent" in names(continued) and names(continued)[-1] == "RunCompletedEvent"
    assert continued[-1].run_id == pause.run_id and "was queued" in continued[-1].content


# ---- workflows (item 6) -----------------------------------------------------------------------


@covers("list_workflows", "get_workflow", "aget_workflow")
def test_workflows_catalogue(client: AgentOSClient) -> None:
    [summary] = run(client.list_workflows())
    assert (summary.id, summary.name, summary.db_id, summary.is_component, summary.is_factory, summary.sandboxed) == (
        "demo-workflow", "Demo Workflow", "agno-site-db", False, False, False)
    detail = client.get_workflow("demo-workflow")
    assert [(step["name"], step["type"]) for step in detail.steps] == [("gather", "Parallel"), ("combine", "Step"), ("double-check", "Condition"), ("publish", "Step")]
    assert [step["agent"]["id"] for step in detail.steps[0]["steps"]] == ["demo-flow-researcher", "demo-flow-docs"]
    assert run(client.aget_workflow("demo-workflow")).id == "demo-workflow"


@covers("run_workflow", "continue_workflow_run")
def test_the_demo_workflow_waits_for_review_and_is_continued(client: AgentOSClient) -> None:
    paused = run(client.run_workflow("demo-workflow", "Brief me on background jobs", session_id="w-1", user_id=USER))
    assert (paused.status, paused.workflow_id, paused.paused_step_name) == (RunStatus.paused, "demo-workflow", "publish")
    assert [result.step_name for result in paused.step_results] == ["gather", "combine", "double-check"]
    assert {run_output.agent_id for run_output in paused.step_executor_runs} == {"demo-flow-researcher", "demo-flow-docs"}
    [requirement] = paused.step_requirements
    assert (requirement.step_name, requirement.confirmation_message) == ("publish", "Publish this brief?")
    requirement.confirmed = True
    done = run(client.continue_workflow_run("demo-workflow", paused.run_id, [requirement], session_id="w-1", user_id=USER))
    assert (done.run_id, done.status) == (paused.run_id, RunStatus.completed)
    assert done.content.startswith("Published (demo: nothing left the server)")
    assert [type(event).__name__ for event in done.events] == ["StepContinuedEvent"]
    with pytest.raises(httpx.HTTPStatusError) as again:  # the same answer sent twice
        run(client.continue_workflow_run("demo-workflow", paused.run_id, [requirement], session_id="w-1", user_id=USER))
    assert (again.value.response.status_code, again.value.response.json()["detail"]) == (409, "run is already completed")


@covers("run_workflow_stream", "continue_workflow_run_stream", "cancel_workflow_run")
def test_the_demo_workflow_streams_pauses_continues_and_cancels(client: AgentOSClient) -> None:
    events = run(collect(client.run_workflow_stream("demo-workflow", "Brief me on schedules", session_id="w-2", user_id=USER)))
    assert names(events)[0] == "WorkflowStartedEvent" and names(events)[-1] == "WorkflowPausedEvent"
    assert {"ParallelExecutionStartedEvent", "StepStartedEvent", "RunStartedEvent"} <= set(names(events))
    pause = events[-1]
    [requirement] = pause.step_requirements  # the event keeps them as dicts
    assert requirement["step_name"] == "publish"
    requirement["confirmed"] = True
    continued = run(collect(client.continue_workflow_run_stream("demo-workflow", pause.run_id, [requirement], session_id="w-2", user_id=USER)))
    assert names(continued)[0] == "StepContinuedEvent" and names(continued)[-1] == "WorkflowCompletedEvent"
    assert continued[-1].content.startswith("Published")

    waiting = run(client.run_workflow("demo-workflow", "Brief me on tenancy", session_id="w-3", user_id=USER))
    assert run(client.cancel_workflow_run("demo-workflow", waiting.run_id)) is None
    # As AgentOS: a cancel reaches a run that executes; a paused one stays paused.
    assert Run.objects.for_user(USER).get(pk=waiting.run_id).status == "PAUSED"


# ---- sessions -------------------------------------------------------------------------------


@covers("create_session", "get_sessions", "get_session", "rename_session", "update_session", "delete_session", "delete_sessions")
def test_sessions(client: AgentOSClient) -> None:
    created = run(client.create_session(SessionType.AGENT, session_id="s-1", user_id=USER, agent_id="demo", session_name="first"))
    assert (created.session_id, created.session_name) == ("s-1", "first")
    run(client.create_session(SessionType.AGENT, session_id="s-2", user_id=USER, agent_id="demo"))
    run(client.create_session(SessionType.AGENT, session_id="s-3", user_id=USER, agent_id="demo"))
    listed = run(client.get_sessions(SessionType.AGENT, user_id=USER))
    assert {item.session_id for item in listed.data} == {"s-1", "s-2", "s-3"}
    assert run(client.get_session("s-1", user_id=USER)).session_name == "first"
    assert run(client.rename_session("s-1", "renamed", user_id=USER)).session_name == "renamed"
    updated = run(client.update_session("s-1", session_state={"step": 2}, user_id=USER))
    assert updated.session_state == {"step": 2}
    run(client.delete_session("s-1", user_id=USER))
    run(client.delete_sessions(["s-2", "s-3"], [SessionType.AGENT, SessionType.AGENT], user_id=USER))
    assert run(client.get_sessions(SessionType.AGENT, user_id=USER)).data == []


@covers("get_session_runs", "get_session_run", "get_session_run_previews", "aget_session_run_previews")
def test_session_runs(client: AgentOSClient) -> None:
    first = run(client.run_agent("demo", "one", session_id="s-r", user_id=USER))
    second = run(client.run_agent("demo", "two", session_id="s-r", user_id=USER))
    runs = run(client.get_session_runs("s-r", user_id=USER))
    assert [item.run_id for item in runs] == [first.run_id, second.run_id]
    assert run(client.get_session_run("s-r", second.run_id, user_id=USER)).run_input == "two"
    previews = client.get_session_run_previews("s-r", user_id=USER)
    assert [item.run_id for item in previews] == [first.run_id, second.run_id]
    assert [item.run_id for item in run(client.aget_session_run_previews("s-r", user_id=USER))] == [first.run_id, second.run_id]


# ---- memories -------------------------------------------------------------------------------


@covers("create_memory", "get_memory", "list_memories", "update_memory", "get_memory_topics", "get_user_memory_stats", "delete_memory", "delete_memories")
def test_memories(client: AgentOSClient) -> None:
    tea = run(client.create_memory("Alice likes tea", user_id=USER, topics=["drinks"]))
    bikes = run(client.create_memory("Alice rides a bike", user_id=USER, topics=["sport"]))
    assert run(client.get_memory(tea.memory_id, user_id=USER)).memory == "Alice likes tea"
    assert {item.memory_id for item in run(client.list_memories(user_id=USER)).data} == {tea.memory_id, bikes.memory_id}
    updated = run(client.update_memory(tea.memory_id, "Alice likes green tea", user_id=USER, topics=["drinks"]))
    assert updated.memory == "Alice likes green tea"
    assert set(run(client.get_memory_topics(user_id=USER))) == {"drinks", "sport"}
    stats = run(client.get_user_memory_stats(user_id=USER))
    assert [(row.user_id, row.total_memories) for row in stats.data] == [(USER, 2)]
    run(client.delete_memory(bikes.memory_id, user_id=USER))
    run(client.delete_memories([tea.memory_id], user_id=USER))
    assert run(client.list_memories(user_id=USER)).data == []


@covers("optimize_memories")
def test_optimize_memories(client: AgentOSClient) -> None:
    for text in ("Alice likes tea", "Alice likes green tea"):
        run(client.create_memory(text, user_id=USER))
    optimized = run(client.optimize_memories(user_id=USER, apply=False))
    assert optimized.memories_before == 2 and optimized.memories


# ---- knowledge --------------------------------------------------------------------------------


@pytest.fixture
def ingesting(settings, worker):
    settings.EMBEDDED_WORKER = True  # contents are ingested by the server's own worker, as on make run


def wait_completed(client: AgentOSClient, content_ids: list[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if {run(client.get_knowledge_content_status(cid)).status.value for cid in content_ids} == {"completed"}:
            return
        time.sleep(0.2)
    raise AssertionError("the contents were not ingested")


@covers(
    "upload_knowledge_content", "get_knowledge_content_status", "list_knowledge_content", "get_knowledge_content",
    "update_knowledge_content", "search_knowledge", "delete_knowledge_content", "delete_all_knowledge_content",
)
def test_knowledge(client: AgentOSClient, ingesting) -> None:
    note = run(client.upload_knowledge_content(name="kettle", text_content="Green tea is steeped at eighty degrees.", metadata={"topic": "tea"}))
    upload = run(client.upload_knowledge_content(file=File(content=b"# Bikes\n\nOil the chain.", filename="bikes.md", mime_type="text/markdown")))
    wait_completed(client, [note.id, upload.id])
    assert {item.id for item in run(client.list_knowledge_content()).data} == {note.id, upload.id}
    assert run(client.get_knowledge_content(note.id)).name == "kettle"
    assert run(client.update_knowledge_content(note.id, name="tea notes")).name == "tea notes"
    found = run(client.search_knowledge("what temperature for green tea?", max_results=1))
    assert [item.content_id for item in found.data] == [note.id]
    assert run(client.delete_knowledge_content(upload.id)).id == upload.id
    assert run(client.delete_all_knowledge_content()) == "success"
    assert run(client.list_knowledge_content()).data == []



@covers("get_knowledge_config")
def test_knowledge_config(client: AgentOSClient) -> None:
    config = run(client.get_knowledge_config())
    # AgentOS lists every chunking strategy Agno has, as available or not (with why).
    listed = set(config.chunkers or {}) | set(config.unavailable_chunkers or {})
    assert {strategy.value for strategy in ChunkingStrategyType} <= listed



@covers("get_knowledge_content")
def test_knowledge_content_carries_agno_metadata_and_status_message(client: AgentOSClient, ingesting) -> None:
    note = run(client.upload_knowledge_content(name="kettle", text_content="Green tea.", metadata={"topic": "tea"}))
    wait_completed(client, [note.id])
    content = run(client.get_knowledge_content(note.id))
    assert content.metadata["_agno"]["vectors_indexed"] is True and content.metadata["topic"] == "tea"
    # AgentOS sets status_message when a content fails (with why) and leaves it null otherwise.
    assert (content.status, content.status_message) == ("completed", None)


# ---- evals ----------------------------------------------------------------------------------


@covers("list_eval_runs", "delete_eval_runs")
def test_eval_runs_listed_and_deleted(client: AgentOSClient, worker) -> None:
    made = run(client.run_eval(EvalType.RELIABILITY, ADD, agent_id="demo", expected_tool_calls=["add"]))
    assert made.eval_data["eval_status"] == "PASSED"
    assert [item.id for item in run(client.list_eval_runs()).data] == [made.id]
    run(client.delete_eval_runs([made.id]))
    assert run(client.list_eval_runs()).data == []



@covers("run_eval", "get_eval_run", "update_eval_run")
def test_eval_data(client: AgentOSClient, worker) -> None:
    made = run(client.run_eval(EvalType.RELIABILITY, ADD, agent_id="demo", expected_tool_calls=["add"]))
    assert made.eval_data["run_id"] == made.id
    # A performance eval reads back as AgentOS stores it: its statistics, and each run's time.
    timed = run(client.run_eval(EvalType.PERFORMANCE, "hello", agent_id="demo", num_iterations=2))
    assert timed.eval_data["run_id"] == timed.id
    for read in (run(client.get_eval_run(timed.id)), run(client.update_eval_run(timed.id, name="timed"))):
        assert read.eval_data["result"] and len(read.eval_data["runs"]) == 2


# ---- traces ---------------------------------------------------------------------------------


@covers("get_trace_session_stats")
def test_trace_session_stats(client: AgentOSClient) -> None:
    run(client.run_agent("demo", "hello", session_id="tr-1", user_id=USER))
    assert flush()
    assert [row.session_id for row in run(client.get_trace_session_stats(user_id=USER)).data] == ["tr-1"]



@covers("get_traces", "get_trace", "search_traces")
def test_traces(client: AgentOSClient) -> None:
    # The guest's own run (get_trace takes no user_id: a guest reads its own traces by id).
    made = run(client.run_agent("demo", "What is 6 times 7?", session_id="tr-2"))
    assert flush()
    [summary] = run(client.get_traces(run_id=made.run_id)).data
    assert summary.run_id == made.run_id
    assert run(client.get_trace(summary.trace_id)).trace_id == summary.trace_id
    found = run(client.search_traces({"op": "EQ", "key": "run_id", "value": made.run_id}, group_by=TraceSearchGroupBy.RUN))
    assert [item.trace_id for item in found.data] == [summary.trace_id]


# ---- metrics --------------------------------------------------------------------------------


@covers("refresh_metrics", "get_metrics", "get_metrics_refresh_status")
def test_metrics(client: AgentOSClient) -> None:
    run(client.run_agent("demo", "hello", session_id="m-1"))  # a guest's metrics are of the rows without an owner
    refreshed = run(client.refresh_metrics())
    assert isinstance(refreshed, list) and sum(day.agent_runs_count for day in refreshed) == 1
    metrics = run(client.get_metrics())
    assert sum(day.agent_runs_count for day in metrics.metrics) == 1
    status = run(client.get_metrics_refresh_status())
    assert (status.status, status.error) == ("completed", None) and status.finished_at is not None


# ---- the harness itself -----------------------------------------------------------------------


def test_every_public_method_is_covered() -> None:
    covered = {method for test in globals().values() if callable(test) for method in getattr(test, "client_methods", ())}
    assert covered <= public_methods(), f"not methods of the client: {sorted(covered - public_methods())}"
    assert public_methods() - covered == set(), "a client method no test here calls"
