"""A run that calls an ``@approval`` tool pauses with a pending approval row, and the owner
cannot decide it: an operator's resolution continues the run by itself, in the background."""
from __future__ import annotations

import json

import pytest

from engine import Function, approval, tool
from agents.pipeline.runs import RunRequest
from agents.pipeline.submit import Accepted, Finished, submit_continue, submit_run
from approvals.gate import ADMIN_APPROVAL_REQUIRED, AdminApprovalRequired
from approvals.models import Approval
from approvals.services import ApprovalAlreadyResolved, approval_resolve
from core.auth import OPEN, OPERATOR, Principal
from core.scopes import parse_scopes
from sessions.models import Run, RunEvent
from tests.agents.conftest import wait_for
from tests.approvals.conftest import browser_user

pytestmark = pytest.mark.django_db(transaction=True)


def paused_run(user: str, message: str) -> dict:
    done = submit_run(principal=browser_user(user), component_id="approval-agent", request=RunRequest(message=message, stream=False), kind="agent")
    assert isinstance(done, Finished) and done.output["status"] == "PAUSED", done
    return done.output


def approvals_of(user: str) -> list[Approval]:
    return list(Approval.objects.for_user(user).order_by("created_at"))


# ---- the decorator -------------------------------------------------------------------------


def test_approval_defaults_to_required_and_pauses_for_confirmation():
    @approval
    @tool
    def act(x: str) -> str:
        return x

    assert isinstance(act, Function)
    assert (act.approval_type, act.requires_confirmation, act.pauses) == ("required", True, True)


def test_approval_below_tool_and_requires_approval_are_the_same():
    @tool
    @approval
    def below(x: str) -> str:
        return x

    @tool(requires_approval=True)
    def flagged(x: str) -> str:
        return x

    assert (below.approval_type, below.requires_confirmation) == ("required", True)
    assert (flagged.approval_type, flagged.requires_confirmation) == ("required", True)


def test_an_audit_approval_needs_a_pause_of_its_own():
    with pytest.raises(ValueError, match="requires at least one HITL flag"):
        @approval(type="audit")
        @tool
        def act(x: str) -> str:
            return x

    with pytest.raises(ValueError, match="Invalid approval type"):
        approval(type="sometimes")


def test_a_required_approval_keeps_the_tools_own_pause():
    @approval
    @tool(requires_user_input=True, user_input_fields=["amount"])
    def pay(amount: int) -> str:
        return str(amount)

    assert (pay.approval_type, pay.requires_confirmation, pay.requires_user_input) == ("required", False, True)


# ---- the pause ------------------------------------------------------------------------------


def test_the_pause_writes_a_pending_approval_and_stamps_its_id_on_the_tool_call():
    output = paused_run("alice", '/call wire_funds {"to": "bob", "amount": 100}')
    (approval_row,) = approvals_of("alice")
    (te,) = output["tools"]
    assert (te["approval_type"], te["approval_id"], te["requires_confirmation"]) == ("required", approval_row.pk, True)
    assert output["requirements"][0]["tool_execution"]["approval_id"] == approval_row.pk
    stored = Run.objects.for_user("alice").get(pk=output["run_id"])
    assert stored.run_data["tools"][0]["approval_id"] == approval_row.pk
    assert {
        "run_id": approval_row.run_id, "session_id": approval_row.session_id, "status": approval_row.status,
        "source_type": approval_row.source_type, "source_name": approval_row.source_name, "agent_id": approval_row.agent_id,
        "approval_type": approval_row.approval_type, "pause_type": approval_row.pause_type, "tool_name": approval_row.tool_name,
        "tool_args": approval_row.tool_args, "context": approval_row.context, "resolved_by": approval_row.resolved_by,
    } == {
        "run_id": output["run_id"], "session_id": output["session_id"], "status": "pending", "source_type": "agent",
        "source_name": "Approval Agent", "agent_id": "approval-agent", "approval_type": "required", "pause_type": "confirmation",
        "tool_name": "wire_funds", "tool_args": {"to": "bob", "amount": 100},
        "context": {"tool_names": ["wire_funds"], "source_name": "Approval Agent"}, "resolved_by": None,
    }
    assert approval_row.requirements == stored.run_data["requirements"]
    # The stream's RunPaused event carried it too: the runtime gives the id with the pause.
    paused_event = RunEvent.objects.for_user("alice").get(run_id=output["run_id"], event="RunPaused")
    assert paused_event.payload["tools"][0]["approval_id"] == approval_row.pk


def test_the_required_calls_of_one_pause_share_one_approval():
    output = paused_run("alice", '/call wire_funds {"to": "bob", "amount": 1}\n/call wire_funds {"to": "eve", "amount": 2}')
    (approval_row,) = approvals_of("alice")
    assert [te["approval_id"] for te in output["tools"]] == [approval_row.pk, approval_row.pk]
    assert (approval_row.tool_args, approval_row.context["tool_names"]) == ({"to": "bob", "amount": 1}, ["wire_funds"])


