"""The /workflows family over HTTP and through AgentOSClient: catalogue, runs (JSON, SSE,
background), step executor runs stored as child rows, a review paused and continued, poll, list,
cancel and resume."""
from __future__ import annotations

import json
import time

import httpx
import pytest
from agno.client.os import AgentOSClient
from agno.run.base import RunStatus

from sessions.models import Run, Session
from tests.api.sse import parse_sse
from tests.api.test_agents_conformance import run

pytestmark = pytest.mark.django_db(transaction=True)


def post_workflow_run(base: str, workflow_id: str = "draft-flow", **form: str) -> httpx.Response:
    form.setdefault("stream", "false")
    return httpx.post(f"{base}/workflows/{workflow_id}/runs", data=form, timeout=30)


def test_the_catalogue_lists_summaries_and_details_the_steps(live_api: str) -> None:
    listed = httpx.get(f"{live_api}/workflows").json()
    assert [(item["id"], item["name"]) for item in listed] == [("draft-flow", "Draft Flow"), ("review-flow", "Review Flow")]
    assert "steps" not in listed[0]  # the list is of summaries, as AgentOS's
    detail = httpx.get(f"{live_api}/workflows/draft-flow").json()
    [parallel, shout] = detail["steps"]
    assert (parallel["type"], [step["agent"]["id"] for step in parallel["steps"]]) == ("Parallel", ["drafter", "checker"])
    assert (shout["name"], shout["type"], shout["executor"]) == ("shout", "Step", "shout")
    assert httpx.get(f"{live_api}/workflows/nope").json() == {"detail": "Workflow not found"}


def test_a_run_is_one_row_with_its_agent_steps_as_children(live_api: str) -> None:
    response = post_workflow_run(live_api, message="hello flow", session_id="w-1", user_id="alice")
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["status"], body["workflow_id"], body["session_id"]) == ("COMPLETED", "draft-flow", "w-1")
    # The parallel branches' answers, combined in declaration order, then shouted by the function step.
    assert body["content"].startswith("## PARALLEL EXECUTION RESULTS\n\n### ✅ SUCCESS: DRAFT\n(OFFLINE DEMO) YOU SAID: HELLO FLOW")
    assert "### ✅ SUCCESS: CHECK" in body["content"]
    children = {run.component_id: run for run in Run.objects.for_user("alice").filter(parent_run_id=body["run_id"])}
    assert set(children) == {"drafter", "checker"}
    assert {run.run_type for run in children.values()} == {"agent"}
    assert {run.origin for run in children.values()} == {"workflow_step"}
    assert sorted(run["run_id"] for run in body["step_executor_runs"]) == sorted(run.pk for run in children.values())
    session = Session.objects.for_user("alice").get(pk="w-1")
    assert (session.session_type, session.component_id) == ("workflow", "draft-flow")
    listed = httpx.get(f"{live_api}/workflows/draft-flow/runs", params={"session_id": "w-1"}).json()
    assert [run["run_id"] for run in listed] == [body["run_id"]]
    polled = httpx.get(f"{live_api}/workflows/draft-flow/runs/{body['run_id']}", params={"session_id": "w-1"}).json()
    assert (polled["status"], polled["workflow_id"]) == ("COMPLETED", "draft-flow")


def test_a_stream_carries_the_workflow_step_and_executor_events(live_api: str) -> None:
    response = httpx.post(f"{live_api}/workflows/draft-flow/runs", data={"message": "stream it", "user_id": "alice"}, timeout=30)
    names = [name for name, _ in parse_sse(response.text)]
    assert names[0] == "WorkflowStarted" and names[-1] == "WorkflowCompleted"
    assert names.index("ParallelExecutionStarted") < names.index("RunStarted") < names.index("ParallelExecutionCompleted")
    assert names.count("RunCompleted") == 2 and "StepStarted" in names and "StepCompleted" in names


