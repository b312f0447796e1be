"""Workflows composed in the admin: a step graph of live agents, teams and registered functions,
validated, versioned, draft then published; a published one is served by every /workflows route
as a code workflow is, and a paused run goes on with the version it paused in."""
from __future__ import annotations

import json
import time

import httpx
import pytest
from django.core.exceptions import ValidationError

from agents.models import AgentDefinition, WorkflowDefinition, WorkflowVersion
from agents.registry import code_functions, workflow_get, workflow_list, workflow_version_get
from agents.services.definitions import definition_create, draft_for, publish_draft, workflow_definition_create
from sessions.models import Run
from tests.api.sse import parse_sse
from tests.security.conftest import auth, token

ADMIN = ["agent_os:admin"]
RUNNER = ["workflows:read", "workflows:run", "sessions:read"]

FAN_OUT = [
    {"type": "Parallel", "name": "both", "steps": [
        {"type": "Step", "name": "facts", "agent_id": "researcher"},
        {"type": "Step", "name": "team", "team_id": "research-team"},
    ]},
    {"type": "Step", "name": "shout", "executor_ref": "shout"},
]
REVIEWED = [
    {"type": "Step", "name": "publish", "executor_ref": "shout",
     "human_review": {"requires_confirmation": True, "confirmation_message": "Publish it?"}},
]


@pytest.fixture
def fan_out(db) -> WorkflowDefinition:
    """``fan-out``: a database agent and a code team side by side, then the function ``shout``."""
    definition_create(agent_id="researcher", name="Researcher", description="Finds facts", model="offline:demo")
    return workflow_definition_create(workflow_id="fan-out", name="Fan Out", description="Two at once, then shouted", steps=FAN_OUT)


@pytest.fixture
def reviewed(db) -> WorkflowDefinition:
    return workflow_definition_create(workflow_id="reviewed", name="Reviewed", steps=REVIEWED)


def problems(steps) -> list[str]:
    version = WorkflowVersion(definition=WorkflowDefinition(workflow_id="x", name="X"), version=1, steps=steps)
    with pytest.raises(ValidationError) as caught:
        version.full_clean(exclude=["definition"])
    return caught.value.message_dict["steps"]


