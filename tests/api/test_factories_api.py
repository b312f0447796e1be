"""Factories through the API: listings say ``is_factory``, each run builds its component (or
its tools) from the run's context and ``factory_input``, and a factory's refusals are 4xx in
the AgentOS error shape."""
from __future__ import annotations

import json

import httpx
import pytest

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def factory_module(settings):
    settings.AGENT_MODULES = [*settings.AGENT_MODULES, "tests.api.factory_agents"]


def run(base: str, path: str, message: str, **fields: str) -> httpx.Response:
    return httpx.post(f"{base}{path}", data={"message": message, "stream": "false", **fields}, timeout=30)


def test_listings_say_which_components_are_factories(live_api: str) -> None:
    agents = {agent["id"]: agent for agent in httpx.get(f"{live_api}/agents", timeout=30).json()}
    assert agents["assistant"]["is_factory"] is False
    assert agents["tenant-tools"]["is_factory"] is True  # its tools are built per run
    whole = agents["tenant-assistant"]
    assert whole["is_factory"] is True and whole["name"] == "Tenant assistant" and whole["description"] == "Built per request"
    assert whole["factory_input_schema"] == whole["input_schema"] == {"type": "object", "properties": {"plan": {"type": "string"}}, "required": ["plan"]}
    assert "model" not in whole  # it has one per request only
    assert httpx.get(f"{live_api}/agents/tenant-assistant", timeout=30).json() == whole

    teams = {team["id"]: team for team in httpx.get(f"{live_api}/teams", timeout=30).json()}
    assert teams["tenant-team"]["is_factory"] is True and teams["research-team"]["is_factory"] is False
    workflows = {flow["id"]: flow for flow in httpx.get(f"{live_api}/workflows", timeout=30).json()}
    assert workflows["tenant-flow"]["is_factory"] is True and workflows["tenant-flow"]["factory_input_schema"]["required"] == ["plan"]
    assert workflows["draft-flow"]["is_factory"] is False

    config = httpx.get(f"{live_api}/config", timeout=30).json()
    summary = next(agent for agent in config["agents"] if agent["id"] == "tenant-assistant")
    assert summary["name"] == "Tenant assistant" and "model" not in summary


def test_a_tool_factory_gives_each_user_their_own_credentials(live_api: str) -> None:
    alice = run(live_api, "/agents/tenant-tools/runs", '/call lookup {"item": "pen"}', user_id="alice").json()
    bob = run(live_api, "/agents/tenant-tools/runs", '/call lookup {"item": "pen"}', user_id="bob").json()
    assert alice["tools"][0]["result"] == "pen looked up with key-alice"
    assert bob["tools"][0]["result"] == "pen looked up with key-bob"
    # Each run is its user's: bob cannot read alice's.
    other = httpx.get(f"{live_api}/agents/tenant-tools/runs/{alice['run_id']}", params={"session_id": alice["session_id"], "user_id": "bob"}, timeout=30)
    assert other.status_code == 404


def test_an_agent_factory_is_built_from_the_request(live_api: str) -> None:
    response = run(live_api, "/agents/tenant-assistant/runs", '/call lookup {"item": "ink"}', user_id="alice", factory_input=json.dumps({"plan": "pro"}))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["agent_id"] == "tenant-assistant" and body["status"] == "COMPLETED"
    assert "Serve a customer on the pro plan." in body["messages"][0]["content"]
    assert body["tools"][0]["result"] == "ink looked up with key-alice"
    stored = httpx.get(f"{live_api}/agents/tenant-assistant/runs/{body['run_id']}", params={"session_id": body["session_id"], "user_id": "alice"}, timeout=30)
    assert stored.status_code == 200 and stored.json()["agent_id"] == "tenant-assistant"


def test_a_factorys_refusals_are_client_errors(live_api: str) -> None:
    missing = run(live_api, "/agents/tenant-assistant/runs", "hi", user_id="alice")
    assert missing.status_code == 400
    assert missing.json() == {"detail": "factory_input is missing plan"}
    refused = run(live_api, "/agents/tenant-assistant/runs", "hi", user_id="mallory", factory_input=json.dumps({"plan": "pro"}))
    assert (refused.status_code, refused.json()) == (403, {"detail": "mallory may not use the tenant assistant"})


def test_team_and_workflow_factories_run_under_their_ids(live_api: str) -> None:
    team = run(live_api, "/teams/tenant-team/runs", '/call lookup {"item": "cup"}', user_id="bob")
    assert team.status_code == 200, team.text
    body = team.json()
    assert body["team_id"] == "tenant-team" and body["member_responses"][0]["tools"][0]["result"] == "cup looked up with key-bob"

    flow = run(
        live_api, "/workflows/tenant-flow/runs", "go", user_id="alice", factory_input=json.dumps({"plan": "free"}),
        session_state=json.dumps({"tier": "gold"}),
    )
    assert flow.status_code == 200, flow.text
    assert flow.json()["workflow_id"] == "tenant-flow"
    assert flow.json()["content"] == "hello alice from session state {'tier': 'gold'}"


