"""A HumanReview nested in containers, end to end: a workflow composed in the admin (stored,
built again from the database for every request, as after a restart) pauses at a step inside
Steps, a Loop's Condition and a Parallel, and each continue over the API goes on from exactly
that step; the paused state is the stored run's alone."""
from __future__ import annotations

import json

import pytest

from agents.models import WorkflowDefinition
from agents.services.definitions import workflow_definition_create
from sessions.models import Run
from tests.agents.conftest import wait_for
from tests.agents.test_db_workflows import RUNNER, run_form
from tests.security.conftest import auth, token

NESTED = [
    {"type": "Step", "name": "start", "executor_ref": "exclaim"},
    {"type": "Steps", "name": "prepare", "steps": [
        {"type": "Step", "name": "loud", "executor_ref": "shout"},
        {"type": "Step", "name": "confirm", "executor_ref": "exclaim",
         "human_review": {"requires_confirmation": True, "confirmation_message": "Exclaim again?"}},
    ]},
    {"type": "Loop", "name": "rounds", "max_iterations": 1, "steps": [
        {"type": "Condition", "name": "gate", "evaluator": True, "steps": [
            {"type": "Step", "name": "tone", "executor_ref": "exclaim",
             "human_review": {"requires_user_input": True, "user_input_message": "Which tone?",
                              "user_input_schema": [{"name": "tone", "field_type": "str"}]}},
        ]},
    ]},
    {"type": "Parallel", "name": "both", "steps": [
        {"type": "Step", "name": "left", "executor_ref": "shout"},
        {"type": "Step", "name": "right", "executor_ref": "exclaim", "human_review": {"requires_output_review": True}},
    ]},
]


@pytest.fixture
def nested(db) -> WorkflowDefinition:
    return workflow_definition_create(workflow_id="nested", name="Nested", steps=NESTED)


def continue_form(client, run: dict, requirement: dict, *, headers: dict[str, str] | None = None, **form):
    return client.post(f"/workflows/nested/runs/{run['run_id']}/continue", {
        "step_requirements": json.dumps([requirement]), "session_id": run["session_id"], "stream": "false", **form,
    }, **(headers or {}))


def stored(run_id: str, user_id: str = "alice") -> dict:
    return Run.objects.for_user(user_id).get(pk=run_id).run_data


@pytest.mark.django_db(transaction=True)
def test_each_nested_review_pauses_there_and_the_continue_goes_on_from_it(client, nested) -> None:
    paused = run_form(client, "nested", "hi", session_id="n-1", user_id="alice").json()
    assert (paused["status"], paused["paused_step_index"], paused["paused_step_name"]) == ("PAUSED", 1, "confirm"), paused
    requirement = paused["step_requirements"][-1]
    assert (requirement["step_type"], requirement["confirmation_message"], requirement["step_input"]["previous_step_content"]) == ("Step", "Exclaim again?", "HI!")
    frames = stored(paused["run_id"])["paused_frames"]
    assert [(frame["position"], [o["content"] for o in frame["outputs"]]) for frame in frames] == [(1, ["HI!"])]

    second = continue_form(client, paused, {**requirement, "confirmed": True}, user_id="alice").json()
    assert (second["status"], second["paused_step_index"], second["paused_step_name"]) == ("PAUSED", 2, "tone"), second
    assert second["step_requirements"][-1]["user_input_message"] == "Which tone?"
    prepare = second["step_results"][1]
    assert [(s["step_name"], s["content"]) for s in prepare["steps"]] == [("loud", "HI!"), ("confirm", "HI!!")]
    assert [frame.get("iteration") for frame in stored(second["run_id"])["paused_frames"]] == [1, None]

    refused = continue_form(client, second, second["step_requirements"][-1], user_id="alice")
    assert (refused.status_code, refused.json()["detail"]) == (400, "Cannot continue run - step 'tone' needs user input: ['tone']")
    third = continue_form(client, second, {**second["step_requirements"][-1], "user_input": {"tone": "warm"}}, user_id="alice").json()
    assert (third["status"], third["paused_step_index"], third["paused_step_name"]) == ("PAUSED", 3, "right"), third
    assert third["step_requirements"][-1]["requires_output_review"] is True
    [frame] = stored(third["run_id"])["paused_frames"]
    assert (frame["position"], sorted(frame["done"]), frame["paused"][0]["content"]) == (1, ["0"], "Loop rounds completed 1 iterations with 1 total steps!")

    done = continue_form(client, third, {**third["step_requirements"][-1], "confirmed": True, "edited_output": "fine"}, user_id="alice").json()
    assert done["status"] == "COMPLETED", done
    [start, prepare, rounds, both] = done["step_results"]
    assert start["content"] == "hi!"
    assert [s["content"] for s in rounds["steps"][0]["steps"]] == ["Steps prepare completed with 2 results!"]
    assert [(s["step_name"], s["content"]) for s in both["steps"]] == [("left", "LOOP ROUNDS COMPLETED 1 ITERATIONS WITH 1 TOTAL STEPS"), ("right", "fine")]
    assert [r["step_name"] for r in done["step_requirements"]] == ["confirm", "tone", "right"]
    assert "paused_frames" not in stored(done["run_id"])
    assert Run.objects.for_user("alice").filter(session_id="n-1", parent_run_id__isnull=True).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_nested_pause_is_continued_only_by_its_owner_with_the_run_scope(client, jwt_server, nested) -> None:
    alice, bob = auth(token("alice", RUNNER)), auth(token("bob", RUNNER))
    paused = run_form(client, "nested", "mine", session_id="n-iso", headers=alice).json()
    requirement = {**paused["step_requirements"][-1], "confirmed": True}
    assert continue_form(client, paused, requirement, headers=bob).status_code == 404
    reader = auth(token("alice", ["workflows:read", "sessions:read"]))
    assert continue_form(client, paused, requirement, headers=reader).status_code == 403
    assert stored(paused["run_id"])["status"] == "PAUSED"
    assert continue_form(client, paused, requirement, headers=alice).json()["paused_step_name"] == "tone"


@pytest.mark.django_db(transaction=True)
def test_a_background_run_paused_in_a_worker_continues_in_another_job(live_api, nested, worker) -> None:
    import httpx

    worker()
    accepted = httpx.post(f"{live_api}/workflows/nested/runs", data={
        "message": "later", "background": "true", "stream": "false", "session_id": "n-bg", "user_id": "alice",
    }, timeout=30)
    assert accepted.status_code == 202, accepted.text
    run_id = accepted.json()["run_id"]
    paused = wait_for(lambda: Run.objects.for_user("alice").filter(pk=run_id, status="PAUSED").first()).run_data
    assert paused["paused_step_name"] == "confirm"
    requirement = {**paused["step_requirements"][-1], "confirmed": True}
    again = httpx.post(f"{live_api}/workflows/nested/runs/{run_id}/continue", data={
        "step_requirements": json.dumps([requirement]), "session_id": "n-bg", "user_id": "alice", "background": "true", "stream": "false",
    }, timeout=30)
    assert again.status_code == 202, again.text
    wait_for(lambda: Run.objects.for_user("alice").get(pk=run_id).run_data.get("paused_step_name") == "tone")
    assert [s["step_name"] for s in Run.objects.for_user("alice").get(pk=run_id).run_data["step_results"][1]["steps"]] == ["loud", "confirm"]
