"""An ``@approval`` tool wherever its call is nested: an agent step of a workflow (in code or
composed in the admin; started inline, streamed or in the background), a team's member, a team
step of a workflow. The pause writes its approval row under the top-level run, the owner cannot
decide it (REST, WebSocket, or by continuing the nested run itself), and an operator's decision
continues the whole run: approved, the tool runs once; rejected, it never runs.

On the wire, under JWT with user isolation: alice holds every user scope but approvals:write and
approvals:delete, root is an admin."""
from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from django.urls import reverse

from agents.services.definitions import workflow_definition_create
from agents.pipeline.runs import RunRequest
from agents.pipeline.submit import Finished, submit_continue, submit_run
from approvals.gate import ADMIN_APPROVAL_REQUIRED
from approvals.models import Approval
from approvals.services import approval_resolve
from core.auth import Principal
from sessions.models import Run
from tests.agents.conftest import wait_for
from tests.api.sse import parse_sse
from tests.approvals import agents as approval_agents
from tests.approvals.conftest import browser_user
from tests.security.conftest import USER_SCOPES, token

pytestmark = pytest.mark.django_db(transaction=True)

READ = [scope for scope in USER_SCOPES if scope not in ("approvals:write", "approvals:delete")]
PAY = '/call wire_funds {"to": "bob", "amount": 7}'
PAID = "TOOL WIRE_FUNDS RETURNED: WIRED 7 TO BOB"  # the agent's answer, shouted by the next step
DELEGATE = "/call delegate_task_to_member " + json.dumps({"member_id": "treasurer", "task": PAY})
COMPOSED_STEPS = [{"type": "Step", "name": "pay", "agent_id": "approval-agent"}, {"type": "Step", "name": "shout", "executor_ref": "shout"}]
REFUSED = (403, ADMIN_APPROVAL_REQUIRED)


@pytest.fixture(autouse=True)
def wired():
    approval_agents.WIRED.clear()
    yield approval_agents.WIRED
    approval_agents.WIRED.clear()


