"""Every endpoint against every bad credential, a missing scope, and another user's ids.

The list of endpoints is checked against the OpenAPI document, so a new endpoint cannot be
added without joining this matrix.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import jwt
import pytest

from tests.conftest import run_async
from tests.security.conftest import MARK, OTHER_SECRET, SECRET, auth, claims, snapshot, token

pytestmark = pytest.mark.django_db


@dataclass(frozen=True)
class Call:
    method: str
    template: str  # the OpenAPI path
    path: Callable[[dict[str, str]], str]
    form: Callable[[dict[str, str]], dict[str, str]] | None = None
    body: Callable[[dict[str, str]], Any] | None = None
    query: Callable[[dict[str, str]], dict[str, str]] = field(default=lambda ids: {})
    public: bool = False
    # What bob (valid token, every user scope) gets when aiming at alice's data.
    outsider_status: tuple[int, ...] = (404,)
    # How a token without the call's scope is refused (the start of the 403's detail).
    forbidden: str = "Insufficient permissions. Required scope(s): "

    def send(self, client, ids: dict[str, str], headers: dict[str, str]):
        url = self.path(ids)
        query = self.query(ids)
        if query:
            url += "?" + "&".join(f"{key}={value}" for key, value in query.items())
        method = getattr(client, self.method.lower())
        if self.form is not None:
            return method(url, data=self.form(ids), **headers) if self.method == "POST" else method(url, **headers)
        if self.body is not None:
            return method(url, data=json.dumps(self.body(ids)), content_type="application/json", **headers)
        return method(url, **headers)


S = "alice-sess"
QUEUE_ADMIN_ONLY = "Job queue operations require an admin scope"
ENDPOINTS = [
    Call("GET", "/health", lambda i: "/health", public=True, outsider_status=(200,)),
    Call("GET", "/info", lambda i: "/info", public=True, outsider_status=(200,)),
    Call("GET", "/config", lambda i: "/config", outsider_status=(200,)),
    Call("GET", "/agents", lambda i: "/agents", outsider_status=(200,)),
    Call("GET", "/agents/{agent_id}", lambda i: "/agents/assistant", outsider_status=(200,)),
    Call("GET", "/agents/{agent_id}/runs", lambda i: "/agents/assistant/runs", query=lambda i: {"session_id": S}),
    Call("POST", "/agents/{agent_id}/runs", lambda i: "/agents/assistant/runs", form=lambda i: {"message": "hi", "stream": "false", "session_id": S}),
    Call("GET", "/agents/{agent_id}/runs/{run_id}", lambda i: f"/agents/assistant/runs/{i['run_id']}", query=lambda i: {"session_id": S}),
    # As for an unknown run id (AgentOS accepts a cancel that races ahead of its run): another
    # user's run or session must not answer otherwise, or the cancel tells bob that it exists.
    Call("POST", "/agents/{agent_id}/runs/{run_id}/cancel", lambda i: f"/agents/assistant/runs/{i['run_id']}/cancel", form=lambda i: {}, query=lambda i: {"session_id": S}, outsider_status=(200,)),
    Call("POST", "/agents/{agent_id}/runs/{run_id}/continue", lambda i: f"/agents/hitl-agent/runs/{i['paused_run_id']}/continue", form=lambda i: {"tools": "[]", "session_id": S, "stream": "false"}),
    Call("GET", "/agents/{agent_id}/runs/{run_id}/checkpoints", lambda i: f"/agents/assistant/runs/{i['run_id']}/checkpoints", query=lambda i: {"session_id": S}),
    Call("GET", "/agents/{agent_id}/runs/{run_id}/checkpoints/{message_index}", lambda i: f"/agents/assistant/runs/{i['run_id']}/checkpoints/1", query=lambda i: {"session_id": S}),
    # Always 200 (errors are in-band frames); the outsider gets a "not found" frame.
    Call("POST", "/agents/{agent_id}/runs/{run_id}/resume", lambda i: f"/agents/assistant/runs/{i['run_id']}/resume", form=lambda i: {"session_id": S}, outsider_status=(200,)),
    Call("POST", "/agents/{agent_id}/sessions/{session_id}/compact", lambda i: f"/agents/assistant/sessions/{S}/compact", form=lambda i: {}, query=lambda i: {"user_id": "alice"}),
    # Another user's session is as missing as an unknown one: nothing to fork, and nothing copied.
    Call("POST", "/agents/{agent_id}/sessions/{session_id}/fork", lambda i: f"/agents/assistant/sessions/{S}/fork", form=lambda i: {}, query=lambda i: {"user_id": "alice"}, outsider_status=(400,)),
    Call("GET", "/teams", lambda i: "/teams", outsider_status=(200,)),
    Call("GET", "/teams/{team_id}", lambda i: "/teams/research-team", outsider_status=(200,)),
    Call("GET", "/teams/{team_id}/runs", lambda i: "/teams/research-team/runs", query=lambda i: {"session_id": i["team_session_id"]}),
    Call("POST", "/teams/{team_id}/runs", lambda i: "/teams/research-team/runs", form=lambda i: {"message": "hi", "stream": "false", "session_id": i["team_session_id"]}),
    Call("GET", "/teams/{team_id}/runs/{run_id}", lambda i: f"/teams/research-team/runs/{i['team_run_id']}", query=lambda i: {"session_id": i["team_session_id"]}),
    Call("POST", "/teams/{team_id}/runs/{run_id}/cancel", lambda i: f"/teams/research-team/runs/{i['team_run_id']}/cancel", form=lambda i: {}, query=lambda i: {"session_id": i["team_session_id"]}, outsider_status=(200,)),
    Call("POST", "/teams/{team_id}/runs/{run_id}/continue", lambda i: f"/teams/research-team/runs/{i['team_run_id']}/continue", form=lambda i: {"tools": "[]", "session_id": i["team_session_id"], "stream": "false"}),
    Call("GET", "/teams/{team_id}/runs/{run_id}/checkpoints", lambda i: f"/teams/research-team/runs/{i['team_run_id']}/checkpoints", query=lambda i: {"session_id": i["team_session_id"]}),
    Call("GET", "/teams/{team_id}/runs/{run_id}/checkpoints/{message_index}", lambda i: f"/teams/research-team/runs/{i['team_run_id']}/checkpoints/1", query=lambda i: {"session_id": i["team_session_id"]}),
    Call("POST", "/teams/{team_id}/runs/{run_id}/resume", lambda i: f"/teams/research-team/runs/{i['team_run_id']}/resume", form=lambda i: {"session_id": i["team_session_id"]}, outsider_status=(200,)),
    Call("POST", "/teams/{team_id}/sessions/{session_id}/fork", lambda i: f"/teams/research-team/sessions/{i['team_session_id']}/fork", form=lambda i: {}, query=lambda i: {"user_id": "alice"}, outsider_status=(400,)),
    Call("GET", "/workflows", lambda i: "/workflows", outsider_status=(200,)),
    Call("GET", "/workflows/{workflow_id}", lambda i: "/workflows/review-flow", outsider_status=(200,)),
    Call("GET", "/workflows/{workflow_id}/runs", lambda i: "/workflows/review-flow/runs", query=lambda i: {"session_id": i["workflow_session_id"]}),
    Call("POST", "/workflows/{workflow_id}/runs", lambda i: "/workflows/review-flow/runs", form=lambda i: {"message": "hi", "stream": "false", "session_id": i["workflow_session_id"]}),
    Call("GET", "/workflows/{workflow_id}/runs/{run_id}", lambda i: f"/workflows/review-flow/runs/{i['workflow_run_id']}", query=lambda i: {"session_id": i["workflow_session_id"]}),
    Call("POST", "/workflows/{workflow_id}/runs/{run_id}/cancel", lambda i: f"/workflows/review-flow/runs/{i['workflow_run_id']}/cancel", form=lambda i: {}, query=lambda i: {"session_id": i["workflow_session_id"]}, outsider_status=(200,)),
    Call("POST", "/workflows/{workflow_id}/runs/{run_id}/continue", lambda i: f"/workflows/review-flow/runs/{i['workflow_run_id']}/continue", form=lambda i: {"step_requirements": "[]", "session_id": i["workflow_session_id"], "stream": "false"}),
    Call("POST", "/workflows/{workflow_id}/runs/{run_id}/resume", lambda i: f"/workflows/review-flow/runs/{i['workflow_run_id']}/resume", form=lambda i: {"session_id": i["workflow_session_id"]}, outsider_status=(200,)),
    Call("GET", "/sessions", lambda i: "/sessions", query=lambda i: {"user_id": "alice"}, outsider_status=(200,)),
    Call("POST", "/sessions", lambda i: "/sessions", body=lambda i: {"session_id": "bobs-new", "user_id": "alice"}, outsider_status=(201,)),
    Call("DELETE", "/sessions", lambda i: "/sessions", body=lambda i: {"session_ids": [S], "session_types": ["agent"]}, outsider_status=(204,)),
    Call("GET", "/sessions/{session_id}", lambda i: f"/sessions/{S}"),
    Call("PATCH", "/sessions/{session_id}", lambda i: f"/sessions/{S}", body=lambda i: {"session_name": "taken over"}),
    Call("DELETE", "/sessions/{session_id}", lambda i: f"/sessions/{S}", outsider_status=(204,)),
    Call("POST", "/sessions/{session_id}/rename", lambda i: f"/sessions/{S}/rename", body=lambda i: {"session_name": "taken over"}),
    Call("GET", "/sessions/{session_id}/runs", lambda i: f"/sessions/{S}/runs"),
    Call("GET", "/sessions/{session_id}/run-previews", lambda i: f"/sessions/{S}/run-previews"),
    Call("GET", "/sessions/{session_id}/runs/{run_id}", lambda i: f"/sessions/{S}/runs/{i['run_id']}"),
    Call("GET", "/sessions/{session_id}/media/{storage_key}", lambda i: f"/sessions/{S}/media/file.png"),
    Call("GET", "/memories", lambda i: "/memories", query=lambda i: {"user_id": "alice"}, outsider_status=(200,)),
    Call("POST", "/memories", lambda i: "/memories", body=lambda i: {"memory": "bob's", "user_id": "alice"}, outsider_status=(200,)),
    Call("DELETE", "/memories", lambda i: "/memories", body=lambda i: {"memory_ids": [i["memory_id"]], "user_id": "alice"}, outsider_status=(204,)),
    Call("GET", "/memories/{memory_id}", lambda i: f"/memories/{i['memory_id']}", query=lambda i: {"user_id": "alice"}),
    Call("PATCH", "/memories/{memory_id}", lambda i: f"/memories/{i['memory_id']}", body=lambda i: {"memory": "taken over", "user_id": "alice"}),
    Call("DELETE", "/memories/{memory_id}", lambda i: f"/memories/{i['memory_id']}", query=lambda i: {"user_id": "alice"}, outsider_status=(204,)),
    Call("GET", "/memory_topics", lambda i: "/memory_topics", query=lambda i: {"user_id": "alice"}, outsider_status=(200,)),
    Call("GET", "/user_memory_stats", lambda i: "/user_memory_stats", query=lambda i: {"user_id": "alice"}, outsider_status=(200,)),
    Call("POST", "/optimize-memories", lambda i: "/optimize-memories", body=lambda i: {"user_id": "alice"}),
    # AgentOS refuses an isolated caller naming another user with 403, and hides their records (404).
    Call("GET", "/learnings", lambda i: "/learnings", query=lambda i: {"user_id": "alice"}, outsider_status=(403,)),
    Call("POST", "/learnings", lambda i: "/learnings", body=lambda i: {"learning_type": "user_profile", "user_id": "alice", "content": {}}, outsider_status=(403,)),
    Call("GET", "/learnings/users", lambda i: "/learnings/users", query=lambda i: {"user_id": "alice"}, outsider_status=(403,)),
    Call("DELETE", "/learnings/users/{user_id}", lambda i: "/learnings/users/alice", outsider_status=(403,)),
    Call("GET", "/learnings/{learning_id}", lambda i: f"/learnings/{i['learning_id']}"),
    Call("PATCH", "/learnings/{learning_id}", lambda i: f"/learnings/{i['learning_id']}", body=lambda i: {"content": {"taken": "over"}}),
    Call("DELETE", "/learnings/{learning_id}", lambda i: f"/learnings/{i['learning_id']}"),
    Call("GET", "/schedules", lambda i: "/schedules", outsider_status=(200,)),
    # Bob's own schedule, of his own user id (the body's claim of alice is never read).
    Call("POST", "/schedules", lambda i: "/schedules", body=lambda i: {"name": "bobs", "endpoint": "/agents/assistant/runs", "cron_expr": "0 9 * * *", "payload": {"message": "hi"}, "user_id": "alice"}, outsider_status=(201,)),
    Call("GET", "/schedules/{schedule_id}", lambda i: f"/schedules/{i['schedule_id']}"),
    Call("PATCH", "/schedules/{schedule_id}", lambda i: f"/schedules/{i['schedule_id']}", body=lambda i: {"name": "taken over"}),
    Call("DELETE", "/schedules/{schedule_id}", lambda i: f"/schedules/{i['schedule_id']}"),
    Call("POST", "/schedules/{schedule_id}/enable", lambda i: f"/schedules/{i['schedule_id']}/enable", body=lambda i: {}),
    Call("POST", "/schedules/{schedule_id}/disable", lambda i: f"/schedules/{i['schedule_id']}/disable", body=lambda i: {}),
    Call("POST", "/schedules/{schedule_id}/trigger", lambda i: f"/schedules/{i['schedule_id']}/trigger", body=lambda i: {}),
    Call("GET", "/schedules/{schedule_id}/runs", lambda i: f"/schedules/{i['schedule_id']}/runs"),
    Call("GET", "/schedules/{schedule_id}/runs/{run_id}", lambda i: f"/schedules/{i['schedule_id']}/runs/{i['schedule_run_id']}"),
    Call("GET", "/service-accounts", lambda i: "/service-accounts", outsider_status=(200,)),
    Call("POST", "/service-accounts", lambda i: "/service-accounts", body=lambda i: {"name": "bobs-bot", "scopes": [{"scope": "agents:read"}]}, outsider_status=(201,)),
    Call("DELETE", "/service-accounts/{service_account_id}", lambda i: f"/service-accounts/{i['service_account_id']}"),
    # Definitions are nobody's: bob reads what is published (nothing here: "assistant" is defined in
    # code, not a component), and changes nothing shared (403), as AgentOS answers a scoped caller.
    Call("GET", "/components", lambda i: "/components", outsider_status=(200,)),
    Call("POST", "/components", lambda i: "/components", body=lambda i: {"name": "Bobs", "component_type": "agent"}, outsider_status=(403,)),
    Call("GET", "/components/{component_id}", lambda i: "/components/assistant"),
    Call("PATCH", "/components/{component_id}", lambda i: "/components/assistant", body=lambda i: {"name": "x"}),
    Call("DELETE", "/components/{component_id}", lambda i: "/components/assistant"),
    Call("POST", "/components/{component_id}/restore", lambda i: "/components/assistant/restore", body=lambda i: {}),
    Call("GET", "/components/{component_id}/configs", lambda i: "/components/assistant/configs"),
    Call("POST", "/components/{component_id}/configs", lambda i: "/components/assistant/configs", body=lambda i: {"config": {}}),
    Call("GET", "/components/{component_id}/configs/current", lambda i: "/components/assistant/configs/current"),
    Call("GET", "/components/{component_id}/configs/{version}", lambda i: "/components/assistant/configs/1"),
    Call("PATCH", "/components/{component_id}/configs/{version}", lambda i: "/components/assistant/configs/1", body=lambda i: {"config": {}}),
    Call("DELETE", "/components/{component_id}/configs/{version}", lambda i: "/components/assistant/configs/1"),
    Call("POST", "/components/{component_id}/configs/{version}/set-current", lambda i: "/components/assistant/configs/1/set-current", body=lambda i: {}),
    Call("GET", "/registry", lambda i: "/registry", outsider_status=(200,)),
    # An operator's surface: anyone but an admin is refused, whatever their scopes.
    Call("GET", "/queue/jobs", lambda i: "/queue/jobs", outsider_status=(403,), forbidden=QUEUE_ADMIN_ONLY),
    Call("GET", "/queue/jobs/{job_id}", lambda i: f"/queue/jobs/{i['run_id']}", outsider_status=(403,), forbidden=QUEUE_ADMIN_ONLY),
    Call("POST", "/queue/jobs/{job_id}/requeue", lambda i: f"/queue/jobs/{i['run_id']}/requeue", body=lambda i: {}, outsider_status=(403,), forbidden=QUEUE_ADMIN_ONLY),
    Call("GET", "/queue/stats", lambda i: "/queue/stats", outsider_status=(403,), forbidden=QUEUE_ADMIN_ONLY),
    # An admin's operation (config:write); another user's token holding every user scope is refused.
    Call("POST", "/databases/all/migrate", lambda i: "/databases/all/migrate", outsider_status=(403,)),
    Call("POST", "/databases/{db_id}/migrate", lambda i: "/databases/agno-site-db/migrate", outsider_status=(403,)),
    Call("GET", "/traces", lambda i: "/traces", query=lambda i: {"user_id": "alice"}, outsider_status=(200,)),
    Call("GET", "/traces/filter-schema", lambda i: "/traces/filter-schema", outsider_status=(200,)),
    Call("GET", "/traces/{trace_id}", lambda i: f"/traces/{i['trace_id']}"),
    Call("POST", "/traces/search", lambda i: "/traces/search", body=lambda i: {"filter": {"op": "EQ", "key": "user_id", "value": "alice"}}, outsider_status=(200,)),
    Call("GET", "/trace_session_stats", lambda i: "/trace_session_stats", query=lambda i: {"user_id": "alice"}, outsider_status=(200,)),
    Call("POST", "/knowledge/content", lambda i: "/knowledge/content", form=lambda i: {"text_content": "bob's note"}, outsider_status=(202,)),
    Call("POST", "/knowledge/remote-content", lambda i: "/knowledge/remote-content", form=lambda i: {"config_id": "handbook", "path": "a.txt"}, outsider_status=(400,)),
    Call("GET", "/knowledge/content", lambda i: "/knowledge/content", outsider_status=(200,)),
    Call("DELETE", "/knowledge/content", lambda i: "/knowledge/content", outsider_status=(200,)),
    Call("GET", "/knowledge/content/{content_id}", lambda i: f"/knowledge/content/{i['content_id']}"),
    Call("PATCH", "/knowledge/content/{content_id}", lambda i: f"/knowledge/content/{i['content_id']}"),
    Call("DELETE", "/knowledge/content/{content_id}", lambda i: f"/knowledge/content/{i['content_id']}"),
    Call("POST", "/knowledge/content/{content_id}/refresh", lambda i: f"/knowledge/content/{i['content_id']}/refresh", body=lambda i: {}),
    Call("GET", "/knowledge/content/{content_id}/status", lambda i: f"/knowledge/content/{i['content_id']}/status"),
    Call("POST", "/knowledge/search", lambda i: "/knowledge/search", body=lambda i: {"query": "notes"}, outsider_status=(200,)),
    Call("GET", "/knowledge/config", lambda i: "/knowledge/config", outsider_status=(200,)),
    Call("GET", "/knowledge/{knowledge_id}/sources", lambda i: f"/knowledge/{i['private_base_id']}/sources"),
    Call("GET", "/knowledge/{knowledge_id}/sources/{source_id}/files", lambda i: f"/knowledge/{i['private_base_id']}/sources/handbook/files"),
    Call("GET", "/approvals", lambda i: "/approvals", query=lambda i: {"user_id": "alice"}, outsider_status=(200,)),
    Call("GET", "/approvals/count", lambda i: "/approvals/count", query=lambda i: {"user_id": "alice"}, outsider_status=(200,)),
    Call("GET", "/approvals/{approval_id}", lambda i: f"/approvals/{i['approval_id']}"),
    Call("GET", "/approvals/{approval_id}/status", lambda i: f"/approvals/{i['approval_id']}/status"),
    Call("POST", "/approvals/{approval_id}/resolve", lambda i: f"/approvals/{i['approval_id']}/resolve", body=lambda i: {"status": "approved"}),
    Call("DELETE", "/approvals/{approval_id}", lambda i: f"/approvals/{i['approval_id']}"),
    # Metrics are the caller's own: user_id is ignored for bob, and his refresh writes only his rows.
    Call("GET", "/metrics", lambda i: "/metrics", query=lambda i: {"user_id": "alice"}, outsider_status=(200,)),
    Call("POST", "/metrics/refresh", lambda i: "/metrics/refresh", query=lambda i: {"user_id": "alice"}, body=lambda i: {}, outsider_status=(200,)),
    Call("GET", "/metrics/refresh/status", lambda i: "/metrics/refresh/status", outsider_status=(200,)),
    Call("GET", "/eval-runs", lambda i: "/eval-runs", outsider_status=(200,)),
    # Bob's eval of an agent runs as bob's (owned by him, with runs of his own): nothing of alice's.
    Call("POST", "/eval-runs", lambda i: "/eval-runs", body=lambda i: {"eval_type": "reliability", "input": "hi", "agent_id": "assistant", "expected_tool_calls": []},
         outsider_status=(200,)),
    Call("DELETE", "/eval-runs", lambda i: "/eval-runs", body=lambda i: {"eval_run_ids": [i["eval_run_id"]]}, outsider_status=(204,)),
    Call("GET", "/eval-runs/{eval_run_id}", lambda i: f"/eval-runs/{i['eval_run_id']}"),
    Call("PATCH", "/eval-runs/{eval_run_id}", lambda i: f"/eval-runs/{i['eval_run_id']}", body=lambda i: {"name": "taken over"}),
]
PROTECTED = [call for call in ENDPOINTS if not call.public]


def ids_of(call: Call) -> str:
    return f"{call.method} {call.template}"


def test_the_matrix_covers_every_operation_in_the_openapi_document(client) -> None:
    document = client.get("/openapi.json").json()
    operations = {f"{method.upper()} {path}" for path, item in document["paths"].items() for method in item if method in {"get", "post", "put", "patch", "delete"}}
    assert operations == {ids_of(call) for call in ENDPOINTS}


def _bad_credentials() -> dict[str, dict[str, str]]:
    now = int(time.time())
    good = token("alice")
    header, payload, signature = good.split(".")
    forged_payload = jwt.utils.base64url_encode(json.dumps(claims("bob")).encode()).decode()
    unsigned = jwt.encode(claims("alice"), None, algorithm="none")
    return {
        "no token": {},
        "garbage": auth("not-a-jwt"),
        "expired": auth(token("alice", exp=now - 120, iat=now - 720, nbf=now - 720)),
        "not yet valid": auth(token("alice", nbf=now + 600)),
        "wrong key": auth(token("alice", key=OTHER_SECRET)),
        "alg none": auth(unsigned),
        "tampered payload": auth(f"{header}.{forged_payload}.{signature}"),
        "wrong audience": auth(token("alice", aud="another-os")),
        "no audience": auth(jwt.encode({k: v for k, v in claims("alice").items() if k != "aud"}, SECRET, algorithm="HS256")),
        "reserved subject": auth(token("sa:robot")),
        "no expiry": auth(jwt.encode({k: v for k, v in claims("alice").items() if k != "exp"}, SECRET, algorithm="HS256")),
    }


BAD_CREDENTIALS = list(_bad_credentials())


@pytest.mark.parametrize("case", BAD_CREDENTIALS)
@pytest.mark.parametrize("call", PROTECTED, ids=ids_of)
def test_bad_credentials_are_401_and_change_nothing(client, jwt_server, alice_data, call: Call, case: str) -> None:
    before = snapshot()
    response = call.send(client, alice_data, _bad_credentials()[case])
    assert response.status_code == 401, (case, response.status_code, response.content[:300])
    assert response["WWW-Authenticate"] == "Bearer"
    detail = response.json()["detail"]
    assert isinstance(detail, str) and MARK not in detail
    assert snapshot() == before


def test_the_401_details_name_the_problem(client, jwt_server, alice_data) -> None:
    credentials = _bad_credentials()
    details = {case: client.get("/sessions", **credentials[case]).json()["detail"] for case in credentials}
    assert details["no token"] == "Authorization header missing"
    assert details["expired"] == "Token has expired"
    assert details["wrong audience"] == "Invalid token audience - token not valid for this AgentOS instance"
    assert details["alg none"] == "Invalid token: The specified alg value is not allowed"
    assert details["reserved subject"] == "Invalid token subject"
    assert details["wrong key"] == details["tampered payload"] == "Invalid token: Signature verification failed"
    assert details["no audience"].startswith('Invalid token: Token is missing the "aud" claim')
    assert details["no expiry"].startswith('Invalid token: Token is missing the "exp" claim')


@pytest.mark.parametrize("call", [c for c in PROTECTED], ids=ids_of)
def test_a_token_without_the_scope_is_403_and_changes_nothing(client, jwt_server, alice_data, call: Call) -> None:
    before = snapshot()
    # A scope of another family than the call's: the eval routes' own is the one they refuse.
    held = ["sessions:read"] if call.template.startswith("/eval-runs") else ["evals:read"]
    response = call.send(client, alice_data, auth(token("alice", held)))
    assert response.status_code == 403, (response.status_code, response.content[:300])
    assert response.json()["detail"].startswith(call.forbidden)
    assert snapshot() == before


def streamed_body(response) -> str:
    """A streamed response's whole body, an async stream read on an event loop as a server would."""
    if not response.is_async:
        return b"".join(response.streaming_content).decode()

    async def read() -> bytes:
        return b"".join([chunk async for chunk in response.streaming_content])

    return run_async(read).decode()