@pytest.mark.django_db
class TestValidation:
    def test_unknown_agents_teams_and_functions_are_named_with_their_place(self) -> None:
        assert problems([
            {"type": "Step", "agent_id": "ghost"},
            {"type": "Parallel", "steps": [{"type": "Step", "team_id": "no-team"}, {"type": "Step", "executor_ref": "nope"}]},
            {"type": "Loop", "steps": [{"type": "Step", "executor_ref": "shout"}], "end_condition": "never"},
            {"type": "Condition", "evaluator": "maybe", "steps": [{"type": "Step", "executor_ref": "exclaim"}]},
            {"type": "Router", "selector": "pick", "choices": [{"type": "Step", "executor_ref": "shout", "name": "s2"}]},
        ]) == [
            "steps[0].agent_id: No live agent 'ghost'.",
            "steps[1].steps[0].team_id: No live team 'no-team'.",
            "steps[1].steps[1].executor_ref: No registered function 'nope'.",
            "steps[2].end_condition: No registered function 'never'.",
            "steps[3].evaluator: No registered function 'maybe'.",
            "steps[4].selector: No registered function 'pick'.",
        ]

    def test_bad_shapes_and_nesting(self) -> None:
        assert problems({"type": "Step"}) == ["The steps are a non-empty JSON list of step objects."]
        assert problems([]) == ["The steps are a non-empty JSON list of step objects."]
        assert problems(["shout", {"type": "Pipeline"}, {"type": "Step"}, {"type": "Step", "agent_id": "assistant", "executor_ref": "shout"}]) == [
            'steps[0]: A step is a JSON object with a "type" (Step, Steps, Parallel, Loop, Condition, Router), not a string.',
            "steps[1]: Unknown step type 'Pipeline': one of Step, Steps, Parallel, Loop, Condition, Router.",
            "steps[2]: A Step has exactly one of agent_id, team_id or executor_ref.",
            "steps[3]: A Step has exactly one of agent_id, team_id or executor_ref (it has agent_id, executor_ref).",
        ]
        assert problems([{"type": "Parallel", "steps": []}, {"type": "Loop", "steps": [{"type": "Step", "executor_ref": "shout"}], "max_iterations": 0},
                         {"type": "Router", "choices": [{"type": "Step", "executor_ref": "shout"}]}, {"type": "Step", "executor_ref": "exclaim", "colour": "red"}]) == [
            "steps[0].steps: A non-empty list of steps.",
            "steps[1].max_iterations: A whole number from 1 to 100.",
            "steps[2].selector: The name of a registered function.",
            "steps[3]: Step takes no 'colour'. It takes: agent_id, description, executor_ref, human_review, max_retries, name, skip_on_failure, step_id, team_id.",
        ]
        assert problems([{"type": "Step", "name": "a", "executor_ref": "shout"}, {"type": "Steps", "steps": [{"type": "Step", "name": "a", "executor_ref": "exclaim"}]}]) == [
            "steps[1].steps[0]: The step name 'a' is used twice (also at steps[0]): later steps read earlier outputs by name.",
        ]
        assert problems([{"type": "Loop", "steps": [{"type": "Step", "executor_ref": "shout"}], "end_condition": "x > 1", "end_condition_type": "cel"}]) == [
            "steps[0].end_condition_type: Only \"function\" (a registered function's name); 'cel' expressions are not supported.",
        ]

    def test_bad_human_review_fields(self) -> None:
        step = {"type": "Step", "executor_ref": "shout"}
        assert problems([
            {**step, "name": "a", "human_review": {"requires_confirmation": "yes", "on_reject": "shrug", "hitl_timeout": 5}},
            {**step, "name": "b", "human_review": {"requires_iteration_review": True}},
            {**step, "name": "c", "human_review": {"requires_user_input": True, "user_input_schema": [{"name": "n", "field_type": "date"}, {"kind": 1}]}},
            {**step, "name": "d", "human_review": {"timeout": 0, "max_retries": -1, "on_timeout": "later"}},
            {**step, "name": "e", "human_review": {"requires_output_review": True, "requires_iteration_review": False, "on_error": "pause"}},
            {"type": "Parallel", "steps": [{**step, "name": "f", "human_review": {"requires_confirmation": True}}]},
            {"type": "Parallel", "steps": [{**step, "name": "g"}], "human_review": {}},
        ]) == [
            "steps[0].human_review: HumanReview has no 'hitl_timeout'. Its fields: allow_multiple_selections, confirmation_message, iteration_review_message, "
            "max_retries, on_error, on_reject, on_timeout, output_review_message, requires_confirmation, requires_iteration_review, requires_output_review, "
            "requires_user_input, timeout, user_input_message, user_input_schema.",
            "steps[0].human_review.requires_confirmation: true or false.",
            "steps[0].human_review.on_reject: One of skip, cancel, else, retry, not 'shrug'.",
            "steps[1].human_review.requires_iteration_review: Not supported on Step. Supported: requires_confirmation, requires_output_review, requires_user_input.",
            "steps[2].human_review.user_input_schema[0].field_type: One of str, int, float, bool, list, dict, not 'date'.",
            'steps[2].human_review.user_input_schema[1]: A field is an object with a "name" (a string).',
            "steps[3].human_review.on_timeout: One of cancel, skip, approve, not 'later'.",
            "steps[3].human_review.max_retries: A whole number from 0 to 10.",
            "steps[3].human_review.timeout: Seconds, a whole number from 1 to 2592000 (30 days), or null for none.",
            "steps[6]: Parallel takes no 'human_review'. It takes: description, name, step_id, steps.",
        ]

    def test_a_valid_graph_of_every_type_builds_and_nothing_invalid_is_stored(self) -> None:
        every = [
            {"type": "Steps", "name": "prep", "steps": [{"type": "Step", "name": "first", "agent_id": "assistant"}]},
            {"type": "Condition", "name": "facts?", "evaluator": "asks_for_facts", "steps": [{"type": "Step", "name": "look", "team_id": "research-team"}],
             "else_steps": [{"type": "Step", "name": "plain", "executor_ref": "exclaim"}]},
            {"type": "Router", "name": "size", "selector": "by_length", "choices": [
                {"type": "Step", "name": "short", "executor_ref": "shout"}, {"type": "Step", "name": "long", "executor_ref": "exclaim"}]},
            {"type": "Loop", "name": "grow", "max_iterations": 4, "end_condition": "long_enough", "steps": [{"type": "Step", "name": "more", "executor_ref": "exclaim"}]},
            {"type": "Step", "name": "done", "executor_ref": "shout", "human_review": {"requires_user_input": True, "user_input_schema": [{"name": "tone", "field_type": "str"}]}},
        ]
        definition = workflow_definition_create(workflow_id="every", name="Every", steps=every)
        tree = workflow_get("every").template.to_dict()["steps"]
        assert [(step["type"], step["name"]) for step in tree] == [("Steps", "prep"), ("Condition", "facts?"), ("Router", "size"), ("Loop", "grow"), ("Step", "done")]
        assert (tree[1]["evaluator"], tree[2]["selector"], tree[3]["end_condition"], tree[3]["max_iterations"]) == ("asks_for_facts", "by_length", "long_enough", 4)
        assert definition.versions.get(stage="published").steps == every
        with pytest.raises(ValidationError):
            workflow_definition_create(workflow_id="bad", name="Bad", steps=[{"type": "Step", "agent_id": "ghost"}])
        with pytest.raises(ValidationError, match="is the id of a workflow defined in code"):
            workflow_definition_create(workflow_id="draft-flow", name="Shadow", steps=REVIEWED)
        assert list(WorkflowDefinition.objects.values_list("workflow_id", flat=True)) == ["every"]

    def test_registered_functions_are_listed_by_name(self) -> None:
        assert list(code_functions()) == ["shout", "exclaim", "asks_for_facts", "by_length", "long_enough"]


