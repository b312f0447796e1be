"""The /approvals routes on the wire: AgentOS's shapes, errors and scopes, and isolation between
users under JWT auth (alice and bob; root holds the admin scope)."""
from __future__ import annotations

import json

import pytest
from django.test.utils import CaptureQueriesContext
from django.db import connection

from approvals.models import Approval
from sessions.models import Run
from tests.agents.conftest import wait_for
from tests.factories import make_approval, make_run
from tests.security.conftest import USER_SCOPES, auth, token

pytestmark = pytest.mark.django_db(transaction=True)

READ = [scope for scope in USER_SCOPES if scope not in ("approvals:write", "approvals:delete")]
ADMIN = ["agent_os:admin"]


def as_user(client, sub: str, scopes: list[str]):
    headers = auth(token(sub, scopes))

    class Caller:
        def get(self, path, params=None):
            return client.get(path, params or {}, **headers)

        def post(self, path, body):
            return client.post(path, data=json.dumps(body), content_type="application/json", **headers)

        def form(self, path, data):
            return client.post(path, data, **headers)

        def delete(self, path):
            return client.delete(path, **headers)

    return Caller()


@pytest.fixture
def alice(client, jwt_server):
    return as_user(client, "alice", READ)


@pytest.fixture
def bob(client, jwt_server):
    return as_user(client, "bob", READ)


@pytest.fixture
def root(client, jwt_server):
    return as_user(client, "root", ADMIN)


