"""A server with JWT auth and user isolation on, two users with data, and token makers."""
from __future__ import annotations

import time
from typing import Any

import jwt
import pytest

from tests.factories import make_access_token, make_approval, make_eval_run, make_event, make_learning, make_memory, make_run, make_schedule, make_schedule_run, make_session

SECRET = "test-hs256-secret-that-is-long-enough-0123456789"
OTHER_SECRET = "some-other-secret-the-server-does-not-know-012345"
AUDIENCE = "agno-site"
USER_SCOPES = [
    "agents:read", "agents:run", "teams:read", "teams:run", "workflows:read", "workflows:run", "sessions:read", "sessions:write", "sessions:delete",
    "memories:read", "memories:write", "memories:delete", "config:read", "learnings:read", "learnings:write", "learnings:delete",
    "service_accounts:read", "service_accounts:write", "service_accounts:delete",
    "approvals:read", "approvals:write", "approvals:delete", "metrics:read", "metrics:write", "traces:read",
    "schedules:read", "schedules:write", "schedules:delete",
    "knowledge:read", "knowledge:write", "knowledge:delete",
    "evals:read", "evals:write", "evals:delete",
    "components:read", "components:write", "components:delete", "registry:read",
]


@pytest.fixture
def jwt_server(settings):
    settings.JWT_VERIFICATION_KEYS = [SECRET]
    settings.JWT_JWKS_FILE = None
    settings.JWT_ALGORITHMS = ["HS256", "RS256", "ES256"]
    settings.JWT_AUDIENCE = AUDIENCE
    settings.JWT_VERIFY_AUDIENCE = True
    settings.AGENT_OS_AUTH_MODE = "jwt"
    settings.USER_ISOLATION = True
    settings.AGENT_OS_USER_ISOLATION = True
    return settings