@pytest.mark.django_db
class TestRegistry:
    def test_a_published_workflow_is_listed_after_the_code_ones(self, fan_out) -> None:
        entries = workflow_list()
        assert [entry.workflow_id for entry in entries] == ["draft-flow", "review-flow", "fan-out"]
        entry = entries[-1]
        assert (entry.source, entry.version, entry.stage, entry.is_component) == ("db", 1, "published", True)
        workflow = entry.build("alice")
        assert (workflow.version, [step.name for step in workflow.steps]) == (1, ["both", "shout"])
        assert [inner.agent.id if inner.agent else inner.team.id for inner in workflow.steps[0].steps] == ["researcher", "research-team"]

    def test_a_draft_is_not_served_until_published(self, fan_out) -> None:
        draft = draft_for(fan_out)
        draft.steps = [{"type": "Step", "name": "only", "executor_ref": "exclaim"}]
        draft.save(update_fields=["steps"])
        assert workflow_get("fan-out").version == 1
        assert workflow_get("fan-out", version=2) is None  # a draft answers as a missing version
        assert [step.name for step in workflow_version_get("fan-out", version=2).build(None).steps] == ["only"]
        publish_draft(fan_out)
        assert (workflow_get("fan-out").version, [step.name for step in workflow_get("fan-out").build(None).steps]) == (2, ["only"])
        assert workflow_get("fan-out", version=1).build(None).steps[0].name == "both"  # published versions stay reachable

    def test_a_workflow_whose_agent_has_gone_is_not_offered_and_the_log_says_why(self, fan_out, caplog) -> None:
        AgentDefinition.objects.filter(agent_id="researcher").update(is_active=False)
        assert workflow_get("fan-out") is None
        assert [entry.workflow_id for entry in workflow_list()] == ["draft-flow", "review-flow"]
        assert "steps[0].steps[0].agent_id: No live agent 'researcher'." in caplog.text
        draft = draft_for(fan_out)
        with pytest.raises(ValidationError, match="No live agent 'researcher'"):
            publish_draft(fan_out)
        draft.refresh_from_db()
        assert draft.stage == "draft"

    def test_an_inactive_workflow_is_not_offered(self, fan_out) -> None:
        WorkflowDefinition.objects.filter(pk=fan_out.pk).update(is_active=False)
        assert workflow_get("fan-out") is None and workflow_version_get("fan-out", version=1) is None


