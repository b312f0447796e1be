"""What `make run` serves out of the box (the seeded demo agent, AGENT_MODULES=agents.demo, the
offline model) shows every feature the README advertises: the chat's default agent answers from
the user's own documents with sources, a team member's tool asks for confirmation, a tool waits
for an operator's approval, and a workflow runs a parallel step then waits for a human review.
The README's examples that name the demo's components work as written."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command

from agents.services.definitions import workflow_definition_create
from approvals.models import Approval
from tests.knowledge.conftest import ingest
from tests.security.conftest import USER_SCOPES, auth, jwt_server, token  # noqa: F401 (jwt_server: a fixture)

pytestmark = pytest.mark.django_db(transaction=True)

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()
TEA = "Green tea is steeped at eighty degrees for two minutes; black tea takes boiling water."


@pytest.fixture
def make_run(settings, offline_demo, jwt_server):
    """The components `make run` serves without a key: bootstrap's seeds plus agents.demo."""
    settings.AGENT_MODULES = ["agents.demo"]
    settings.EMBEDDED_WORKER = False
    call_command("bootstrap", stdout=open("/dev/null", "w"))


def run(client, path: str, message: str, user: str = "alice", **fields) -> dict:
    response = client.post(path, {"message": message, "stream": "false", **fields}, **auth(token(user)))
    assert response.status_code == 200, response.content
    return response.json()


def test_the_chats_default_agent_answers_from_the_users_documents_with_sources(client, make_run):
    agents = client.get("/agents", **auth(token("alice"))).json()
    # The chat selects the first agent listed: the docs agent, which searches My documents.
    assert agents[0]["id"] == "demo-docs"
    uploaded = client.post("/knowledge/content", {"text_content": TEA, "name": "tea notes"}, **auth(token("alice")))
    assert uploaded.status_code == 202, uploaded.content
    assert ingest() == ["COMPLETED"]

    body = run(client, "/agents/demo-docs/runs", "How hot should the water be for green tea?")
    assert body["status"] == "COMPLETED"
    assert '"tea notes": Green tea is steeped at eighty degrees' in body["content"]
    (search,) = body["references"]
    assert search["references"][0]["name"] == "tea notes"
    assert search["references"][0]["content_id"] == uploaded.json()["id"]
    # Another user's question never finds it; the handbook still answers without any upload.
    bob = run(client, "/agents/demo-docs/runs", "How hot should the water be for green tea?", user="bob")
    assert "eighty degrees" not in json.dumps(bob)
    handbook = run(client, "/agents/demo-docs/runs", "How do schedules fire?", user="bob")
    assert '"Schedules": Schedules fire once' in handbook["content"]


def test_a_demo_team_members_email_asks_the_user_to_confirm(client, make_run):
    message = 'Ask the Writer to email Bob.\n/call send_email {"to": "bob@example.com", "subject": "Hi"}'
    body = run(client, "/teams/demo-team/runs", message)
    assert body["status"] == "PAUSED", body
    (requirement,) = body["requirements"]
    assert requirement["member_agent_id"] == "demo-writer"
    assert requirement["tool_execution"]["tool_name"] == "send_email"
    requirement["confirmation"] = True
    done = client.post(
        f"/teams/demo-team/runs/{body['run_id']}/continue",
        {"requirements": json.dumps([requirement]), "session_id": body["session_id"], "stream": "false"},
        **auth(token("alice")),
    ).json()
    assert done["status"] == "COMPLETED", done
    assert "Email to bob@example.com with subject 'Hi' was queued" in done["content"]


