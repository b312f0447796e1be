"""Domain errors carry their status and code (core.errors): the one exception handler answers each
with its status and AgentOS's words, and the WebSocket tells the same refusal with its code, from
the same attributes; end to end, a principal that may read a component but not run it and another
user's session are refused the same way on both surfaces."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from agents.consumers import WorkflowSocket
from agents.pipeline.authority import ComponentNotFound, RunForbidden
from agents.pipeline.capacity import RETRY_AFTER_SECONDS, TooManyRuns
from jobs.services.jobs import IdempotencyConflict, QueueFull, SessionBusy
from agents.pipeline.runs import RunNotContinuable, RunNotFound
from approvals.gate import AdminApprovalRequired
from approvals.services import ApprovalAlreadyResolved, ApprovalNotFound
from core.api.errors import exception_handler
from core.errors import refusal_of
from engine import InvalidContinuation
from engine.factory import FactoryPermissionError, FactoryValidationError
from scheduler.selectors import ScheduleRunNotFound
from scheduler.services.schedules import ScheduleConflict, ScheduleForbidden, ScheduleInvalid, ScheduleLimitReached, ScheduleNotFound
from sessions.services.runs import SessionLimitReached, SessionNotFound
from sessions.services.sessions import NothingToFork
from tests.security.conftest import auth, jwt_server, token

__all__ = ["jwt_server"]  # the fixture, shared with the security tests

# (the error, its status, its code, what the client is told, its headers)
REFUSALS = [
    (ComponentNotFound("team"), 404, "component_not_found", "Team not found", {}),
    (RunForbidden("workflow"), 403, "run_forbidden", "Insufficient permissions. Required scope(s): workflows:run", {}),
    (RunNotFound(), 404, "run_not_found", "Run not found", {}),
    (RunNotContinuable("Run r1 is RUNNING"), 409, "run_not_continuable", "Run r1 is RUNNING", {}),
    (TooManyRuns(2), 429, "too_many_runs", str(TooManyRuns(2)), {"Retry-After": str(RETRY_AFTER_SECONDS)}),
    (SessionNotFound("s-9"), 404, "session_not_found", "Session not found", {}),
    (SessionLimitReached(3), 409, "session_limit_reached", str(SessionLimitReached(3)), {}),
    (NothingToFork(), 400, "nothing_to_fork", "Source session has no runs to fork.", {}),
    (InvalidContinuation("no such tool call"), 400, "invalid_continuation", "no such tool call", {}),
    (FactoryValidationError("bad input"), 400, "factory_input_invalid", "bad input", {}),
    (FactoryPermissionError("not for you"), 403, "factory_forbidden", "not for you", {}),
    (QueueFull(), 429, "queue_full", "Job queue is full", {"Retry-After": "5"}),
    (SessionBusy("s-1"), 409, "session_busy", str(SessionBusy("s-1")), {}),
    (IdempotencyConflict("key reused"), 409, "idempotency_conflict", "key reused", {}),
    (AdminApprovalRequired(), 403, "admin_approval_required", "This run requires admin approval before it can be continued", {}),
    (ApprovalNotFound(), 404, "approval_not_found", "Approval not found", {}),
    (ApprovalAlreadyResolved("approved"), 409, "approval_already_resolved", "Approval is already 'approved' and cannot be resolved", {}),
    (ScheduleNotFound(), 404, "schedule_not_found", "Schedule not found", {}),
    (ScheduleRunNotFound(), 404, "schedule_run_not_found", "Schedule run not found", {}),
    (ScheduleInvalid("Invalid cron expression: nope"), 422, "schedule_invalid", "Invalid cron expression: nope", {}),
    (ScheduleConflict("name taken"), 409, "schedule_conflict", "name taken", {}),
    (ScheduleLimitReached("too many"), 409, "schedule_limit_reached", "too many", {}),
    (ScheduleForbidden("no"), 403, "schedule_forbidden", "no", {}),
]
IDS = [type(refusal[0]).__name__ for refusal in REFUSALS]


@pytest.mark.parametrize(("error", "status", "code", "detail", "headers"), REFUSALS, ids=IDS)
def test_the_exception_handler_answers_each_with_its_status(error, status, code, detail, headers) -> None:
    response = exception_handler(error, {})
    assert response is not None
    assert (response.status_code, response.data) == (status, {"detail": detail})
    assert {name: response[name] for name in headers} == headers


@pytest.mark.django_db  # the consumer's database hop tidies the thread's connection first
@pytest.mark.parametrize(("error", "status", "code", "detail", "headers"), REFUSALS, ids=IDS)
def test_the_socket_tells_each_with_its_code(error, status, code, detail, headers) -> None:
    """The consumer's refusal frame for a submission the service refused with ``error``."""
    frames: list[dict[str, Any]] = []

    async def send_json(content: dict[str, Any], close: bool = False) -> None:
        frames.append(content)

    def refused(**arguments: Any) -> Any:
        raise error

    socket = WorkflowSocket()
    socket.send_json = send_json  # the frame the client would receive
    asyncio.run(socket._submitted(refused))
    assert frames == [{"event": "error", "error": detail, "error_type": code}]