def test_the_owner_cannot_continue_while_the_approval_waits():
    output = paused_run("alice", '/call wire_funds {"to": "bob", "amount": 100}')
    tools = [{**output["tools"][0], "confirmed": True}]
    with pytest.raises(AdminApprovalRequired, match=ADMIN_APPROVAL_REQUIRED):
        submit_continue(principal=browser_user("alice"), component_id="approval-agent", run_id=output["run_id"], session_id=output["session_id"], tools=tools, stream=False, kind="agent")
    assert Run.objects.for_user("alice").get(pk=output["run_id"]).status == "PAUSED"


def test_approving_continues_the_run_in_the_background(worker):
    output = paused_run("alice", '/call wire_funds {"to": "bob", "amount": 100}')
    (pending,) = approvals_of("alice")
    resolved = approval_resolve(approval_id=pending.pk, status="approved", resolved_by="root", resolution_data={"note": "ok"})
    assert (resolved.status, resolved.resolved_by, resolved.resolved_at is not None) == ("approved", "root", True)
    worker()
    run = wait_for(lambda: Run.objects.for_user("alice").filter(pk=output["run_id"], status="COMPLETED").first())
    (te,) = run.run_data["tools"]
    assert (te["confirmed"], te["result"], te["approval_id"]) == (True, "wired 100 to bob", pending.pk)
    assert "Tool wire_funds returned: wired 100 to bob" in run.run_data["content"]
    assert approvals_of("alice")[0].status == "approved"  # no second row for the continued run


def test_rejecting_continues_the_run_with_the_rejection_and_its_note(worker):
    output = paused_run("alice", '/call wire_funds {"to": "bob", "amount": 100}')
    (pending,) = approvals_of("alice")
    approval_resolve(approval_id=pending.pk, status="rejected", resolved_by="root", resolution_data={"note": "not today"})
    worker()
    run = wait_for(lambda: Run.objects.for_user("alice").filter(pk=output["run_id"], status="COMPLETED").first())
    (te,) = run.run_data["tools"]
    assert (te["confirmed"], te["confirmation_note"], te["result"]) == (False, "not today", None)
    assert "rejected by the user: not today" in run.run_data["content"]


def test_a_second_resolve_is_a_conflict():
    paused_run("alice", '/call wire_funds {"to": "bob", "amount": 100}')
    (pending,) = approvals_of("alice")
    approval_resolve(approval_id=pending.pk, status="rejected", resolved_by="root", continue_run=False)
    with pytest.raises(ApprovalAlreadyResolved, match="Approval is already 'rejected' and cannot be resolved"):
        approval_resolve(approval_id=pending.pk, status="approved", resolved_by="mallory")
    assert approvals_of("alice")[0].resolved_by == "root"


def test_after_a_rejection_the_owners_continue_applies_it_whatever_they_send():
    output = paused_run("alice", '/call wire_funds {"to": "bob", "amount": 100}')
    (pending,) = approvals_of("alice")
    approval_resolve(approval_id=pending.pk, status="rejected", resolved_by="root", continue_run=False)
    overturned = [{**output["tools"][0], "confirmed": True}]
    done = submit_continue(principal=browser_user("alice"), component_id="approval-agent", run_id=output["run_id"], session_id=output["session_id"], tools=overturned, stream=False, kind="agent")
    assert isinstance(done, Finished)
    (te,) = done.output["tools"]
    assert (done.output["status"], te["confirmed"], te["result"]) == ("COMPLETED", False, None)


def test_an_admin_may_decide_it_with_a_continue_and_the_approval_is_theirs():
    output = paused_run("alice", '/call wire_funds {"to": "bob", "amount": 100}')
    admin = Principal(user_id="root", is_admin=True, via="jwt")
    tools = [{**output["tools"][0], "confirmed": True}]
    done = submit_continue(principal=admin, component_id="approval-agent", run_id=output["run_id"], session_id=output["session_id"], tools=tools, stream=False, kind="agent")
    assert isinstance(done, Finished) and done.output["status"] == "COMPLETED"
    (row,) = approvals_of("alice")
    assert (row.status, row.resolved_by, row.resolution_data) == ("approved", "root", {"via": "continue"})


def test_a_user_input_approval_is_approved_with_the_operators_values(worker):
    output = paused_run("alice", '/call refund {"order": "o-1"}')
    (pending,) = approvals_of("alice")
    assert (pending.pause_type, output["tools"][0]["requires_user_input"]) == ("user_input", True)
    approval_resolve(approval_id=pending.pk, status="approved", resolved_by="root", resolution_data={"values": {"amount": 30}})
    worker()
    run = wait_for(lambda: Run.objects.for_user("alice").filter(pk=output["run_id"], status="COMPLETED").first())
    assert run.run_data["tools"][0]["result"] == "refunded 30 on o-1"