def run_form(client, workflow_id: str, message: str, *, headers: dict[str, str] | None = None, **form):
    return client.post(f"/workflows/{workflow_id}/runs", {"message": message, "stream": "false", **form}, **(headers or {}))


@pytest.mark.django_db(transaction=True)
class TestOverTheApi:
    def test_get_workflows_lists_it_and_details_its_steps(self, client, fan_out) -> None:
        listed = client.get("/workflows").json()
        assert [item["id"] for item in listed] == ["draft-flow", "review-flow", "fan-out"]
        assert {key: listed[-1][key] for key in ("name", "description", "is_component", "current_version", "stage")} == {
            "name": "Fan Out", "description": "Two at once, then shouted", "is_component": True, "current_version": 1, "stage": "published",
        }
        detail = client.get("/workflows/fan-out").json()
        [both, shout] = detail["steps"]
        assert (both["type"], both["steps"][0]["agent"]["id"], both["steps"][1]["team"]["id"]) == ("Parallel", "researcher", "research-team")
        assert (shout["type"], shout["executor"]) == ("Step", "shout")
        assert client.get("/workflows/fan-out", {"version": "1"}).json() == detail
        assert client.get("/workflows/fan-out", {"version": "2"}).json() == {"detail": "Workflow not found"}  # v2 is the draft

    def test_a_parallel_of_an_agent_and_a_team_then_a_function_runs_with_child_rows(self, client, fan_out) -> None:
        response = run_form(client, "fan-out", "hello fan", session_id="f-1", user_id="alice")
        assert response.status_code == 200, response.content
        body = response.json()
        assert (body["status"], body["workflow_id"], body["workflow_name"], body["workflow_version"]) == ("COMPLETED", "fan-out", "Fan Out", 1)
        assert body["content"].startswith("## PARALLEL EXECUTION RESULTS\n\n### ✅ SUCCESS: FACTS\n(OFFLINE DEMO) YOU SAID: HELLO FAN")
        assert "### ✅ SUCCESS: TEAM\n" in body["content"]
        children = {row.component_id: row for row in Run.objects.for_user("alice").filter(parent_run_id=body["run_id"])}
        assert {(component_id, row.run_type) for component_id, row in children.items()} == {("researcher", "agent"), ("research-team", "team")}
        polled = client.get(f"/workflows/fan-out/runs/{body['run_id']}", {"session_id": "f-1", "user_id": "alice"}).json()
        assert (polled["status"], polled["content"]) == ("COMPLETED", body["content"])

    def test_a_stream_and_a_background_run(self, live_api, fan_out, worker) -> None:
        streamed = httpx.post(f"{live_api}/workflows/fan-out/runs", data={"message": "stream it", "user_id": "alice"}, timeout=30)
        names = [name for name, _ in parse_sse(streamed.text)]
        assert names[0] == "WorkflowStarted" and names[-1] == "WorkflowCompleted"
        assert names.index("ParallelExecutionStarted") < names.index("ParallelExecutionCompleted") < names.index("StepCompleted", names.index("ParallelExecutionCompleted"))
        assert "TeamRunStarted" in names and "RunStarted" in names
        accepted = httpx.post(f"{live_api}/workflows/fan-out/runs", data={"message": "later", "background": "true", "stream": "false", "session_id": "f-bg", "user_id": "alice"}, timeout=30)
        assert accepted.status_code == 202, accepted.text
        run_id = accepted.json()["run_id"]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            polled = httpx.get(f"{live_api}/workflows/fan-out/runs/{run_id}", params={"session_id": "f-bg"}).json()
            if polled["status"] not in ("PENDING", "RUNNING"):
                break
            time.sleep(0.2)
        assert (polled["status"], polled["workflow_version"]) == ("COMPLETED", 1), polled
        assert Run.objects.for_user("alice").filter(parent_run_id=run_id).count() == 2

    def test_a_review_pauses_and_the_continue_runs_the_version_it_paused_in(self, client, reviewed) -> None:
        paused = run_form(client, "reviewed", "ship it", session_id="r-1", user_id="alice").json()
        assert (paused["status"], paused["workflow_version"]) == ("PAUSED", 1), paused
        [requirement] = paused["step_requirements"]
        assert (requirement["step_name"], requirement["confirmation_message"]) == ("publish", "Publish it?")
        draft = draft_for(reviewed)  # v2 exclaims instead, and asks nothing
        draft.steps = [{"type": "Step", "name": "publish", "executor_ref": "exclaim"}]
        draft.save(update_fields=["steps"])
        publish_draft(reviewed)
        assert run_form(client, "reviewed", "new runs", session_id="r-2", user_id="alice").json()["content"] == "new runs!"
        requirement["confirmed"] = True
        done = client.post(f"/workflows/reviewed/runs/{paused['run_id']}/continue", {
            "step_requirements": json.dumps([requirement]), "session_id": "r-1", "user_id": "alice", "stream": "false",
        })
        assert done.status_code == 200, done.content
        assert (done.json()["status"], done.json()["content"], done.json()["workflow_version"]) == ("COMPLETED", "SHIP IT", 1)

    def test_a_paused_run_continues_as_a_stream(self, live_api, reviewed) -> None:
        paused = httpx.post(f"{live_api}/workflows/reviewed/runs", data={"message": "stream review", "stream": "false", "session_id": "r-s", "user_id": "alice"}, timeout=30).json()
        [requirement] = paused["step_requirements"]
        requirement["confirmed"] = True
        frames = parse_sse(httpx.post(f"{live_api}/workflows/reviewed/runs/{paused['run_id']}/continue",
                                      data={"step_requirements": json.dumps([requirement]), "session_id": "r-s", "user_id": "alice"}, timeout=30).text)
        assert frames[-1][0] == "WorkflowCompleted" and frames[-1][1]["content"] == "STREAM REVIEW"

    def test_a_draft_is_not_found_except_pinned_by_an_admin(self, client, jwt_server, reviewed) -> None:
        draft = draft_for(reviewed)
        draft.steps = [{"type": "Step", "name": "draft-only", "executor_ref": "exclaim"}]
        draft.save(update_fields=["steps"])
        as_user, missing = (run_form(client, "reviewed", "hi", version=str(version), headers=auth(token("alice", RUNNER))) for version in (2, 99))
        assert (as_user.status_code, as_user.json()) == (missing.status_code, missing.json()) == (404, {"detail": "Workflow not found"})
        by_admin = run_form(client, "reviewed", "hi", version="2", headers=auth(token("root", ADMIN)))
        assert (by_admin.status_code, by_admin.json()["content"], by_admin.json()["workflow_version"]) == (200, "hi!", 2)

    def test_isolation_and_scopes_as_for_code_workflows(self, client, jwt_server, reviewed) -> None:
        alice, bob = auth(token("alice", RUNNER)), auth(token("bob", RUNNER))
        paused = run_form(client, "reviewed", "alice's", session_id="iso-1", headers=alice).json()
        assert paused["status"] == "PAUSED"
        url = f"/workflows/reviewed/runs/{paused['run_id']}"
        assert client.get(url, {"session_id": "iso-1"}, **bob).json() == {"detail": "Run not found"}
        assert client.get(url, {"session_id": "iso-1"}, **bob).status_code == 404
        requirement = {**paused["step_requirements"][0], "confirmed": True}
        stolen = client.post(f"{url}/continue", {"step_requirements": json.dumps([requirement]), "session_id": "iso-1", "stream": "false"}, **bob)
        assert stolen.status_code == 404
        listed = client.get("/workflows/reviewed/runs", {"session_id": "iso-1"}, **bob)
        assert (listed.status_code, listed.json()) == (404, {"detail": "Session not found"})
        no_run_scope = run_form(client, "reviewed", "not allowed", headers=auth(token("alice", ["workflows:read"])))
        assert no_run_scope.status_code == 403
        assert client.get("/workflows", **auth(token("alice", ["agents:read"]))).status_code == 403
        done = client.post(f"{url}/continue", {"step_requirements": json.dumps([requirement]), "session_id": "iso-1", "stream": "false"}, **alice)
        assert (done.status_code, done.json()["content"]) == (200, "ALICE'S")


