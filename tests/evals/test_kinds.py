"""Each eval kind through the real run pipeline and the job queue: the evaluated runs are real
runs of the tool-calling offline model or the local OpenAI-compatible server, and the judge is
that server, scripted (a judge that disagrees, a missing tool call, a performance run's
percentiles)."""
from __future__ import annotations

import json
import statistics

import pytest

from evals import kinds
from sessions.models import Run
from tests.fakes.openai_server import Call, Reply

pytestmark = pytest.mark.django_db(transaction=True)

ADD = '/call add {"a": 2, "b": 3}'


def post_eval(client, **body):
    return client.post("/eval-runs", data=json.dumps(body), content_type="application/json")


def verdict(score: int, reason: str) -> Reply:
    return Reply(text=json.dumps({"accuracy_score": score, "accuracy_reason": reason}))


def test_a_judge_that_disagrees_scores_low_and_its_reasoning_is_stored(client, worker, judge) -> None:
    judge.push(verdict(2, "The agent added 2 and 3 and got 5; the expected answer is 6."))
    response = post_eval(client, eval_type="accuracy", input=ADD, agent_id="assistant", expected_output="6", name="sums")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "completed" and body["score"] == 2.0
    assert body["eval_data"] == {
        "run_id": body["id"],  # AgentOS's AccuracyResult names its run
        "results": [{
            "input": ADD, "output": 'Tool add returned: {"operation": "addition", "result": 5.0}', "expected_output": "6",
            "score": 2, "reason": "The agent added 2 and 3 and got 5; the expected answer is 6.",
        }],
        "avg_score": 2, "mean_score": 2, "min_score": 2, "max_score": 2, "std_dev_score": 0,
    }
    assert (body["agent_id"], body["model_id"], body["model_provider"], body["evaluated_component_name"]) == ("assistant", "demo", "Offline", "Assistant")
    assert body["eval_input"] == {"input": ADD, "expected_output": "6", "num_iterations": 1}
    # The judge saw the question, the expected answer and the agent's answer.
    sent = json.dumps(judge.requests[-1].body["messages"])
    assert "<expected_output>\\n6\\n</expected_output>" in sent and "Tool add returned" in sent
    # The evaluated run is a real run of the agent, in a session of its own, owned as the eval.
    run = Run.objects.unscoped("test").get(session_id=f"eval_{body['id']}_1")
    assert (run.component_id, run.status) == ("assistant", "COMPLETED")
    # Marked as the eval's: out of the chat's conversation list.
    assert (run.origin, run.session.origin) == ("eval", "eval")


def test_accuracy_over_iterations_averages_the_judges_scores(client, worker, judge) -> None:
    judge.push(verdict(9, "right"), verdict(6, "partly"))
    body = post_eval(client, eval_type="accuracy", input="hello", agent_id="assistant", expected_output="hi", num_iterations=2).json()
    assert [r["score"] for r in body["eval_data"]["results"]] == [9, 6]
    assert (body["eval_data"]["avg_score"], body["eval_data"]["min_score"], body["eval_data"]["max_score"]) == (7.5, 6, 9)
    assert body["eval_data"]["std_dev_score"] == pytest.approx(statistics.stdev([9, 6]))


def test_a_judge_answer_that_is_not_a_verdict_fails_the_eval_saying_so(client, worker, judge) -> None:
    judge.push(Reply(text="I think it is fine"))
    body = post_eval(client, eval_type="accuracy", input="hello", agent_id="assistant", expected_output="hi").json()
    assert body["status"] == "failed" and body["eval_data"] == {}
    assert "judge" in body["error"]


def test_accuracy_against_the_openai_agent_that_calls_a_tool(client, worker, judge) -> None:
    judge.push(
        Reply(tool_calls=[Call("multiply", {"a": 6, "b": 7})]), Reply(text="6 times 7 is 42"),  # the agent's run
        verdict(10, "Matches exactly."),  # the judge
    )
    body = post_eval(client, eval_type="accuracy", input="What is 6 times 7?", agent_id="openai-agent", expected_output="42").json()
    assert body["eval_data"]["results"][0]["output"] == "6 times 7 is 42" and body["score"] == 10.0
    assert (body["model_id"], body["model_provider"]) == ("gpt-4o-mini", "OpenAI")


def test_reliability_names_the_missing_tool_call(client, worker) -> None:
    body = post_eval(client, eval_type="reliability", input=ADD, agent_id="assistant", expected_tool_calls=["add", "multiply"]).json()
    assert body["eval_data"] == {
        "run_id": body["id"], "eval_status": "FAILED", "failed_tool_calls": [], "passed_tool_calls": ["add"], "additional_tool_calls": [],
        "missing_tool_calls": ["multiply"], "failed_argument_checks": [], "passed_argument_checks": [],
    }
    assert body["score"] == 0.0