def paused_over_the_wire(caller, message='/call wire_funds {"to": "bob", "amount": 100}') -> dict:
    response = caller.form("/agents/approval-agent/runs", {"message": message, "stream": "false"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "PAUSED"
    return body


def test_a_paused_run_answers_with_its_approval_and_the_owner_sees_it(alice):
    run = paused_over_the_wire(alice)
    (te,) = run["tools"]
    listed = alice.get("/approvals").json()
    (item,) = listed["data"]
    assert te["approval_id"] == item["id"] and te["approval_type"] == "required"
    assert listed["meta"] == {"page": 1, "limit": 100, "total_pages": 1, "total_count": 1, "search_time_ms": 0.0}
    created = item["created_at"]
    assert isinstance(created, int)
    assert item == {
        "id": item["id"], "run_id": run["run_id"], "session_id": run["session_id"], "status": "pending", "source_type": "agent",
        "approval_type": "required", "pause_type": "confirmation", "tool_name": "wire_funds",
        "tool_args": {"to": "bob", "amount": 100}, "expires_at": None, "agent_id": "approval-agent", "team_id": None,
        "workflow_id": None, "user_id": "alice", "schedule_id": None, "schedule_run_id": None, "source_name": "Approval Agent",
        "requirements": item["requirements"], "context": {"tool_names": ["wire_funds"], "source_name": "Approval Agent"},
        "resolution_data": None, "resolved_by": None, "resolved_at": None, "created_at": created, "updated_at": None,
        "run_status": "PAUSED",
    }
    assert item["requirements"][0]["tool_execution"]["approval_id"] == item["id"]
    assert alice.get(f"/approvals/{item['id']}").json() == item
    assert alice.get(f"/approvals/{item['id']}/status").json() == {
        "approval_id": item["id"], "status": "pending", "run_id": run["run_id"], "resolved_at": None, "resolved_by": None,
    }
    assert alice.get("/approvals/count").json() == {"count": 1}


def test_the_owners_continue_is_refused_while_it_waits(alice):
    run = paused_over_the_wire(alice)
    tools = json.dumps([{**run["tools"][0], "confirmed": True}])
    response = alice.form(f"/agents/approval-agent/runs/{run['run_id']}/continue", {"tools": tools, "session_id": run["session_id"], "stream": "false"})
    assert (response.status_code, response.json()) == (403, {"detail": "This run requires admin approval before it can be continued"})


def test_another_user_sees_nothing_of_it_and_cannot_resolve_it(alice, bob):
    run = paused_over_the_wire(alice)
    approval_id = run["tools"][0]["approval_id"]
    assert bob.get("/approvals").json()["data"] == []
    assert bob.get("/approvals", {"user_id": "alice"}).json()["data"] == []
    assert bob.get("/approvals/count", {"user_id": "alice"}).json() == {"count": 0}
    for path in (f"/approvals/{approval_id}", f"/approvals/{approval_id}/status"):
        assert (bob.get(path).status_code, bob.get(path).json()) == (404, {"detail": "Approval not found"})


def test_without_approvals_write_resolve_is_refused_by_the_route_gate(alice):
    run = paused_over_the_wire(alice)
    response = alice.post(f"/approvals/{run['tools'][0]['approval_id']}/resolve", {"status": "approved"})
    assert (response.status_code, response.json()) == (403, {"detail": "Insufficient permissions. Required scope(s): approvals:write"})
    deleted = alice.delete(f"/approvals/{run['tools'][0]['approval_id']}")
    assert (deleted.status_code, deleted.json()) == (403, {"detail": "Insufficient permissions. Required scope(s): approvals:delete"})


def test_a_non_admin_holding_approvals_write_still_cannot_resolve_under_isolation(client, alice):
    run = paused_over_the_wire(alice)
    writer = as_user(client, "alice", USER_SCOPES)
    approval_id = run["tools"][0]["approval_id"]
    response = writer.post(f"/approvals/{approval_id}/resolve", {"status": "approved"})
    assert (response.status_code, response.json()) == (404, {"detail": "Approval not found"})
    assert writer.delete(f"/approvals/{approval_id}").status_code == 404
    assert Approval.objects.for_user("alice").get(pk=approval_id).status == "pending"


def test_an_admin_resolves_it_and_the_run_completes_in_the_background(alice, root, worker):
    run = paused_over_the_wire(alice)
    approval_id = run["tools"][0]["approval_id"]
    assert root.get("/approvals", {"user_id": "alice"}).json()["meta"]["total_count"] == 1
    response = root.post(f"/approvals/{approval_id}/resolve", {"status": "approved", "resolved_by": "mallory", "resolution_data": {"note": "fine"}})
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["status"], body["resolved_by"], body["resolution_data"], isinstance(body["resolved_at"], int)) == ("approved", "root", {"note": "fine"}, True)
    assert body["run_status"] in ("PENDING", "RUNNING", "COMPLETED")  # no longer paused: continued in the background
    worker()
    done = wait_for(lambda: Run.objects.for_user("alice").filter(pk=run["run_id"], status="COMPLETED").first())
    assert done.run_data["tools"][0]["result"] == "wired 100 to bob"
    assert alice.get(f"/approvals/{approval_id}").json()["run_status"] == "COMPLETED"
    polled = alice.get(f"/agents/approval-agent/runs/{run['run_id']}", {"session_id": run["session_id"]}).json()
    assert polled["status"] == "COMPLETED"

    again = root.post(f"/approvals/{approval_id}/resolve", {"status": "rejected"})
    assert (again.status_code, again.json()) == (409, {"detail": "Approval is already 'approved' and cannot be resolved"})
    assert alice.get("/approvals/count").json() == {"count": 0}


def test_resolve_validates_its_body_as_agentos_does(root):
    approval = make_approval("alice")
    bad = root.post(f"/approvals/{approval.pk}/resolve", {"status": "maybe"})
    assert bad.status_code == 422
    assert bad.json()["detail"][0] | {"input": None} == {
        "type": "string_pattern_mismatch", "loc": ["body", "status"], "msg": "String should match pattern '^(approved|rejected)$'", "input": None,
    }
    missing = root.post(f"/approvals/{approval.pk}/resolve", {})
    assert missing.status_code == 422 and missing.json()["detail"][0]["loc"] == ["body", "status"]
    unknown = root.post("/approvals/nope/resolve", {"status": "approved"})
    assert (unknown.status_code, unknown.json()) == (404, {"detail": "Approval not found"})


def test_list_filters_and_pages(root):
    run = make_run("alice", status="PAUSED")
    first = make_approval("alice", run=run, tool_name="a")
    second = make_approval("bob", status="approved", approval_type="audit", team_id="crew", agent_id=None, source_type="team")
    make_approval("bob", status="rejected")

    def ids(**params):
        return [item["id"] for item in root.get("/approvals", params).json()["data"]]

    assert ids(status="pending") == [first.pk]
    assert ids(approval_type="audit") == [second.pk] == ids(team_id="crew") == ids(source_type="team")
    assert ids(user_id="alice") == [first.pk] == ids(run_id=run.pk)
    assert len(ids()) == 3
    paged = root.get("/approvals", {"limit": 2, "page": 2}).json()
    assert paged["meta"] == {"page": 2, "limit": 2, "total_pages": 2, "total_count": 3, "search_time_ms": 0.0} and len(paged["data"]) == 1
    for params, loc in (({"status": "later"}, "status"), ({"approval_type": "x"}, "approval_type"), ({"limit": 1001}, "limit"), ({"limit": 0}, "limit")):
        response = root.get("/approvals", params)
        assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["query", loc], params
    assert root.get("/approvals/count").json() == {"count": 1}


def test_the_list_reads_a_fixed_number_of_queries(root):
    for user in ("alice", "bob", "carol"):
        make_approval(user)
    with CaptureQueriesContext(connection) as few:
        root.get("/approvals")
    for user in ("dave", "erin", "frank", "gina"):
        make_approval(user)
    with CaptureQueriesContext(connection) as more:
        assert len(root.get("/approvals").json()["data"]) == 7
    assert len(more) == len(few)


def test_an_admin_deletes_an_approval(root, alice):
    approval = make_approval("alice")
    assert root.delete(f"/approvals/{approval.pk}").status_code == 204
    assert root.delete(f"/approvals/{approval.pk}").status_code == 404
    assert not Approval.objects.for_user("alice").filter(pk=approval.pk).exists()


def test_without_approvals_read_the_family_is_forbidden(client, jwt_server):
    response = as_user(client, "alice", [scope for scope in USER_SCOPES if not scope.startswith("approvals:")]).get("/approvals")
    assert (response.status_code, response.json()) == (403, {"detail": "Insufficient permissions. Required scope(s): approvals:read"})


def test_on_the_open_server_anyone_resolves_and_the_body_names_who(client):
    approval = make_approval("alice")
    response = client.post(f"/approvals/{approval.pk}/resolve", data=json.dumps({"status": "rejected", "resolved_by": "ops"}), content_type="application/json")
    assert response.status_code == 200, response.content
    assert (response.json()["status"], response.json()["resolved_by"]) == ("rejected", "ops")


def test_deleting_a_pending_approval_leaves_the_run_to_its_owner(alice, root):
    run = paused_over_the_wire(alice)
    assert root.delete(f"/approvals/{run['tools'][0]['approval_id']}").status_code == 204
    tools = json.dumps([{**run["tools"][0], "confirmed": True}])
    response = alice.form(f"/agents/approval-agent/runs/{run['run_id']}/continue", {"tools": tools, "session_id": run["session_id"], "stream": "false"})
    assert (response.status_code, response.json()["status"], response.json()["tools"][0]["result"]) == (200, "COMPLETED", "wired 100 to bob")


def test_the_list_filters_by_when_it_was_created(root):
    from datetime import datetime, timezone

    old = make_approval("alice", created_at=datetime(2026, 1, 1, 12, 0, 0, tzinfo=timezone.utc))
    new = make_approval("alice", created_at=datetime(2026, 6, 1, 12, 0, 0, tzinfo=timezone.utc))
    june = int(datetime(2026, 6, 1, tzinfo=timezone.utc).timestamp())

    def ids(**params):
        return [item["id"] for item in root.get("/approvals", params).json()["data"]]

    assert ids(created_after=june) == [new.pk]
    assert ids(created_before=june) == [old.pk]
    assert ids(created_before=int(new.created_at.timestamp())) == [new.pk, old.pk]  # inclusive, to the second
    assert ids(created_after=10**30) == [] and len(ids(created_before=10**30)) == 2  # clamped, never a 500
    response = root.get("/approvals", {"created_after": "yesterday"})
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["query", "created_after"]
