"""Workflows that fail or are cancelled: retries, skipped failures, an executor's failure, and a
cancel between steps, inside an agent step and in the middle of a Parallel.

Function steps are plain Python; agent steps use the offline model (``/slow`` makes it stream
slowly, ``/fail`` makes it fail).
"""
from __future__ import annotations

import time

import pytest

from engine import Agent, HumanReview, Parallel, Step, Workflow
from tests.engine.helpers import names
from tests.engine.test_workflow import exclaim, run_workflow, upper


# ---- errors ------------------------------------------------------------------------------------


def flaky(failures: int):
    calls = []

    def step(step_input):
        calls.append(1)
        if len(calls) <= failures:
            raise RuntimeError(f"boom {len(calls)}")
        return f"ok after {len(calls)}"

    return step, calls


def test_a_failing_step_is_retried_then_fails_the_workflow(make_ctx):
    step, calls = flaky(10)
    run, events = run_workflow(Workflow(name="F", steps=[Step(name="flaky", executor=step, max_retries=2), upper]), "x", make_ctx())
    assert len(calls) == 3
    assert run.output["status"] == "ERROR"
    assert run.output["content"] == "RuntimeError: boom 3"
    assert [e["event"] for e in events][-2:] == ["StepError", "WorkflowError"]
    assert events[-1]["error"] == "RuntimeError: boom 3"
    assert events[-1]["error_type"] == "RuntimeError"
    assert [r["step_name"] for r in run.output["step_results"]] == []


def test_a_retry_that_succeeds_goes_on(make_ctx):
    step, calls = flaky(2)
    out = Workflow(name="F", steps=[Step(name="flaky", executor=step, max_retries=2)]).run("x", make_ctx())
    assert (out["status"], out["content"], len(calls)) == ("COMPLETED", "ok after 3", 3)


@pytest.mark.parametrize("options", [{"skip_on_failure": True}, {"human_review": HumanReview(on_error="skip")}])
def test_a_skipped_failure_goes_on_without_the_step(make_ctx, options):
    step, calls = flaky(10)
    out = Workflow(name="F", steps=[Step(name="flaky", executor=step, max_retries=0, **options), exclaim]).run("x", make_ctx())
    assert out["status"] == "COMPLETED"
    assert len(calls) == 1
    skipped = out["step_results"][0]
    assert (skipped["content"], skipped["success"], skipped["error"]) == ("Step flaky failed but skipped", False, "RuntimeError: boom 1")
    assert out["content"] == "Step flaky failed but skipped!"


def test_an_agent_step_whose_model_fails_fails_the_workflow(make_ctx):
    def prompt(step_input):
        return "/fail"

    run, events = run_workflow(Workflow(name="F", steps=[prompt, Step(agent=Agent(id="a"), max_retries=1)]), "x", make_ctx())
    assert run.output["status"] == "ERROR"
    assert [r["status"] for r in run.output["step_executor_runs"]] == ["ERROR", "ERROR"]
    assert events[-1]["event"] == "WorkflowError"
    assert events[-1]["error_type"] == "executor_error"


# ---- cancellation ------------------------------------------------------------------------------


def test_a_cancel_between_steps_stops_the_workflow(make_ctx):
    cancelled = {"now": False}

    def first(step_input):
        cancelled["now"] = True
        return "one"

    run, events = run_workflow(Workflow(name="X", steps=[first, upper]), "x", make_ctx(is_cancelled=lambda: cancelled["now"]))
    assert run.output["status"] == "CANCELLED"
    assert [r["step_name"] for r in run.output["step_results"]] == ["first"]
    assert "upper" not in {e.get("step_name") for e in events}
    assert events[-1]["event"] == "WorkflowCancelled"
    assert events[-1]["reason"] == "Workflow run run-1 was cancelled"


def test_a_cancel_inside_an_agent_step_cancels_its_run_and_the_workflow(make_ctx):
    def prompt(step_input):
        return "/slow 2\nsay a lot of words here please"

    seen = {"content": 0}

    def is_cancelled():
        return seen["content"] >= 2

    run = Workflow(name="X", steps=[prompt, Agent(id="talker"), upper]).start_run("x", make_ctx(is_cancelled=is_cancelled))
    events = []
    for event in run:
        events.append(event)
        if event["event"] == "RunContent" and event.get("content"):
            seen["content"] += 1
    assert run.output["status"] == "CANCELLED"
    assert run.output["step_executor_runs"][0]["status"] == "CANCELLED"
    assert [r["step_name"] for r in run.output["step_results"]] == ["prompt"]
    assert names(events)[-1] == "WorkflowCancelled"


def test_a_cancel_mid_parallel_stops_every_branch(make_ctx):
    def prompt(step_input):
        return "/slow 3\none two three four five six"

    flag = {"now": False}
    run = Workflow(name="X", steps=[prompt, Parallel(Agent(id="a"), Agent(id="b"), Agent(id="c"))]).start_run(
        "x", make_ctx(clock=time.time, is_cancelled=lambda: flag["now"])
    )
    started = time.monotonic()
    for event in run:
        if event["event"] == "RunContent" and event.get("content"):
            flag["now"] = True
    assert time.monotonic() - started < 2
    assert run.output["status"] == "CANCELLED"
    assert sorted(r["status"] for r in run.output["step_executor_runs"]) == ["CANCELLED"] * 3