def test_the_demo_agents_refund_waits_for_an_operator(client, make_run):
    body = run(client, "/agents/demo/runs", '/call issue_refund {"order_id": "A-1001", "amount": 40}')
    assert body["status"] == "PAUSED", body
    (tool,) = body["tools"]
    assert (tool["tool_name"], tool["approval_type"]) == ("issue_refund", "required")
    approval = Approval.objects.for_user("alice").get(pk=tool["approval_id"])
    assert approval.status == "pending"
    refused = client.post(
        f"/agents/demo/runs/{body['run_id']}/continue",
        {"session_id": body["session_id"], "stream": "false", "tools": json.dumps([dict(tool, confirmed=True)])},
        **auth(token("alice", [scope for scope in USER_SCOPES if scope != "approvals:write"])),
    )
    assert refused.status_code == 403  # the user cannot decide it: an operator does


def test_the_demo_workflow_runs_a_parallel_step_then_waits_for_review(client, make_run):
    assert "demo-workflow" in {w["id"] for w in client.get("/workflows", **auth(token("alice"))).json()}
    body = run(client, "/workflows/demo-workflow/runs", "Brief me on background jobs")
    assert body["status"] == "PAUSED", body
    (requirement,) = body["step_requirements"]
    assert requirement["step_name"] == "publish" and requirement["requires_confirmation"]
    done = {result["step_name"]: result for result in body["step_results"]}
    assert {"gather", "combine"} <= set(done)
    assert done["gather"]["step_type"] == "Parallel"
    assert {"research", "handbook"} <= {step["step_name"] for step in done["gather"]["steps"]}


def test_the_demo_agent_signs_off_once_an_operator_ticks_the_demo_post_hook(client, make_run):
    from agents.models import AgentDefinition
    from agents.services.definitions import draft_for, publish_draft

    definition = AgentDefinition.objects.get(agent_id="demo")
    draft = draft_for(definition)
    draft.post_hooks = ["sign_off"]
    draft.full_clean()
    draft.save(update_fields=["post_hooks"])
    publish_draft(definition)
    body = run(client, "/agents/demo/runs", "Hello")
    assert body["content"].endswith("— signed off by the demo post-hook")


def test_the_demo_factory_is_built_from_its_factory_input(client, make_run):
    body = run(client, "/agents/demo-planner/runs", "/call home_city {}", factory_input=json.dumps({"home_city": "Lisbon"}))
    assert body["tools"][0]["result"] == "alice start(s) from Lisbon"
    missing = client.post("/agents/demo-planner/runs", {"message": "hi", "stream": "false"}, **auth(token("alice")))
    assert missing.status_code == 400


def test_the_demo_components_offer_quick_prompts_in_the_config(client, make_run):
    prompts = client.get("/config", **auth(token("alice"))).json()["chat"]["quick_prompts"]
    assert prompts["demo-workflow"] == ["Brief me on background jobs", "Brief me on background jobs, and double-check it"]
    assert {"demo-docs", "demo", "demo-team"} <= set(prompts)


def test_the_demo_workflow_asks_which_fact_to_double_check_inside_its_condition(client, make_run):
    """The README's message for a review nested in a container: the run pauses inside the
    Condition with the step's form, and goes on from there to the top-level review."""
    body = run(client, "/workflows/demo-workflow/runs", "Brief me on background jobs, and double-check it", session_id="dc-1")
    assert (body["status"], body["paused_step_name"], body["paused_step_index"]) == ("PAUSED", "fact check", 2), body
    (requirement,) = body["step_requirements"]
    assert (requirement["user_input_message"], [f["name"] for f in requirement["user_input_schema"]]) == ("Which fact should be double-checked?", ["fact"])
    answer = {**requirement, "user_input": {"fact": "the reaper's interval"}}
    url = f"/workflows/demo-workflow/runs/{body['run_id']}/continue"
    form = {"step_requirements": json.dumps([answer]), "session_id": "dc-1", "stream": "false"}
    confirm = client.post(url, form, **auth(token("alice"))).json()
    assert (confirm["status"], confirm["paused_step_name"]) == ("PAUSED", "publish"), confirm
    publish = {**confirm["step_requirements"][-1], "confirmed": True}
    done = client.post(url, {**form, "step_requirements": json.dumps([publish])}, **auth(token("alice"))).json()
    assert done["status"] == "COMPLETED", done
    assert done["content"].startswith("Published (demo: nothing left the server)")
    assert done["content"].endswith("Double-checked (demo: noted for the editor): the reaper's interval")