def test_a_bug_is_no_refusal() -> None:
    assert refusal_of(KeyError("run_id")) is None
    assert exception_handler(KeyError("run_id"), {}) is None  # DRF's 500, logged


# ---- end to end: the same refusal on both surfaces ------------------------------------------

READ_ONLY = ["workflows:read", "sessions:read"]
RUNNER = ["workflows:read", "workflows:run", "sessions:read", "sessions:write"]


def socket_frames(credential: str, message: dict[str, Any]) -> dict[str, Any]:
    async def exchange() -> dict[str, Any]:
        socket = WebsocketCommunicator(WorkflowSocket.as_asgi(), "/workflows/ws")
        await socket.connect()
        await socket.receive_json_from()  # connected
        await socket.send_json_to({"action": "authenticate", "token": credential})
        assert (await socket.receive_json_from())["event"] == "authenticated"
        await socket.send_json_to(message)
        answer = await socket.receive_json_from(timeout=20)
        await socket.disconnect()
        return answer

    return asyncio.run(exchange())


@pytest.mark.django_db(transaction=True)
def test_a_reader_is_refused_a_run_on_both_surfaces(client, jwt_server) -> None:
    reader = token("alice", READ_ONLY)
    response = client.post("/workflows/draft-flow/runs", data={"message": "hi", "stream": "false"}, **auth(reader))
    assert (response.status_code, response.json()) == (403, {"detail": "Insufficient permissions. Required scope(s): workflows:run"})
    frame = socket_frames(reader, {"action": "start-workflow", "workflow_id": "draft-flow", "message": "hi"})
    assert frame == {"event": "error", "error": "Insufficient permissions. Required scope(s): workflows:run", "error_type": "run_forbidden"}


@pytest.mark.django_db(transaction=True)
def test_an_unknown_run_is_the_same_refusal_on_both_surfaces(client, jwt_server) -> None:
    """The socket's code for a run it cannot find is the domain error's, as the API's 404 is."""
    alice = token("alice", RUNNER)
    response = client.get("/workflows/draft-flow/runs/no-such-run", {"session_id": "s-1"}, **auth(alice))
    refusal = refusal_of(RunNotFound())
    assert (response.status_code, response.json()) == (refusal.status, {"detail": refusal.detail}) == (404, {"detail": "Run not found"})
    frame = socket_frames(alice, {"action": "reconnect", "run_id": "no-such-run", "session_id": "s-1"})
    assert frame == {"event": "error", "error": "Run not found", "error_type": "run_not_found", "run_id": "no-such-run"}


@pytest.mark.django_db(transaction=True)
def test_another_users_session_is_not_found_on_both_surfaces(client, jwt_server) -> None:
    bob = token("bob", RUNNER)
    started = client.post("/workflows/draft-flow/runs", data={"message": "mine", "stream": "false", "session_id": "bobs-session"}, **auth(bob))
    assert started.status_code == 200, started.content
    alice = token("alice", RUNNER)
    response = client.post("/workflows/draft-flow/runs", data={"message": "hi", "stream": "false", "session_id": "bobs-session"}, **auth(alice))
    assert (response.status_code, response.json()) == (404, {"detail": "Session not found"})
    frame = socket_frames(alice, {"action": "start-workflow", "workflow_id": "draft-flow", "message": "hi", "session_id": "bobs-session"})
    assert frame == {"event": "error", "error": "Session not found", "error_type": "session_not_found"}
