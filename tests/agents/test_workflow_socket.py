"""/workflows/ws, AgentOS's workflow WebSocket: start a workflow and follow it, continue a paused
one with its step requirements, and refusals as error frames."""
from __future__ import annotations

from typing import Any

import pytest

from sessions.models import Run
from tests.agents.conftest import wait_for
from tests.agents.test_websocket import Socket as RunSocketClient

pytestmark = pytest.mark.django_db(transaction=True)
ENDS = ("WorkflowCompleted", "WorkflowError", "WorkflowCancelled", "WorkflowPaused")


class Socket(RunSocketClient):
    """The run socket's test client, on /workflows/ws."""

    def __init__(self, base: str) -> None:
        super().__init__(base)
        self.url = base.replace("http://", "ws://") + "/workflows/ws"

    def until_end(self) -> list[tuple[str, dict[str, Any]]]:
        seen = []
        while True:
            kind, body = self.receive()
            seen.append((kind, body))
            if kind in ENDS or kind == "control:error":
                return seen


def test_start_follows_the_workflow_to_its_end(live_api: str, worker) -> None:
    worker()
    with Socket(live_api) as socket:
        assert socket.hello == {"event": "connected", "message": "Connected to Agno Site.", "requires_auth": False}
        socket.send(action="ping")
        assert socket.receive() == ("control:pong", {"event": "pong"})
        socket.send(action="start-workflow", workflow_id="draft-flow", message="over the socket", user_id="alice", session_id="ws-1")
        seen = socket.until_end()
    names = [kind for kind, _ in seen if not kind.startswith("control:")]
    assert names[0] == "WorkflowStarted" and names[-1] == "WorkflowCompleted", names
    assert "ParallelExecutionStarted" in names and names.count("RunCompleted") == 2
    run_id = seen[-1][1]["run_id"]
    # The event is live; the run's end is written a moment after it.
    assert wait_for(lambda: Run.objects.for_user("alice").get(pk=run_id).status == "COMPLETED")
    assert [data["event_index"] for kind, data in seen if not kind.startswith("control:")] == list(range(len(names)))


def test_a_paused_workflow_is_continued_over_the_socket(live_api: str, worker) -> None:
    worker()
    with Socket(live_api) as socket:
        socket.send(action="start-workflow", workflow_id="review-flow", message="socket review", user_id="alice", session_id="ws-r")
        first = socket.until_end()
        paused = first[-1]
        assert paused[0] == "WorkflowPaused", paused
        [requirement] = paused[1]["step_requirements"]
        socket.send(action="continue-workflow", workflow_id="review-flow", run_id=paused[1]["run_id"], session_id="ws-r",
                    step_requirements=[{**requirement, "confirmed": True}])
        done = socket.until_end()
    assert done[-1][0] == "WorkflowCompleted" and done[-1][1]["content"] == "SOCKET REVIEW", (first, done)


def test_refusals_are_error_frames(live_api: str) -> None:
    with Socket(live_api) as socket:
        socket.send(action="start-workflow", workflow_id="nope", message="x")
        assert socket.receive()[1]["error"] == "Workflow not found"
        socket.send(action="start-workflow", workflow_id="draft-flow")
        assert socket.receive()[1] == {"event": "error", "error": "message is required", "error_type": "invalid_message"}
        socket.send(action="continue-workflow", workflow_id="review-flow", run_id="r1", session_id="s1", step_requirements="yes")
        assert "step_requirements must be" in socket.receive()[1]["error"]
        socket.send(action="continue-workflow", workflow_id="review-flow", run_id="r1", session_id="s1", step_requirements=[])
        assert socket.receive()[1]["error"] == "Run not found"
        socket.send(action="fly")
        assert socket.receive()[1]["error"] == "Unknown action: fly"