def test_reliability_checks_arguments_and_additional_calls(client, worker, fake_openai) -> None:
    fake_openai.push(Reply(tool_calls=[Call("add", {"a": 2, "b": 3}), Call("multiply", {"a": 5, "b": 2})]), Reply(text="10"))
    body = post_eval(
        client, eval_type="reliability", input="(2+3)*2?", agent_id="openai-agent", expected_tool_calls=["add"],
        allow_additional_tool_calls=True, expected_tool_call_arguments={"add": {"a": 2, "b": 3}},
    ).json()
    assert body["eval_data"]["eval_status"] == "PASSED"
    assert (body["eval_data"]["additional_tool_calls"], body["eval_data"]["passed_argument_checks"]) == (["multiply"], ["add"])
    strict = post_eval(client, eval_type="reliability", input=ADD, agent_id="assistant", expected_tool_calls=["add"], expected_tool_call_arguments={"add": [{"a": 2}, {"a": 9}]}).json()
    assert (strict["eval_data"]["eval_status"], strict["eval_data"]["failed_argument_checks"]) == ("FAILED", ["add"])


def test_reliability_in_strict_mode_fails_an_unexpected_call(client, worker) -> None:
    body = post_eval(client, eval_type="reliability", input=ADD + "\n/call multiply {\"a\": 1, \"b\": 2}", agent_id="assistant", expected_tool_calls=["add"]).json()
    assert (body["eval_data"]["eval_status"], body["eval_data"]["failed_tool_calls"]) == ("FAILED", ["multiply"])


def test_a_performance_run_measures_each_run_and_its_percentiles(client, worker) -> None:
    body = post_eval(client, eval_type="performance", input="hello", agent_id="assistant", num_iterations=4, warmup_runs=1).json()
    data = body["eval_data"]
    assert body["status"] == "completed" and body["score"] is None
    assert len(data["run_times"]) == 4 and len(data["memory_usages"]) == 4
    assert all(value > 0 for value in data["run_times"])
    assert data["p50_run_time"] == pytest.approx(statistics.median(data["run_times"]))
    assert data["p95_run_time"] == pytest.approx(statistics.quantiles(sorted(data["run_times"]), n=100, method="inclusive")[94])
    assert data["min_run_time"] <= data["p50_run_time"] <= data["p95_run_time"] <= data["max_run_time"]
    assert set(data) >= {"avg_run_time", "std_dev_run_time", "median_run_time", "avg_memory_usage", "p95_memory_usage", "median_memory_usage"}
    # 1 warmup + 4 timed + 4 measured for memory: each a real run.
    assert Run.objects.unscoped("test").filter(session_id__in=[f"eval_{body['id']}_{n}" for n in range(1, 11)]).count() == 9
    assert body["progress"] == {"done": 5, "total": 5, "phase": "memory", "memory_runs": 4}


def test_performance_percentiles_of_known_times() -> None:
    ticks = iter([0, 1, 10, 12, 20, 23, 30, 34, 40, 50])  # run times 1, 2, 3, 4, 10
    data = kinds.performance(run=lambda message: {"status": "COMPLETED"}, input="x", num_iterations=5, clock=lambda: next(ticks))
    assert data["run_times"] == [1, 2, 3, 4, 10]
    assert (data["p50_run_time"], data["median_run_time"], data["p95_run_time"]) == (3, 3, pytest.approx(8.8))


def _judge_says(**answer) -> Reply:
    return Reply(text=json.dumps(answer))


def test_agent_as_judge_numeric_below_the_threshold_fails(client, worker, judge) -> None:
    judge.push(_judge_says(score=5, reason="Too terse."))
    body = post_eval(client, eval_type="agent_as_judge", input="hello", agent_id="assistant", criteria="Friendly and complete", scoring_strategy="numeric", threshold=7).json()
    assert body["eval_data"]["results"][0] | {"output": None} == {
        "input": "hello", "output": None, "criteria": "Friendly and complete", "score": 5, "reason": "Too terse.", "passed": False,
    }
    assert (body["eval_data"]["pass_rate"], body["eval_data"]["avg_score"], body["score"]) == (0.0, 5, 5.0)
    assert (body["model_id"], body["model_provider"]) == ("gpt-4o-mini", "openai")  # the judge's
    assert body["eval_input"]["threshold"] == 7 and "Friendly and complete" in json.dumps(judge.requests[-1].body["messages"])


def test_agent_as_judge_binary_of_a_team(client, worker, judge) -> None:
    judge.push(_judge_says(passed=True, reason="It answers."))
    body = post_eval(client, eval_type="agent_as_judge", input="Tell me a fact", team_id="research-team", criteria="Answers the question").json()
    assert body["status"] == "completed", body
    assert (body["team_id"], body["agent_id"], body["eval_data"]["pass_rate"], body["eval_data"]["results"][0]["score"]) == ("research-team", None, 100.0, None)
    assert "threshold" not in body["eval_input"]