@pytest.mark.django_db(transaction=True)
def test_a_background_run_accepted_before_a_publish_runs_the_version_it_was_accepted_on(reviewed, worker) -> None:
    from django.db import transaction

    from agents.pipeline.runs import RunRequest
    from agents.pipeline.submit import submit_run
    from core.auth import Principal
    from tests.agents.conftest import wait_for

    with transaction.atomic():  # the job reaches a worker on commit: after the publish below
        accepted = submit_run(principal=Principal(user_id="alice", isolated=True, via="session"), component_id="reviewed", kind="workflow",
                              request=RunRequest(message="queued", stream=False), background=True)
        draft = draft_for(reviewed)
        draft.steps = [{"type": "Step", "name": "publish", "executor_ref": "exclaim"}]
        draft.save(update_fields=["steps"])
        publish_draft(reviewed)
    assert accepted.job.payload["version"] == 1
    worker()
    paused = wait_for(lambda: Run.objects.for_user("alice").filter(pk=accepted.job.pk, status="PAUSED").first())
    assert paused.run_data["workflow_version"] == 1  # v1's review, not v2's exclamation


@pytest.mark.django_db
def test_a_definitions_to_dict_is_a_graph_the_admin_takes_back() -> None:
    """The stored shape is Agno's Step.to_dict(): a code workflow's steps, and Agno's own keys
    for settings this runtime lacks at their defaults, build the same workflow."""
    code = workflow_get("review-flow").template.to_dict()["steps"]
    workflow_definition_create(workflow_id="review-copy", name="Review Copy", steps=code)
    assert workflow_get("review-copy").template.to_dict()["steps"] == code
    agno_keys = {"strict_input_validation": False, "add_workflow_history": None, "num_history_runs": 3}
    workflow_definition_create(workflow_id="agno-shape", name="Agno Shape", steps=[{"type": "Step", "name": "s", "executor_ref": "shout", **agno_keys}])
    assert problems([{"type": "Step", "name": "s", "executor_ref": "shout", "strict_input_validation": True}]) == [
        "steps[0].strict_input_validation: Not supported here: only Agno's default (false).",
    ]


@pytest.mark.django_db(transaction=True)
def test_over_the_workflow_socket_it_pauses_and_continues_as_a_code_workflow(live_api, reviewed, worker) -> None:
    from tests.agents.test_workflow_socket import Socket

    worker()
    with Socket(live_api) as socket:
        socket.send(action="start-workflow", workflow_id="reviewed", message="over the socket", user_id="alice", session_id="ws-db")
        paused = socket.until_end()[-1]
        assert paused[0] == "WorkflowPaused", paused
        [requirement] = paused[1]["step_requirements"]
        socket.send(action="continue-workflow", workflow_id="reviewed", run_id=paused[1]["run_id"], session_id="ws-db",
                    step_requirements=[{**requirement, "confirmed": True}])
        done = socket.until_end()
    assert done[-1][0] == "WorkflowCompleted" and done[-1][1]["content"] == "OVER THE SOCKET"
