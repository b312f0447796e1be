"""Run observers (agents.pipeline.observers): approvals, the scheduler and traces register with the
run pipeline in ready(), the pipeline imports none of them, and an observer registered the same
way is told of every run's start and end whatever started it: the API, the workflow socket, a
schedule's fire, an eval, and the runs made inside a run (a team's members, a workflow's steps)."""
from __future__ import annotations

import ast
import asyncio
import json
import threading
from datetime import datetime, timezone as dt_timezone
from pathlib import Path
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from agents.consumers import WorkflowSocket
from agents.pipeline import observers
from agents.pipeline.observers import RunEnd
from agents.pipeline.runs import RunRequest
from agents.pipeline.submit import submit_run
from core.auth import Principal
from scheduler.services.firing import fire
from scheduler.services.schedules import schedule_create
from sessions.models import RunOrigin
from tests.agents.conftest import wait_for
from tests.api.sse import parse_sse

ROOT = Path(__file__).resolve().parents[2]
ALICE = Principal(user_id="alice", isolated=True, via="session")


class Recorder:
    """An observer of both events, registered as an app registers its own."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started: list[str] = []
        self.events: dict[str, list[str]] = {}
        self.ended: dict[str, RunEnd] = {}

    def on_start(self, run: Any):
        with self.lock:
            self.started.append(run.pk)
            self.events[run.pk] = []
        return lambda event: self.events[run.pk].append(event.get("event"))

    def on_end(self, end: RunEnd) -> None:
        with self.lock:
            self.ended[end.run_id] = end


@pytest.fixture
def recorder():
    seen = Recorder()
    observers.register_run_start("test-recorder", seen.on_start)
    observers.register_run_end("test-recorder", seen.on_end)
    yield seen
    observers.unregister("test-recorder")


def test_approvals_the_scheduler_and_traces_register_in_ready() -> None:
    registered = observers.registered()
    assert {"approvals", "scheduler"} <= set(registered["run_end"])
    assert "traces" in registered["run_start"]
    assert "approvals" in registered["continue_gate"]
    assert "traces" in registered["hooks_ran"]  # background post-hooks are a trace of their own


def test_the_pipeline_imports_none_of_its_observers() -> None:
    pipeline = [*sorted((ROOT / "agents" / "pipeline").glob("*.py")), *sorted((ROOT / "agents" / "api").glob("*.py")), ROOT / "agents" / "consumers.py"]
    found = []
    for path in pipeline:
        for node in ast.walk(ast.parse(path.read_text())):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.relative_to(ROOT)}: {name}" for name in names if name.split(".")[0] in ("approvals", "scheduler", "traces")]
    assert found == []


@pytest.mark.django_db(transaction=True)
class TestEveryEntryPoint:
    def test_an_api_run(self, client, recorder) -> None:
        response = client.post("/agents/assistant/runs", data={"message": "hello", "stream": "false", "session_id": "obs-api"})
        assert response.status_code == 200, response.content
        run_id = response.json()["run_id"]
        assert recorder.started == [run_id]
        assert recorder.events[run_id][0] == "RunStarted" and recorder.events[run_id][-1] == "RunCompleted"
        end = recorder.ended[run_id]
        assert (end.status, end.after_pause, end.record.origin, end.record.component_id) == ("COMPLETED", False, RunOrigin.API, "assistant")

    def test_a_workflow_started_over_the_socket(self, recorder, worker) -> None:
        worker()

        async def start() -> list[dict[str, Any]]:
            socket = WebsocketCommunicator(WorkflowSocket.as_asgi(), "/workflows/ws")
            await socket.connect()
            await socket.receive_json_from()  # connected
            await socket.send_json_to({"action": "start-workflow", "workflow_id": "draft-flow", "message": "over the socket", "user_id": "alice", "session_id": "obs-ws"})
            seen: list[dict[str, Any]] = []
            while not seen or seen[-1].get("event") not in ("WorkflowCompleted", "WorkflowError", "error"):
                text = await socket.receive_from(timeout=20)
                # Run events go out as SSE frames, the socket's own messages as JSON.
                seen.append(parse_sse(text)[0][1] if text.startswith("event: ") else json.loads(text))
            await socket.disconnect()
            return seen

        seen = asyncio.run(start())
        run_id = seen[-1]["run_id"]
        assert seen[-1]["event"] == "WorkflowCompleted", seen
        end = wait_for(lambda: recorder.ended.get(run_id))
        assert run_id in recorder.started and recorder.events[run_id][-1] == "WorkflowCompleted"
        assert (end.status, end.record.origin) == ("COMPLETED", RunOrigin.API)
        # Its agent steps are runs of their own, told with it.
        steps = [record for record in end.records() if record.origin == RunOrigin.WORKFLOW_STEP]
        assert len(steps) == 2 and all(record.parent_run_id == run_id for record in steps)

    def test_a_schedules_fire(self, recorder, worker) -> None:
        worker()
        schedule = schedule_create(owner_id="alice", name="observed", endpoint="/agents/assistant/runs", cron_expr="* * * * *", payload={"message": "scheduled"})
        claimed = fire(schedule.pk, datetime(2026, 12, 3, 9, 0, tzinfo=dt_timezone.utc))
        assert claimed is not None
        end = wait_for(lambda: recorder.ended.get(claimed.run_id))
        assert claimed.run_id in recorder.started
        assert (end.status, end.owner_id, end.record.origin) == ("COMPLETED", "alice", RunOrigin.SCHEDULE)

    def test_an_eval(self, client, recorder, worker) -> None:
        body = {"eval_type": "reliability", "input": '/call add {"a": 2, "b": 3}', "agent_id": "assistant", "expected_tool_calls": ["add"]}
        response = client.post("/eval-runs", data=json.dumps(body), content_type="application/json")
        assert response.status_code == 200, response.content
        [end] = [end for end in recorder.ended.values() if end.record is not None and end.record.origin == RunOrigin.EVAL]
        assert end.run_id in recorder.started and end.status == "COMPLETED"
        assert recorder.events[end.run_id][-1] == "RunCompleted"

    def test_a_teams_members(self, recorder) -> None:
        done = submit_run(principal=ALICE, component_id="research-team", kind="team", request=RunRequest(message="what is 2+2?", stream=False))
        run_id = done.output["run_id"]
        end = recorder.ended[run_id]
        members = [record for record in end.records() if record.origin == RunOrigin.TEAM_MEMBER]
        assert recorder.started == [run_id] and end.status == "COMPLETED"
        assert members and all(record.parent_run_id == run_id for record in members)
        assert {record.run_id for record in members} == {member["run_id"] for member in done.output["member_responses"]}

    def test_a_workflows_steps_inline(self, recorder) -> None:
        done = submit_run(principal=ALICE, component_id="draft-flow", kind="workflow", request=RunRequest(message="inline", stream=False))
        run_id = done.output["run_id"]
        end = recorder.ended[run_id]
        steps = [record for record in end.records() if record.origin == RunOrigin.WORKFLOW_STEP]
        assert recorder.started == [run_id]
        assert {record.run_id for record in steps} == {step["run_id"] for step in done.output["step_executor_runs"]}


@pytest.mark.django_db
def test_a_run_end_observer_is_told_only_of_the_ends_it_says_concern_it(recorder) -> None:
    """``applies`` is asked first; when no observer applies (most runs: no approval call, no
    pause), the run's end opens no savepoint for its observers."""
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    told: list[str] = []
    observers.unregister("test-recorder")
    observers.register_run_end("test-picky", lambda end: told.append(end.run_id), applies=lambda end: end.status == "PAUSED")
    try:
        ends = {status: RunEnd(owner_id="alice", run_id=f"run-{status}", status=status, record=None) for status in ("COMPLETED", "PAUSED")}
        statements: dict[str, list[str]] = {}
        for status, end in ends.items():
            with transaction.atomic(), CaptureQueriesContext(connection) as captured:
                assert observers.run_ended(end) == []
            statements[status] = [query["sql"] for query in captured.captured_queries]
    finally:
        observers.unregister("test-picky")
    assert told == ["run-PAUSED"]
    assert not any("SAVEPOINT" in sql for sql in statements["COMPLETED"])
    assert any(sql.startswith("SAVEPOINT") for sql in statements["PAUSED"])


def test_approvals_and_the_scheduler_say_which_ends_concern_them() -> None:
    from approvals.services import approvals_concern_run_end
    from scheduler.services.firing import schedule_runs_concern_run_end
    from sessions.services.runs import RunRecord

    def end(output, *, after_pause=False):
        record = RunRecord(run_id="r1", session_id="s1", owner_id="alice", component_id="a", status="PAUSED", output=output) if output is not None else None
        return RunEnd(owner_id="alice", run_id="r1", status="PAUSED", record=record, after_pause=after_pause)

    approval_call = {"tool_call_id": "c1", "tool_name": "deploy", "approval_type": "required", "approval_id": "a1", "requires_confirmation": True}
    assert approvals_concern_run_end(end({"tools": [approval_call]}))
    assert not approvals_concern_run_end(end({"tools": [{**approval_call, "approval_type": None}]}))
    assert not approvals_concern_run_end(end({"content": "hi"}))
    assert not approvals_concern_run_end(end(None))
    assert schedule_runs_concern_run_end(end(None, after_pause=True))
    assert not schedule_runs_concern_run_end(end({"content": "hi"}))
