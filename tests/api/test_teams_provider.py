"""A broadcast team over the OpenAI-compatible fake server: the leader's tool call sends the task
to both members at once, their answers go back to the leader as one tool result, and a member
whose provider fails is reported to the leader as failed, never swallowed."""
from __future__ import annotations

import httpx
import pytest

from sessions.models import Run
from tests.fakes._base import Call, Failure, Reply

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def provider_team(settings):
    settings.AGENT_MODULES = [*settings.AGENT_MODULES, "tests.api.provider_teams"]


def run_team(base: str, message: str) -> dict:
    response = httpx.post(f"{base}/teams/openai-team/runs", data={"message": message, "stream": "false", "user_id": "alice"}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def test_broadcast_sends_the_task_to_both_members_and_the_leader_synthesises(live_api: str, fake_openai) -> None:
    fake_openai.push(Reply(tool_calls=[Call("delegate_task_to_members", {"task": "judge the plan"})]))
    fake_openai.push(Reply(text="Looks sound."))  # whichever member asks first
    fake_openai.push(Reply(text="Looks sound."))
    fake_openai.push(Reply(text="Both members approve of the plan."))
    body = run_team(live_api, "What do you think of the plan?")
    assert (body["status"], body["content"]) == ("COMPLETED", "Both members approve of the plan.")
    assert sorted(member["agent_id"] for member in body["member_responses"]) == ["analyst", "critic"]
    # The members got the leader's task; the leader got both answers as one tool result.
    member_asks = [request.messages[-1]["content"] for request in fake_openai.requests[1:3]]
    assert member_asks == ["judge the plan", "judge the plan"]
    tool_result = next(m for m in fake_openai.requests[3].messages if m["role"] == "tool")["content"]
    assert tool_result == "Agent Analyst: Looks sound.\nAgent Critic: Looks sound."
    # The leader's system message lists the members with their roles.
    system = fake_openai.requests[0].messages[0]["content"]
    assert "- member_id: analyst | name: Analyst | role: Analyses" in system
    assert Run.objects.for_user("alice").filter(parent_run_id=body["run_id"]).count() == 2


def test_a_member_whose_provider_fails_is_reported_to_the_leader(live_api: str, fake_openai) -> None:
    fake_openai.push(Reply(tool_calls=[Call("delegate_task_to_members", {"task": "judge it"})]))
    fake_openai.push(Failure(status=401, message="bad key"))
    fake_openai.push(Failure(status=401, message="bad key"))
    fake_openai.push(Reply(text="The members could not answer."))
    body = run_team(live_api, "Judge it")
    assert (body["status"], body["content"]) == ("COMPLETED", "The members could not answer.")
    assert {member["status"] for member in body["member_responses"]} == {"ERROR"}
    [call] = body["tools"]
    assert call["tool_call_error"] is True and "Agent Analyst: Member Analyst failed:" in call["result"]
    assert set(Run.objects.for_user("alice").filter(parent_run_id=body["run_id"]).values_list("status", flat=True)) == {"ERROR"}
