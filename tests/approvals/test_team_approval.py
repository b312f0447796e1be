"""An ``@approval`` tool of a team's member: the whole team run pauses with one pending approval
(of the team run, naming the team), the owner cannot decide it, and an operator's resolution
continues the team in the background: the member first, then the leader."""
from __future__ import annotations

import json

import pytest

from agents.pipeline.runs import RunRequest
from agents.pipeline.submit import Finished, submit_continue, submit_run
from approvals.gate import AdminApprovalRequired
from approvals.models import Approval
from approvals.services import approval_resolve
from sessions.models import Run
from tests.agents.conftest import wait_for
from tests.approvals.conftest import browser_user

pytestmark = pytest.mark.django_db(transaction=True)

TASK = json.dumps({"member_id": "treasurer", "task": '/call wire_funds {"to": "bob", "amount": 7}'})


def paused_team_run(user: str) -> dict:
    done = submit_run(
        principal=browser_user(user), component_id="approval-team", kind="team",
        request=RunRequest(message=f"/call delegate_task_to_member {TASK}", stream=False),
    )
    assert isinstance(done, Finished) and done.output["status"] == "PAUSED", done
    return done.output


def test_a_members_approval_pauses_the_team_and_an_operator_continues_it(worker):
    output = paused_team_run("alice")
    (pending,) = Approval.objects.for_user("alice")
    assert (pending.run_id, pending.source_type, pending.team_id, pending.tool_name) == (output["run_id"], "team", "approval-team", "wire_funds")
    [requirement] = output["requirements"]
    assert (requirement["member_agent_id"], requirement["tool_execution"]["approval_id"]) == ("treasurer", pending.pk)

    with pytest.raises(AdminApprovalRequired):
        submit_continue(
            principal=browser_user("alice"), component_id="approval-team", kind="team", run_id=output["run_id"],
            session_id=output["session_id"], tools=[{**requirement["tool_execution"], "confirmed": True}], stream=False,
        )

    approval_resolve(approval_id=pending.pk, status="approved", resolved_by="root", resolution_data={"note": "fine"})
    worker()
    team_run = wait_for(lambda: Run.objects.for_user("alice").filter(pk=output["run_id"], status="COMPLETED").first())
    assert team_run.run_data["content"] == "Tool wire_funds returned: wired 7 to bob"
    member = Run.objects.for_user("alice").get(pk=requirement["member_run_id"])
    assert (member.status, member.parent_run_id) == ("COMPLETED", output["run_id"])
    assert [row.status for row in Approval.objects.for_user("alice")] == ["approved"]
    assert not Approval.objects.for_user("bob").exists()