def test_a_workflow_is_evaluated_through_the_same_pipeline(client, worker, judge) -> None:
    judge.push(verdict(7, "Shouted, as asked."))
    body = post_eval(client, eval_type="accuracy", input="quiet words", workflow_id="draft-flow", expected_output="LOUD WORDS").json()
    assert body["status"] == "completed", body
    assert (body["workflow_id"], body["score"], body["evaluated_component_name"]) == ("draft-flow", 7.0, "Draft Flow")
    runs = Run.objects.unscoped("test").filter(session_id=f"eval_{body['id']}_1")
    assert "draft-flow" in {run.component_id for run in runs}


def test_background_answers_202_at_once_and_the_eval_finishes_as_a_job(client, worker) -> None:
    from jobs.models import Job
    from tests.agents.conftest import wait_for

    body = {"eval_type": "reliability", "input": ADD, "agent_id": "assistant", "expected_tool_calls": ["add"]}
    response = client.post("/eval-runs?background=true", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 202
    accepted = response.json()
    assert accepted["status"] in ("queued", "running") and accepted["eval_data"] == {}
    done = wait_for(lambda: (lambda b: b if b["status"] == "completed" else None)(client.get(f"/eval-runs/{accepted['id']}").json()), timeout=30)
    assert done["eval_data"]["eval_status"] == "PASSED" and done["progress"] == {"done": 1, "total": 1}
    job = Job.objects.unscoped("test").get(payload__eval_run_id=accepted["id"])
    assert job.job_type == "eval"
    wait_for(lambda: Job.objects.unscoped("test").get(pk=job.pk).status == "completed", timeout=30)  # its fenced end follows the row's


def test_a_sync_eval_past_its_wait_answers_202_with_the_run_as_it_stands(client, worker, settings) -> None:
    from tests.agents.conftest import wait_for

    settings.EVALS_SYNC_WAIT_SECONDS = 0
    body = {"eval_type": "performance", "input": "hello", "agent_id": "assistant"}
    response = client.post("/eval-runs", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 202 and response.json()["status"] in ("queued", "running")
    wait_for(lambda: client.get(f"/eval-runs/{response.json()['id']}").json()["status"] == "completed", timeout=30)


def test_re_running_an_eval_never_overwrites_the_earlier_run(client, worker) -> None:
    body = {"eval_type": "reliability", "input": ADD, "agent_id": "assistant", "expected_tool_calls": ["add"], "name": "same"}
    first = post_eval(client, **body).json()
    second = post_eval(client, **{**body, "expected_tool_calls": ["multiply"]}).json()
    assert first["id"] != second["id"]
    assert client.get(f"/eval-runs/{first['id']}").json()["eval_data"]["eval_status"] == "PASSED"
    assert client.get(f"/eval-runs/{second['id']}").json()["eval_data"]["eval_status"] == "FAILED"


def test_an_eval_and_its_runs_belong_to_the_caller(client, worker, jwt_server) -> None:
    from tests.security.conftest import auth, token

    alice = auth(token("alice", ["evals:write", "evals:read", "agents:read", "agents:run"]))
    body = {"eval_type": "reliability", "input": ADD, "agent_id": "assistant", "expected_tool_calls": ["add"]}
    response = client.post("/eval-runs", data=json.dumps(body), content_type="application/json", **alice)
    assert (response.status_code, response.json()["user_id"]) == (200, "alice")
    run = Run.objects.for_user("alice").get(session_id=f"eval_{response.json()['id']}_1")
    assert run.component_id == "assistant"
    assert client.get(f"/eval-runs/{response.json()['id']}", **auth(token("bob", ["evals:read"]))).status_code == 404


def test_a_cancelled_eval_job_stops_and_its_run_says_so(client, worker) -> None:
    from jobs.models import Job
    from jobs.services.cancellation import cancel_request
    from tests.agents.conftest import wait_for

    body = {"eval_type": "performance", "input": "/slow 0.2\nhello", "agent_id": "assistant", "num_iterations": 50}
    accepted = client.post("/eval-runs?background=true", data=json.dumps(body), content_type="application/json").json()
    job = Job.objects.unscoped("test").get(payload__eval_run_id=accepted["id"])
    wait_for(lambda: client.get(f"/eval-runs/{accepted['id']}").json()["status"] == "running", timeout=30)
    cancel_request(run_id=job.pk, user_id=None)
    done = wait_for(lambda: (lambda b: b if b["status"] == "failed" else None)(client.get(f"/eval-runs/{accepted['id']}").json()), timeout=60)
    assert (done["error"], done["eval_data"]) == ("cancelled", {})
    # The eval row says so first; the job's fenced end follows.
    wait_for(lambda: Job.objects.unscoped("test").get(pk=job.pk).status == "cancelled", timeout=30)