# Transactional: runs execute in their own threads and connections, which must see alice's rows.
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("call", PROTECTED, ids=ids_of)
def test_another_users_ids_in_path_query_and_body_reach_nothing_of_theirs(client, jwt_server, alice_data, call: Call) -> None:
    before = snapshot()
    response = call.send(client, alice_data, auth(token("bob")))
    assert response.status_code in call.outsider_status, (response.status_code, response.content[:300])
    body = response.content.decode() if not response.streaming else streamed_body(response)
    assert MARK not in body
    after = snapshot()
    # Whatever bob's request created is bob's; nothing of alice's changed.
    for model, rows in before.items():
        alice_before = [row for row in rows if "'alice'" in row]
        alice_after = [row for row in after[model] if "'alice'" in row]
        assert alice_after == alice_before, model


@pytest.mark.django_db(transaction=True)
def test_what_an_outsider_creates_is_their_own(client, jwt_server, alice_data) -> None:
    from sessions.models import Session, UserMemory

    bob = auth(token("bob"))
    client.post("/sessions", data=json.dumps({"session_id": "made-by-bob", "user_id": "alice"}), content_type="application/json", **bob)
    client.post("/memories", data=json.dumps({"memory": "mine", "user_id": "alice"}), content_type="application/json", **bob)
    response = client.post("/agents/assistant/runs", data={"message": "hi", "stream": "false", "user_id": "alice"}, **bob)
    assert response.json()["user_id"] == "bob"
    assert Session.all_users.get(pk="made-by-bob").user_id == "bob"
    assert set(UserMemory.all_users.filter(memory="mine").values_list("user_id", flat=True)) == {"bob"}
    assert Session.all_users.get(pk=response.json()["session_id"]).user_id == "bob"