def claims(sub: str | None = "alice", scopes: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    now = int(time.time())
    body: dict[str, Any] = {"iat": now, "nbf": now, "exp": now + 600, "aud": AUDIENCE, "scopes": USER_SCOPES if scopes is None else scopes}
    if sub is not None:
        body["sub"] = sub
    body.update(extra)
    return body


def token(sub: str | None = "alice", scopes: list[str] | None = None, *, key: str = SECRET, algorithm: str = "HS256", **extra: Any) -> str:
    return jwt.encode(claims(sub, scopes, **extra), key, algorithm=algorithm)


def auth(value: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {value}"}


def create_service_account(client, owner_token: str, name: str, scopes: list[str], **extra):
    """``POST /service-accounts`` as the holder of ``owner_token``."""
    import json

    body = {"name": name, "scopes": [{"scope": scope} for scope in scopes], **extra}
    return client.post("/service-accounts", data=json.dumps(body), content_type="application/json", **auth(owner_token))


MARK = "ALICE-PRIVATE-7f3a"


@pytest.fixture
def alice_data(db) -> dict[str, str]:
    """Alice's session, runs (one paused), event and memory, each carrying a marker string."""
    session = make_session("alice", session_id="alice-sess", component_id="assistant", session_name=f"{MARK} plans")
    run = make_run("alice", session=session, run_id="alice-run", status="COMPLETED", input={"input_content": f"{MARK} question"},
                   run_data={"content": f"{MARK} answer", "messages": [{"role": "user", "content": f"{MARK} question"}]})
    paused = make_run("alice", session=session, run_id="alice-paused", component_id="hitl-agent", status="PAUSED",
                      run_data={"status": "PAUSED", "agent_id": "hitl-agent", "content": MARK})
    make_event("alice", run=run, payload={"event": "RunCompleted", "content": MARK})
    memory = make_memory("alice", memory=f"{MARK} likes tea", topics=["drinks"], memory_id="alice-memory")
    learning = make_learning("alice", learning_id="user_profile_alice", learning_type="user_profile", content={"name": MARK})
    robot = make_access_token("alice", name=f"{MARK}-bot", kind="service", scopes=["agents:read"])
    team_session = make_session("alice", session_id="alice-team-sess", component_id="research-team", session_type="team", session_name=f"{MARK} team")
    team_run = make_run("alice", session=team_session, run_id="alice-team-run", run_type="team", component_id="research-team", status="PAUSED",
                        run_data={"status": "PAUSED", "team_id": "research-team", "content": MARK})
    make_run("alice", session=team_session, run_id="alice-member-run", component_id="researcher", status="COMPLETED", parent_run_id=team_run.pk,
             run_data={"agent_id": "researcher", "content": MARK, "parent_run_id": team_run.pk})
    flow_session = make_session("alice", session_id="alice-flow-sess", component_id="review-flow", session_type="workflow", session_name=f"{MARK} flow")
    flow_run = make_run("alice", session=flow_session, run_id="alice-flow-run", run_type="workflow", component_id="review-flow", status="PAUSED",
                        run_data={"status": "PAUSED", "workflow_id": "review-flow", "content": MARK})
    approval = make_approval("alice", run=paused, id="alice-approval", tool_args={"note": MARK})
    trace = _alice_trace(run)
    schedule = make_schedule("alice", id="alice-schedule", name=f"{MARK} daily", payload={"message": f"{MARK} report"})
    schedule_run = make_schedule_run("alice", schedule=schedule, id="alice-schedule-run", status="success", error=MARK)
    content, private_base = _alice_knowledge()
    eval_run = make_eval_run("alice", run_id="alice-eval", name=f"{MARK} eval", eval_input={"input": MARK, "expected_tool_calls": ["add"]})
    return {
        "eval_run_id": eval_run.pk,
        "trace_id": trace.pk, "schedule_id": schedule.pk, "schedule_run_id": schedule_run.pk,
        "content_id": content.pk, "private_base_id": private_base.pk,
        "session_id": session.pk, "run_id": run.pk, "paused_run_id": paused.pk, "memory_id": memory.pk, "learning_id": learning.pk, "service_account_id": str(robot.pk),
        "team_session_id": team_session.pk, "team_run_id": team_run.pk, "approval_id": approval.pk,
        "workflow_session_id": flow_session.pk, "workflow_run_id": flow_run.pk,
    }


def _alice_trace(run):
    """The trace of alice's run: a root span and a tool span, each carrying the marker."""
    from django.utils import timezone

    from traces.models import Span, Trace

    now = timezone.now()
    trace = Trace.objects.create(
        trace_id="a1" * 16, user_id="alice", run_id=run.pk, session_id=run.session_id, name="Agent.run", start_time=now, end_time=now,
        total_spans=2, input=f"{MARK} question", output=f"{MARK} answer", agent_id="assistant", created_at=now,
    )
    Span.objects.create(user_id="alice", trace=trace, span_id="b1" * 8, name="Agent.run", span_type="AGENT", start_time=now, end_time=now,
                        run_id=run.pk, attributes={"input.value": MARK})
    Span.objects.create(user_id="alice", trace=trace, span_id="c1" * 8, parent_span_id="b1" * 8, name="add", span_type="TOOL",
                        start_time=now, end_time=now, run_id=run.pk, attributes={"tool.parameters": MARK})
    return trace


def _alice_knowledge():
    """Alice's document in the shared default base (a metadata key carries the marker: /config's
    filter keys must not show it to others), and a base of her own."""
    from django.conf import settings

    from knowledge.models import Content, SourceType
    from knowledge.services import base_get_or_create

    shared = base_get_or_create(name=settings.KNOWLEDGE_DEFAULT_BASE)
    private = base_get_or_create(name=f"{MARK} base", user_id="alice")
    content = Content.objects.create(
        user_id="alice", base=shared, name=f"{MARK} notes", source_type=SourceType.TEXT, data=MARK.encode(), size=len(MARK),
        metadata={MARK: "yes"}, status="completed",
    )
    return content, private


def snapshot() -> dict[str, list]:
    """Every owned row, to prove a refused request changed nothing."""
    from core.tenancy import owned_models

    return {model.__name__: sorted(map(repr, model.all_users.values_list())) for model in owned_models()}