class Caller:
    def __init__(self, base: str, sub: str, scopes: list[str]) -> None:
        self.base, self.headers = base, {"Authorization": f"Bearer {token(sub, scopes)}"}

    def get(self, path: str, params: dict[str, Any] | None = None) -> httpx.Response:
        return httpx.get(self.base + path, params=params or {}, headers=self.headers, timeout=30)

    def post(self, path: str, data: dict[str, Any]) -> httpx.Response:
        return httpx.post(self.base + path, data=data, headers=self.headers, timeout=30)

    def post_json(self, path: str, body: dict[str, Any]) -> httpx.Response:
        return httpx.post(self.base + path, json=body, headers=self.headers, timeout=30)

    def frames(self, path: str, data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        with httpx.stream("POST", self.base + path, data=data, headers=self.headers, timeout=30) as response:
            assert response.status_code == 200, response.read()
            return parse_sse("".join(response.iter_text()))


@pytest.fixture
def alice(live_api, jwt_server) -> Caller:
    return Caller(live_api, "alice", READ)


@pytest.fixture
def root(live_api, jwt_server) -> Caller:
    return Caller(live_api, "root", ["agent_os:admin"])


@pytest.fixture
def composed(db) -> str:
    workflow_definition_create(workflow_id="approval-composed", name="Approval Composed", steps=COMPOSED_STEPS)
    return "approval-composed"


@pytest.fixture(params=["code", "composed"])
def workflow_id(request) -> str:
    return "approval-flow" if request.param == "code" else request.getfixturevalue("composed")


def start_paused(caller: Caller, path: str, message: str, mode: str, worker, session_id: str) -> tuple[Run, dict[str, Any]]:
    """Start a run over the wire (inline, streamed or in the background) up to its pause: the
    stored run, and the pause as its caller saw it (the answer, the WorkflowPaused/RunPaused frame,
    or the stored run of a background one)."""
    data = {"message": message, "session_id": session_id}
    if mode == "inline":
        response = caller.post(path, {**data, "stream": "false"})
        assert response.status_code == 200, response.content
        seen = response.json()
    elif mode == "stream":
        name, seen = caller.frames(path, {**data, "stream": "true"})[-1]
        assert name in ("WorkflowPaused", "TeamRunPaused"), name
    else:
        worker()
        response = caller.post(path, {**data, "stream": "false", "background": "true"})
        assert response.status_code == 202, response.content
        seen = response.json()
    run = wait_for(lambda: Run.objects.for_user("alice").filter(pk=seen["run_id"], status="PAUSED").first())
    return run, seen if mode != "background" else run.run_data


def executor_pause(pause: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The workflow's open step requirement, and its executor's one open RunRequirement."""
    step = pause["step_requirements"][-1]
    (requirement,) = step["executor_requirements"]
    return step, requirement


def confirmed(step: dict[str, Any]) -> str:
    """The owner's own answer: every paused call of the step confirmed, both ways AgentOS reads it."""
    answers = [{**r, "confirmation": True, "tool_execution": {**r["tool_execution"], "confirmed": True}} for r in step["executor_requirements"]]
    return json.dumps([{**step, "executor_requirements": answers}])


def completed(run_id: str) -> Run:
    return wait_for(lambda: Run.objects.for_user("alice").filter(pk=run_id, status__in=("COMPLETED", "ERROR", "CANCELLED")).first())


# ---- a workflow's agent step ----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["inline", "stream", "background"])
def test_a_workflow_steps_approval_is_written_gated_and_continued_by_the_operator(alice, root, worker, wired, workflow_id, mode):
    run, pause = start_paused(alice, f"/workflows/{workflow_id}/runs", PAY, mode, worker, f"s-{mode}")
    step, requirement = executor_pause(pause)
    approval_id = requirement["tool_execution"]["approval_id"]
    assert requirement["tool_execution"]["approval_type"] == "required"

    # The row exists, under the workflow run: the owner lists it by that run, an operator opens it.
    (listed,) = alice.get("/approvals", {"run_id": run.pk}).json()["data"]
    assert (listed["id"], listed["status"], listed["source_type"], listed["workflow_id"], listed["tool_name"]) == (
        approval_id, "pending", "workflow", workflow_id, "wire_funds",
    )
    assert listed["requirements"][0]["tool_execution"]["tool_call_id"] == requirement["tool_execution"]["tool_call_id"]
    assert root.get(f"/approvals/{approval_id}").status_code == 200

    # The owner cannot confirm it: inline or as a background continue, the continue is refused.
    for extra in ({"stream": "false"}, {"stream": "false", "background": "true"}):
        response = alice.post(f"/workflows/{workflow_id}/runs/{run.pk}/continue", {"session_id": run.session_id, "step_requirements": confirmed(step), **extra})
        assert (response.status_code, response.json()["detail"]) == REFUSED, response.content
    assert (Run.objects.for_user("alice").get(pk=run.pk).status, wired) == ("PAUSED", [])

    # The operator's approval continues the workflow: the tool runs, once, and the next step too.
    worker()
    resolved = root.post_json(f"/approvals/{approval_id}/resolve", {"status": "approved"})
    assert resolved.status_code == 200, resolved.content
    done = completed(run.pk)
    assert (done.status, done.run_data["content"], wired) == ("COMPLETED", PAID, ["7 to bob"])
    assert alice.get(f"/approvals/{approval_id}").json()["status"] == "approved"
    # The step's record keeps the paused call, with the operator's decision.
    (answered,) = done.run_data["step_requirements"][-1]["executor_requirements"]
    assert (answered["tool_execution"]["tool_name"], answered["tool_execution"]["approval_id"], answered["confirmation"]) == ("wire_funds", approval_id, True)


def test_a_rejected_workflow_step_approval_ends_the_run_without_the_tool(alice, root, worker, wired, workflow_id):
    run, pause = start_paused(alice, f"/workflows/{workflow_id}/runs", PAY, "inline", worker, "s-no")
    _, requirement = executor_pause(pause)
    worker()
    resolved = root.post_json(f"/approvals/{requirement['tool_execution']['approval_id']}/resolve", {"status": "rejected", "resolution_data": {"note": "not today"}})
    assert resolved.status_code == 200, resolved.content
    done = completed(run.pk)
    assert done.status == "COMPLETED" and "REJECTED BY THE USER: NOT TODAY" in done.run_data["content"]
    (executor,) = done.run_data["step_executor_runs"]
    (te,) = executor["tools"]
    assert (te["confirmed"], te["result"], wired) == (False, None, [])


def test_after_a_rejection_the_owners_continue_applies_it_whatever_they_send(alice, root, wired):
    run, pause = start_paused(alice, "/workflows/approval-flow/runs", PAY, "inline", None, "s-over")
    step, requirement = executor_pause(pause)
    approval = Approval.objects.for_user("alice").get(pk=requirement["tool_execution"]["approval_id"])
    approval_resolve(approval_id=approval.pk, status="rejected", resolved_by="root", continue_run=False)
    response = alice.post(f"/workflows/approval-flow/runs/{run.pk}/continue", {"session_id": run.session_id, "step_requirements": confirmed(step), "stream": "false"})
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "COMPLETED" and "REJECTED BY THE USER" in response.json()["content"]
    assert wired == []


def test_the_nested_run_cannot_be_continued_on_its_own_to_skip_the_approval(alice, wired):
    run, pause = start_paused(alice, "/workflows/approval-flow/runs", PAY, "inline", None, "s-child")
    step, requirement = executor_pause(pause)
    child = Run.objects.for_user("alice").get(pk=step["executor_run_id"])
    assert (child.parent_run_id, child.status, child.component_id) == (run.pk, "PAUSED", "approval-agent")
    tools = json.dumps([{**requirement["tool_execution"], "confirmed": True}])
    response = alice.post(f"/agents/approval-agent/runs/{child.pk}/continue", {"session_id": run.session_id, "tools": tools, "stream": "false"})
    assert (response.status_code, response.json()["detail"]) == REFUSED, response.content
    assert wired == []


def test_a_nested_run_without_an_approval_is_not_continued_on_its_own_either(alice, db):
    """A step's own pause (the owner's confirmation, no operator involved) goes on only with its
    workflow: continued on its own, the step would run past a workflow that stays paused."""
    workflow_definition_create(workflow_id="confirm-composed", name="Confirm Composed", steps=[{"type": "Step", "name": "delete", "agent_id": "hitl-agent"}])
    run, pause = start_paused(alice, "/workflows/confirm-composed/runs", '/call delete_file {"path": "/tmp/x"}', "inline", None, "s-own")
    step, requirement = executor_pause(pause)
    child = Run.objects.for_user("alice").get(pk=step["executor_run_id"])
    assert (child.parent_run_id, child.status) == (run.pk, "PAUSED")
    tools = json.dumps([{**requirement["tool_execution"], "confirmed": True}])
    response = alice.post(f"/agents/hitl-agent/runs/{child.pk}/continue", {"session_id": run.session_id, "tools": tools, "stream": "false"})
    assert (response.status_code, response.json()["detail"]) == (409, f"Run {child.pk} is part of run {run.pk}: continue that run"), response.content
    assert Run.objects.for_user("alice").get(pk=child.pk).status == "PAUSED"
    # The workflow itself goes on as before.
    response = alice.post(f"/workflows/confirm-composed/runs/{run.pk}/continue", {"session_id": run.session_id, "step_requirements": confirmed(step), "stream": "false"})
    assert response.status_code == 200 and response.json()["status"] == "COMPLETED", response.content


def test_the_owners_confirmation_over_the_workflow_socket_is_refused(live_api, alice, root, worker, wired):
    from tests.agents.test_workflow_socket import Socket

    worker()
    with Socket(live_api) as socket:
        assert socket.hello["requires_auth"] is True
        socket.send(action="authenticate", token=token("alice", READ))
        assert socket.receive()[1]["event"] == "authenticated"
        socket.send(action="start-workflow", workflow_id="approval-flow", message=PAY, session_id="ws-pay")
        kind, pause = socket.until_end()[-1]
        assert kind == "WorkflowPaused", (kind, pause)
        step, requirement = executor_pause(pause)
        wait_for(lambda: Run.objects.for_user("alice").filter(pk=pause["run_id"], status="PAUSED").exists())
        socket.send(action="continue-workflow", workflow_id="approval-flow", run_id=pause["run_id"], session_id="ws-pay", step_requirements=json.loads(confirmed(step)))
        kind, refused = socket.receive()
    assert (kind, refused.get("error")) == ("control:error", ADMIN_APPROVAL_REQUIRED), refused
    assert (Run.objects.for_user("alice").get(pk=pause["run_id"]).status, wired) == ("PAUSED", [])
    assert root.post_json(f"/approvals/{requirement['tool_execution']['approval_id']}/resolve", {"status": "approved"}).status_code == 200
    assert completed(pause["run_id"]).run_data["content"] == PAID and wired == ["7 to bob"]


def test_a_team_steps_member_approval_pauses_the_workflow_and_is_continued(alice, root, worker, wired):
    run, pause = start_paused(alice, "/workflows/treasury-flow/runs", DELEGATE, "inline", worker, "s-team-step")
    step, requirement = executor_pause(pause)
    assert requirement["member_agent_id"] == "treasurer"
    (listed,) = alice.get("/approvals", {"run_id": run.pk}).json()["data"]
    assert (listed["id"], listed["workflow_id"]) == (requirement["tool_execution"]["approval_id"], "treasury-flow")
    response = alice.post(f"/workflows/treasury-flow/runs/{run.pk}/continue", {"session_id": run.session_id, "step_requirements": confirmed(step), "stream": "false"})
    assert (response.status_code, response.json()["detail"]) == REFUSED
    assert root.post_json(f"/approvals/{listed['id']}/resolve", {"status": "approved"}).status_code == 200
    done = completed(run.pk)
    assert (done.status, done.run_data["content"], wired) == ("COMPLETED", PAID, ["7 to bob"])


# ---- a team's member ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["inline", "stream", "background"])
def test_a_members_approval_is_written_gated_and_continued_by_the_operator(alice, root, worker, wired, mode):
    run, pause = start_paused(alice, "/teams/approval-team/runs", DELEGATE, mode, worker, f"t-{mode}")
    (requirement,) = pause["requirements"]
    approval_id = requirement["tool_execution"]["approval_id"]
    (listed,) = alice.get("/approvals", {"run_id": run.pk}).json()["data"]
    assert (listed["id"], listed["source_type"], listed["team_id"]) == (approval_id, "team", "approval-team")
    for field, value in (("tools", [{**requirement["tool_execution"], "confirmed": True}]), ("requirements", [{**requirement, "confirmation": True}])):
        response = alice.post(f"/teams/approval-team/runs/{run.pk}/continue", {"session_id": run.session_id, field: json.dumps(value), "stream": "false"})
        assert (response.status_code, response.json()["detail"]) == REFUSED, response.content
    assert wired == []
    worker()
    assert root.post_json(f"/approvals/{approval_id}/resolve", {"status": "approved"}).status_code == 200
    done = completed(run.pk)
    assert (done.status, done.run_data["content"], wired) == ("COMPLETED", "Tool wire_funds returned: wired 7 to bob", ["7 to bob"])


def test_a_members_own_run_cannot_be_continued_on_its_own_to_skip_the_approval(alice, wired):
    task = "/call delegate_task_to_member " + json.dumps({"member_id": "approval-agent", "task": PAY})
    run, pause = start_paused(alice, "/teams/approval-crew/runs", task, "inline", None, "t-child")
    (requirement,) = pause["requirements"]
    member = Run.objects.for_user("alice").get(pk=requirement["member_run_id"])
    assert (member.parent_run_id, member.status, member.component_id) == (run.pk, "PAUSED", "approval-agent")
    tools = json.dumps([{**requirement["tool_execution"], "confirmed": True}])
    response = alice.post(f"/agents/approval-agent/runs/{member.pk}/continue", {"session_id": run.session_id, "tools": tools, "stream": "false"})
    assert (response.status_code, response.json()["detail"]) == REFUSED, response.content
    assert wired == []


# ---- the admin ------------------------------------------------------------------------------


def test_approving_a_workflow_steps_approval_in_the_admin_continues_it(client, django_user_model, worker, wired, composed):
    client.force_login(django_user_model.objects.create_superuser("op", password="pw-for-tests"))
    done = submit_run(principal=browser_user("alice"), component_id=composed, kind="workflow", request=RunRequest(message=PAY, stream=False))
    assert isinstance(done, Finished) and done.output["status"] == "PAUSED"
    (approval,) = Approval.objects.for_user("alice")
    assert (approval.run_id, approval.source_type, approval.workflow_id) == (done.output["run_id"], "workflow", composed)
    # The paused run's review page sends the operator to the approval.
    review = client.get(reverse("admin:agno_sessions_run_review", args=[done.output["run_id"]])).content.decode()
    assert reverse("admin:approvals_approval_change", args=[approval.pk]) in review
    worker()
    response = client.post(reverse("admin:approvals_approval_change", args=[approval.pk]), {"decision": "approved", "note": "ok"})
    assert response.status_code == 302
    run = completed(done.output["run_id"])
    assert (run.status, run.run_data["content"], wired) == ("COMPLETED", PAID, ["7 to bob"])


def test_an_admin_may_decide_a_workflow_steps_approval_with_a_continue_and_it_is_theirs(wired):
    done = submit_run(principal=browser_user("alice"), component_id="approval-flow", kind="workflow", request=RunRequest(message=PAY, stream=False))
    assert isinstance(done, Finished) and done.output["status"] == "PAUSED"
    step, requirement = executor_pause(done.output)
    rejected = [{**step, "executor_requirements": [{**requirement, "tool_execution": {**requirement["tool_execution"], "confirmed": False}}]}]
    admin = Principal(user_id="root", is_admin=True, via="jwt")
    ended = submit_continue(
        principal=admin, component_id="approval-flow", kind="workflow", run_id=done.output["run_id"], session_id=done.output["session_id"],
        tools=rejected, stream=False,
    )
    assert isinstance(ended, Finished) and ended.output["status"] == "COMPLETED" and wired == []
    (row,) = Approval.objects.for_user("alice")
    assert (row.status, row.resolved_by, row.resolution_data) == ("rejected", "root", {"via": "continue"})