def test_a_background_run_builds_the_factory_from_the_input_it_was_given(live_api: str, worker) -> None:
    from sessions.models import Run
    from tests.agents.conftest import wait_for

    accepted = run(live_api, "/agents/tenant-assistant/runs", '/call lookup {"item": "mug"}', user_id="bob",
                   factory_input=json.dumps({"plan": "team"}), background="true")
    assert accepted.status_code == 202, accepted.text
    run_id = accepted.json()["run_id"]
    done = wait_for(lambda: Run.objects.for_user("bob").filter(pk=run_id, status="COMPLETED").first())
    assert "Serve a customer on the team plan." in done.run_data["messages"][0]["content"]
    assert done.run_data["tools"][0]["result"] == "mug looked up with key-bob"


def test_a_background_factory_workflows_branches_are_built_from_its_input(live_api: str, worker) -> None:
    """On the background path each Parallel branch is a job that builds the workflow again: it
    is built from the run's own factory_input, not from the user alone."""
    from sessions.models import Run
    from tests.agents.conftest import wait_for

    accepted = run(live_api, "/workflows/tenant-parallel-flow/runs", "go", user_id="alice", factory_input=json.dumps({"plan": "pro"}), background="true")
    assert accepted.status_code == 202, accepted.text
    run_id = accepted.json()["run_id"]
    done = wait_for(lambda: Run.objects.for_user("alice").filter(pk=run_id, status__in=["COMPLETED", "ERROR"]).first())
    assert (done.status, done.run_data["content"]) == ("COMPLETED", "left for alice on pro | right for alice on pro")


def test_a_paused_factory_run_continues_built_from_the_continues_factory_input(live_api: str) -> None:
    """As AgentOS: a continue builds the factory's component again, from the continue request's
    ``factory_input`` and the run's user and session."""
    paused = run(live_api, "/agents/tenant-assistant/runs", '/call approve_order {"order": "A1"}', user_id="alice",
                 factory_input=json.dumps({"plan": "pro"}), session_id="s-factory").json()
    assert paused["status"] == "PAUSED"
    (pending,) = paused["tools"]
    pending["confirmed"] = True
    url = f"{live_api}/agents/tenant-assistant/runs/{paused['run_id']}/continue"
    form = {"tools": json.dumps([pending]), "session_id": "s-factory", "user_id": "alice", "stream": "false"}

    missing = httpx.post(url, data=form, timeout=30)
    assert (missing.status_code, missing.json()) == (400, {"detail": "factory_input is missing plan"})
    # Another user's continue with the right input finds no such run.
    other = httpx.post(url, data={**form, "user_id": "bob", "factory_input": json.dumps({"plan": "pro"})}, timeout=30)
    assert other.status_code == 404

    done = httpx.post(url, data={**form, "factory_input": json.dumps({"plan": "pro"})}, timeout=30)
    assert done.status_code == 200, done.text
    assert (done.json()["status"], done.json()["tools"][0]["result"]) == ("COMPLETED", "order A1 approved")


def test_a_factory_member_of_an_admin_team_and_step_of_an_admin_workflow_is_built_from_the_runs_context(live_api: str) -> None:
    from agents.services.definitions import team_definition_create, workflow_definition_create

    team_definition_create(team_id="plan-team", name="Plan Team", members=["tenant-assistant"], mode="route")
    workflow_definition_create(workflow_id="plan-flow", name="Plan Flow", steps=[
        {"type": "Steps", "name": "outer", "steps": [{"type": "Step", "name": "serve", "agent_id": "tenant-assistant"}]},
    ])
    delegate = "/call delegate_task_to_member " + json.dumps({"member_id": "tenant-assistant", "task": '/call lookup {"item": "ink"}'})
    team = run(live_api, "/teams/plan-team/runs", delegate, user_id="alice", factory_input=json.dumps({"plan": "gold"}))
    assert team.status_code == 200, team.text
    [member] = team.json()["member_responses"]
    assert member["status"] == "COMPLETED", member
    assert "Serve a customer on the gold plan." in member["messages"][0]["content"]
    assert member["tools"][0]["result"] == "ink looked up with key-alice"

    flow = run(live_api, "/workflows/plan-flow/runs", '/call lookup {"item": "pen"}', user_id="bob", factory_input=json.dumps({"plan": "free"}))
    assert flow.status_code == 200, flow.text
    [step] = flow.json()["step_executor_runs"]
    assert "Serve a customer on the free plan." in step["messages"][0]["content"]
    assert step["tools"][0]["result"] == "pen looked up with key-bob"