def test_a_review_pauses_and_a_continue_with_step_requirements_finishes_it(live_api: str) -> None:
    paused = post_workflow_run(live_api, "review-flow", message="ship it", session_id="w-r", user_id="alice").json()
    assert paused["status"] == "PAUSED", paused
    [requirement] = paused["step_requirements"]
    url = f"{live_api}/workflows/review-flow/runs/{paused['run_id']}/continue"
    bad = httpx.post(url, data={"step_requirements": "nope", "session_id": "w-r"})
    assert (bad.status_code, bad.json()) == (400, {"detail": "Invalid JSON in step_requirements field"})
    requirement["confirmed"] = True
    done = httpx.post(url, data={"step_requirements": json.dumps([requirement]), "session_id": "w-r", "stream": "false"}, timeout=30)
    assert done.status_code == 200, done.text
    assert (done.json()["status"], done.json()["content"]) == ("COMPLETED", "SHIP IT")
    assert "events" not in paused  # as AgentOS: a non-streamed workflow run keeps only its continuation
    [continued] = done.json()["events"]
    assert (continued["event"], continued["run_id"], continued["step_name"]) == ("StepContinued", paused["run_id"], requirement["step_name"])
    again = httpx.post(url, data={"step_requirements": json.dumps([requirement]), "session_id": "w-r", "stream": "false"})
    assert (again.status_code, again.json()["detail"]) == (409, "run is already completed")
    assert Run.objects.for_user("alice").filter(session_id="w-r").count() == 1


def test_a_background_run_is_polled_to_its_end(live_api: str, worker) -> None:
    accepted = post_workflow_run(live_api, message="later", background="true", session_id="w-bg", user_id="alice")
    assert accepted.status_code == 202, accepted.text
    run_id = accepted.json()["run_id"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        polled = httpx.get(f"{live_api}/workflows/draft-flow/runs/{run_id}", params={"session_id": "w-bg"}).json()
        if polled["status"] not in ("PENDING", "RUNNING"):
            break
        time.sleep(0.2)
    assert polled["status"] == "COMPLETED", polled
    assert Run.objects.for_user("alice").filter(parent_run_id=run_id).count() == 2


def test_cancel_and_resume_answer_as_agentos(live_api: str) -> None:
    body = post_workflow_run(live_api, message="done already", session_id="w-c", user_id="alice").json()
    assert httpx.post(f"{live_api}/workflows/draft-flow/runs/{body['run_id']}/cancel", params={"session_id": "w-c"}).json() == {}
    assert httpx.post(f"{live_api}/workflows/nope/runs/{body['run_id']}/cancel").json() == {"detail": "Workflow not found"}
    frames = parse_sse(httpx.post(f"{live_api}/workflows/draft-flow/runs/{body['run_id']}/resume", data={"session_id": "w-c"}).text)
    names = [name for name, _ in frames]
    assert names[0] == "replay" and names[-1] == "WorkflowCompleted" and "ParallelExecutionStarted" in names


def test_agentos_client_workflow_methods(live_api: str) -> None:
    client = AgentOSClient(base_url=live_api, timeout=30)
    assert [item.id for item in run(client.list_workflows())] == ["draft-flow", "review-flow"]
    detail = client.get_workflow("draft-flow")
    assert (detail.id, len(detail.steps)) == ("draft-flow", 2)
    assert run(client.aget_workflow("review-flow")).id == "review-flow"
    output = run(client.run_workflow("draft-flow", "client flow", session_id="wc-1", user_id="alice"))
    assert (output.status, output.workflow_id) == (RunStatus.completed, "draft-flow")

    async def collect():
        return [event async for event in client.run_workflow_stream("draft-flow", "client stream", user_id="alice")]

    events = run(collect())
    assert type(events[0]).__name__ == "WorkflowStartedEvent" and type(events[-1]).__name__ == "WorkflowCompletedEvent"
    paused = run(client.run_workflow("review-flow", "client review", session_id="wc-r", user_id="alice"))
    assert paused.status == RunStatus.paused
    requirements = [{**requirement.to_dict(), "confirmed": True} for requirement in paused.step_requirements]
    done = run(client.continue_workflow_run("review-flow", paused.run_id, requirements, session_id="wc-r", user_id="alice"))
    assert (done.status, done.content) == (RunStatus.completed, "CLIENT REVIEW")
    paused = run(client.run_workflow("review-flow", "streamed review", session_id="wc-s", user_id="alice"))
    requirements = [{**requirement.to_dict(), "confirmed": True} for requirement in paused.step_requirements]

    async def continued():
        return [event async for event in client.continue_workflow_run_stream("review-flow", paused.run_id, requirements, session_id="wc-s", user_id="alice")]

    assert type(run(continued())[-1]).__name__ == "WorkflowCompletedEvent"
    assert run(client.cancel_workflow_run("draft-flow", "some-run-id")) is None