def test_a_second_pause_continues_with_the_runs_whole_list_of_requirements_sent_back(client, make_run):
    """As Agno's clients continue: the run's step_requirements as it stands (the answered fact
    check, then the active publish review), the last one answered. The resolved history before
    it is not an unknown step (it was a 400)."""
    body = run(client, "/workflows/demo-workflow/runs", "Brief me on background jobs, and double-check it", session_id="dc-2")
    url = f"/workflows/demo-workflow/runs/{body['run_id']}/continue"
    form = {"session_id": "dc-2", "stream": "false"}
    answer = {**body["step_requirements"][0], "user_input": {"fact": "the lease"}}
    confirm = client.post(url, {**form, "step_requirements": json.dumps([answer])}, **auth(token("alice"))).json()
    assert [r["step_name"] for r in confirm["step_requirements"]] == ["fact check", "publish"], confirm
    history, active = confirm["step_requirements"]
    done = client.post(url, {**form, "step_requirements": json.dumps([history, {**active, "confirmed": True}])}, **auth(token("alice")))
    assert done.status_code == 200, done.content
    assert (done.json()["status"], done.json()["content"].startswith("Published (demo: nothing left the server)")) == ("COMPLETED", True)

def test_the_readmes_composer_json_and_schedule_name_the_seeded_agent(client, make_run):
    block = re.search(r"```json\n(\[\{\"type\": \"Parallel\".*?)\n```", README, re.S)
    assert block, "the README's composer example"
    workflow_definition_create(workflow_id="readme-flow", name="README flow", steps=json.loads(block.group(1)))

    example = re.search(r"curl -X POST http://127.0.0.1:7777/schedules .*?-d '(\{.*?\})'", README, re.S)
    assert example, "the README's schedules example"
    created = client.post("/schedules", example.group(1), content_type="application/json", **auth(token("alice")))
    assert created.status_code == 201, created.content
    assert django_settings.AGENT_MODULES == ["agents.demo"]


def test_the_learning_agent_learns_about_the_user_and_remembers_it_in_a_new_chat(client, make_run):
    from learnings.models import Learning

    run(client, "/agents/demo-learner/runs", "Hi, my name is Ada")
    answer = run(client, "/agents/demo-learner/runs", "What do you know about me?")  # a new session
    assert "I remember 1 thing about you: User's name is Ada." in answer["content"]
    mine = client.get("/learnings", {"learning_type": "user_memory"}, **auth(token("alice", ["learnings:read"]))).json()
    assert [row["learning_id"] for row in mine["data"]] == ["memories_alice"]
    assert client.get("/learnings", **auth(token("bob", ["learnings:read"]))).json()["data"] == []
    assert Learning.objects.for_user("alice").get(pk="memories_alice").content["memories"][0]["content"] == "User's name is Ada"
    assert Learning.objects.for_user("alice").get(pk="user_profile_alice").content == {"name": "Ada", "user_id": "alice"}


def test_the_readmes_eval_example_passes_on_the_demo_agent(client, make_run):
    example = re.search(r"curl -X POST localhost:7777/eval-runs .*?-d '(\{.*?\})'", README, re.S)
    assert example, "the README's evals example"
    accepted = client.post("/eval-runs?background=true", example.group(1), content_type="application/json", **auth(token("alice")))
    assert accepted.status_code == 202, accepted.content
    assert ingest() == ["COMPLETED"]
    done = client.get(f"/eval-runs/{accepted.json()['id']}", **auth(token("alice"))).json()
    assert (done["status"], done["score"], done["eval_data"]["eval_status"], done["eval_data"]["passed_tool_calls"]) == ("completed", 10.0, "PASSED", ["add"]), done