def test_a_user_input_approval_can_be_rejected(worker):
    output = paused_run("alice", '/call refund {"order": "o-1"}')
    (pending,) = approvals_of("alice")
    approval_resolve(approval_id=pending.pk, status="rejected", resolved_by="root", resolution_data={"reason": "no"})
    worker()
    run = wait_for(lambda: Run.objects.for_user("alice").filter(pk=output["run_id"], status="COMPLETED").first())
    (te,) = run.run_data["tools"]
    assert (te["confirmed"], te["result"], te["requires_user_input"]) == (False, None, False)


def test_an_audited_call_is_recorded_once_the_user_decides_it():
    output = paused_run("alice", '/call delete_record {"record": "r-7"}')
    assert approvals_of("alice") == []  # audit: nothing waits on an operator
    tools = [{**output["tools"][0], "confirmed": False, "confirmation_note": "keep it"}]
    done = submit_continue(principal=browser_user("alice"), component_id="approval-agent", run_id=output["run_id"], session_id=output["session_id"], tools=tools, stream=False, kind="agent")
    assert isinstance(done, Finished) and done.output["status"] == "COMPLETED"
    (row,) = approvals_of("alice")
    assert (row.approval_type, row.status, row.tool_name, row.resolved_at is not None) == ("audit", "rejected", "delete_record", True)
    assert done.output["tools"][0]["approval_id"] == row.pk
    stored = Run.objects.for_user("alice").get(pk=output["run_id"])
    assert json.dumps(stored.run_data["tools"]) == json.dumps(done.output["tools"])


def test_a_background_run_that_pauses_is_continued_by_its_own_job(worker):
    accepted = submit_run(
        principal=browser_user("alice"), component_id="approval-agent",
        request=RunRequest(message='/call wire_funds {"to": "carol", "amount": 5}', stream=False), background=True, kind="agent",
    )
    assert isinstance(accepted, Accepted)
    worker()
    wait_for(lambda: Run.objects.for_user("alice").filter(pk=accepted.job.pk, status="PAUSED").exists())
    (pending,) = approvals_of("alice")
    approval_resolve(approval_id=pending.pk, status="approved", resolved_by=OPERATOR.user_id)
    run = wait_for(lambda: Run.objects.for_user("alice").filter(pk=accepted.job.pk, status="COMPLETED").first())
    assert run.run_data["tools"][0]["result"] == "wired 5 to carol"


def test_a_holder_of_approvals_write_decides_their_own_run_with_a_continue():
    output = paused_run("alice", '/call wire_funds {"to": "bob", "amount": 100}')
    writer = Principal(user_id="alice", scopes=parse_scopes(["agents:run", "approvals:write"]), isolated=True, via="jwt")
    tools = [{**output["tools"][0], "confirmed": False, "confirmation_note": "changed my mind"}]
    done = submit_continue(principal=writer, component_id="approval-agent", run_id=output["run_id"], session_id=output["session_id"], tools=tools, stream=False, kind="agent")
    assert isinstance(done, Finished) and done.output["status"] == "COMPLETED"
    (row,) = approvals_of("alice")
    assert (row.status, row.resolved_by) == ("rejected", "alice")


def test_the_open_server_has_no_gate(settings):
    settings.ANONYMOUS_ACCESS = "open"
    output = paused_run("alice", '/call wire_funds {"to": "bob", "amount": 100}')
    tools = [{**output["tools"][0], "confirmed": True}]
    done = submit_continue(principal=OPEN, component_id="approval-agent", run_id=output["run_id"], session_id=output["session_id"], tools=tools, stream=False, kind="agent")
    assert isinstance(done, Finished) and done.output["status"] == "COMPLETED"
    assert approvals_of("alice")[0].status == "approved"


def test_anonymous_guests_are_gated(settings):
    settings.ANONYMOUS_ACCESS = "guests"
    done = submit_run(principal=OPEN, component_id="approval-agent", request=RunRequest(message='/call wire_funds {"to": "bob", "amount": 1}', user_id="guest-7", stream=False), kind="agent")
    assert isinstance(done, Finished) and done.output["status"] == "PAUSED"
    tools = [{**done.output["tools"][0], "confirmed": True}]
    with pytest.raises(AdminApprovalRequired):
        submit_continue(principal=OPEN, component_id="approval-agent", run_id=done.output["run_id"], session_id=done.output["session_id"], requested_user_id="guest-7", tools=tools, stream=False, kind="agent")


@pytest.mark.postgres_only
def test_of_two_concurrent_resolves_exactly_one_wins():
    import threading

    from django.db import connection

    paused_run("alice", '/call wire_funds {"to": "bob", "amount": 100}')
    (pending,) = approvals_of("alice")
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def resolve(status: str) -> None:
        barrier.wait()
        try:
            approval_resolve(approval_id=pending.pk, status=status, resolved_by=status, continue_run=False)
            outcomes.append("won")
        except ApprovalAlreadyResolved:
            outcomes.append("conflict")
        finally:
            connection.close()

    threads = [threading.Thread(target=resolve, args=(status,)) for status in ("approved", "rejected")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(outcomes) == ["conflict", "won"]
    (row,) = approvals_of("alice")
    assert row.resolved_by == row.status  # the winner's decision, whole