@pytest.mark.django_db(transaction=True)
def test_a_fork_stays_with_the_sessions_owner_unless_the_caller_is_bound_to_themselves(client, jwt_server, alice_data) -> None:
    from sessions.models import Run, Session

    admin = auth(token("root", ["agent_os:admin"]))
    forked = client.post(f"/agents/assistant/sessions/{alice_data['session_id']}/fork", **admin).json()
    assert Session.all_users.get(pk=forked["session_id"]).user_id == "alice"
    assert set(Run.all_users.filter(session_id=forked["session_id"]).values_list("user_id", flat=True)) == {"alice"}
    own = client.post(f"/agents/assistant/sessions/{alice_data['session_id']}/fork", **auth(token("alice"))).json()
    assert Session.all_users.get(pk=own["session_id"]).user_id == "alice"


def test_an_admin_may_act_for_another_user(client, jwt_server, alice_data) -> None:
    admin = auth(token("root", ["agent_os:admin"]))
    assert client.get(f"/sessions/{alice_data['session_id']}", **admin).status_code == 200
    listed = client.get("/sessions", {"user_id": "alice"}, **admin).json()
    assert {item["session_id"] for item in listed["data"]} == {"alice-sess", "alice-team-sess", "alice-flow-sess"}
    created = client.post("/memories", data=json.dumps({"memory": "set by admin", "user_id": "alice"}), content_type="application/json", **admin).json()
    assert created["user_id"] == "alice"
