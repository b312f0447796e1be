"""A pausing HumanReview on a step nested in Steps, Loop, Condition, Router or Parallel.

The run pauses with the nested step's requirement and the way back to it (``paused_frames``);
each continue builds the workflow again and reads the paused run through JSON, as a server that
restarted between the pause and the continue would, and goes on from exactly that step: what ran
before it inside its containers is not run again.
"""
from __future__ import annotations

import pytest

from engine import Agent, Condition, HumanReview, InvalidContinuation, Loop, Parallel, Router, Step, Steps, Workflow
from tests.engine.helpers import names
from tests.engine.test_workflow_review import Calls, answer, delete_file, pause, pause_after, resume

CONFIRM = HumanReview(requires_confirmation=True, confirmation_message="Go on?")


def reviewed(calls: Calls, name: str, review: HumanReview, **step) -> Step:
    return Step(name=name, executor=calls.step(name), human_review=review, **step)


def in_steps(calls: Calls, review: HumanReview = CONFIRM):
    def build():
        return Workflow(id="nested", name="Nested", steps=[
            calls.step("a"),
            Steps(name="outer", steps=[calls.step("b"), reviewed(calls, "c", review), calls.step("d")]),
            calls.step("e"),
        ])

    return build


def test_a_confirmation_nested_in_steps_pauses_with_that_steps_requirement(make_ctx):
    calls = Calls()
    build = in_steps(calls)
    output, events = pause(build, "x", make_ctx())
    assert calls.names == ["a", "b"]
    assert names(events)[-2:] == ["StepPaused", "WorkflowPaused"]
    inner = build().steps[1].steps[1]
    requirement = output["step_requirements"][0]
    assert (requirement["step_id"], requirement["step_name"], requirement["step_index"], requirement["step_type"]) == (inner.step_id, "c", 1, "Step")
    assert requirement["step_input"]["previous_step_content"] == "b:a:x"
    assert (output["paused_step_index"], output["paused_step_name"], output["pause_kind"]) == (1, "c", "step")
    assert [r["step_name"] for r in output["step_results"]] == ["a"]
    b = output["paused_frames"][0]["outputs"][0]
    assert output["paused_frames"] == [{"step_id": build().steps[1].step_id, "position": 1, "outputs": [b]}]
    assert b["content"] == "b:a:x"


def test_a_confirmed_nested_step_resumes_from_exactly_that_step(make_ctx):
    calls = Calls()
    build = in_steps(calls)
    output, _ = pause(build, "x", make_ctx())
    run, events = resume(build, output, make_ctx(), step_requirements=answer(output, confirmed=True))
    assert calls.names == ["a", "b", "c", "d", "e"]
    assert (events[0]["event"], events[0]["step_name"]) == ("StepContinued", "c")
    assert run.output["status"] == "COMPLETED"
    assert run.output["content"] == "e:Steps outer completed with 3 results"
    assert run.output["step_results"][1]["steps"][2]["content"] == "d:c:b:a:x"
    outer = run.output["step_results"][1]
    assert [s["step_name"] for s in outer["steps"]] == ["b", "c", "d"]
    assert "paused_frames" not in run.output


def test_a_rejected_nested_step_is_skipped_inside_its_container(make_ctx):
    calls = Calls()
    build = in_steps(calls)
    output, _ = pause(build, "x", make_ctx())
    run, _ = resume(build, output, make_ctx(), step_requirements=answer(output, confirmed=False))
    assert calls.names == ["a", "b", "d", "e"]
    assert [s["step_name"] for s in run.output["step_results"][1]["steps"]] == ["b", "d"]
    assert run.output["step_results"][1]["steps"][1]["content"] == "d:b:a:x"


def test_a_nested_rejection_with_cancel_cancels_the_workflow(make_ctx):
    calls = Calls()
    build = in_steps(calls, HumanReview(requires_confirmation=True, on_reject="cancel"))
    output, _ = pause(build, "x", make_ctx())
    run, events = resume(build, output, make_ctx(), step_requirements=answer(output, confirmed=False))
    assert (run.output["status"], events[-1]["reason"]) == ("CANCELLED", "Workflow cancelled: Step 'c' was rejected")
    assert calls.names == ["a", "b"]


def test_user_input_nested_in_a_condition_keeps_its_branch(make_ctx):
    calls = Calls()
    evaluated: list[str] = []

    def evaluator(step_input):
        evaluated.append("once")
        return True

    review = HumanReview(requires_user_input=True, user_input_message="Which region?", user_input_schema=[{"name": "region", "field_type": "str"}])

    def build():
        return Workflow(name="Cond", steps=[Condition(name="gate", evaluator=evaluator, steps=[reviewed(calls, "deploy", review)], else_steps=[calls.step("no")])])

    output, events = pause(build, "x", make_ctx())
    assert (events[-2]["event"], events[-2]["user_input_message"]) == ("StepPaused", "Which region?")
    with pytest.raises(InvalidContinuation, match="needs user input"):
        build().continue_run(output, ctx=make_ctx(), step_requirements=answer(output))
    run, events = resume(build, output, make_ctx(), step_requirements=answer(output, user_input={"region": "eu"}))
    assert evaluated == ["once"]
    assert calls.seen == [("deploy", {"user_input": {"region": "eu"}})]
    completed = next(e for e in events if e["event"] == "ConditionExecutionCompleted")
    assert (completed["branch"], run.output["status"]) == ("if", "COMPLETED")


def router_flow(calls: Calls, selected: list[str], **review):
    def selector(step_input):
        selected.append("draft")
        return ["draft", "publish"]

    def build():
        return Workflow(name="Route", steps=[Router(name="route", selector=selector, choices=[
            reviewed(calls, "draft", HumanReview(requires_output_review=True, output_review_message="Good draft?", **review)),
            calls.step("publish"),
        ])])

    return build


def test_an_output_review_nested_in_a_router_keeps_the_route_and_the_edit(make_ctx):
    calls, selected = Calls(), []
    build = router_flow(calls, selected)
    output, events = pause(build, "idea", make_ctx())
    assert (events[-2]["event"], events[-2]["output_review_message"]) == ("StepOutputReview", "Good draft?")
    assert output["step_results"] == []
    frame = output["paused_frames"][0]
    assert (frame["selected"], frame["paused"][0]["content"]) == (["draft", "publish"], "draft:idea")
    run, _ = resume(build, output, make_ctx(), step_requirements=answer(output, confirmed=True, edited_output="better"))
    assert selected == ["draft"]
    assert calls.names == ["draft", "publish"]
    assert run.output["content"] == "publish:better"
    assert [s["content"] for s in run.output["step_results"][0]["steps"]] == ["better", "publish:better"]


def test_a_rejected_nested_output_with_retry_runs_the_step_again(make_ctx):
    calls, selected = Calls(), []
    build = router_flow(calls, selected, on_reject="retry", max_retries=2)
    output, _ = pause(build, "idea", make_ctx())
    second, _ = pause_after(build, output, make_ctx(), confirmed=False, rejection_feedback="shorter")
    assert calls.seen[-1] == ("draft", {"rejection_feedback": "shorter", "previous_output": "draft:idea"})
    assert second["step_requirements"][-1]["retry_count"] == 1
    run, _ = resume(build, second, make_ctx(), step_requirements=answer(second, confirmed=True))
    assert calls.names == ["draft", "draft", "publish"]
    assert run.output["status"] == "COMPLETED"


def test_a_confirmation_inside_a_loop_is_asked_each_iteration_and_resumes_in_its_iteration(make_ctx):
    calls = Calls()

    def count(step_input, session_state):
        session_state["n"] = session_state.get("n", 0) + 1
        calls.seen.append(("count", None))
        return session_state["n"]

    def build():
        return Workflow(name="L", steps=[Loop(name="rounds", max_iterations=2, steps=[count, reviewed(calls, "check", CONFIRM)]), calls.step("after")])

    output, _ = pause(build, "x", make_ctx())
    assert output["paused_frames"][0]["iteration"] == 1
    second, _ = pause_after(build, output, make_ctx(), confirmed=True)
    assert calls.names == ["count", "check", "count"]
    assert (second["paused_frames"][0]["iteration"], second["session_state"]) == (2, {"n": 2})
    run, _ = resume(build, second, make_ctx(), step_requirements=answer(second, confirmed=True))
    assert calls.names == ["count", "check", "count", "check", "after"]
    loop = run.output["step_results"][0]
    assert loop["content"] == "Loop rounds completed 2 iterations with 4 total steps"
    assert [s["content"] for s in loop["steps"]] == [1, "check:1", 2, "check:2"]


def test_an_iteration_review_of_a_loop_nested_in_steps(make_ctx):
    calls = Calls()

    def build():
        return Workflow(name="LI", steps=[Steps(name="outer", steps=[
            calls.step("first"),
            Loop(name="refine", max_iterations=3, steps=[calls.step("pass")], human_review=HumanReview(requires_iteration_review=True)),
        ])])

    output, events = pause(build, "x", make_ctx())
    assert events[-2]["event"] == "StepOutputReview"
    assert output["paused_frames"][0]["paused"][0]["content"] == "Loop refine completed iteration 1/3"
    run, _ = resume(build, output, make_ctx(), step_requirements=answer(output, confirmed=True))
    assert calls.names == ["first", "pass"]
    outer = run.output["step_results"][0]
    assert [s["step_name"] for s in outer["steps"]] == ["first", "refine"]
    assert run.output["status"] == "COMPLETED"


def test_a_paused_parallel_branch_resumes_without_running_the_finished_ones(make_ctx):
    calls = Calls()

    def build():
        return Workflow(name="P", steps=[Parallel(calls.step("fast"), reviewed(calls, "slow", CONFIRM), calls.step("other"), name="both"), calls.step("join")])

    output, _ = pause(build, "x", make_ctx())
    assert sorted(calls.names) == ["fast", "other"]
    frame = output["paused_frames"][0]
    assert (frame["position"], sorted(frame["done"])) == (1, ["0", "2"])
    run, _ = resume(build, output, make_ctx(), step_requirements=answer(output, confirmed=True))
    assert sorted(calls.names) == ["fast", "join", "other", "slow"]
    parallel = run.output["step_results"][0]
    assert [s["step_name"] for s in parallel["steps"]] == ["fast", "slow", "other"]
    assert run.output["status"] == "COMPLETED"


def test_a_review_deep_inside_containers_finds_its_way_back(make_ctx):
    calls = Calls()

    def build():
        return Workflow(name="Deep", steps=[Loop(name="rounds", max_iterations=1, steps=[
            Condition(name="gate", evaluator=True, steps=[Parallel(calls.step("side"), Steps(name="seq", steps=[calls.step("s1"), reviewed(calls, "s2", CONFIRM)]))]),
        ])])

    output, _ = pause(build, "x", make_ctx())
    assert [f.get("position") for f in output["paused_frames"]] == [0, 0, 1, 1]
    run, _ = resume(build, output, make_ctx(), step_requirements=answer(output, confirmed=True))
    assert sorted(calls.names) == ["s1", "s2", "side"]
    assert run.output["status"] == "COMPLETED"


def test_an_error_pause_nested_in_a_condition_skips_inside_it(make_ctx):
    calls = Calls()

    def broken(step_input):
        raise RuntimeError("down")

    def build():
        return Workflow(name="E", steps=[Condition(name="gate", evaluator=True, steps=[
            Step(name="flaky", executor=broken, max_retries=0, human_review=HumanReview(on_error="pause")), calls.step("next"),
        ])])

    output, events = pause(build, "x", make_ctx())
    assert output["error_requirements"][0]["step_name"] == "flaky"
    run, _ = resume(build, output, make_ctx(), error_requirements=[{"decision": "skip"}])
    assert calls.names == ["next"]
    assert run.output["content"] == "next:x"


def test_an_agent_step_nested_in_steps_pauses_for_its_tool_and_continues(make_ctx):
    calls = Calls()

    def ask(step_input):
        return '/call delete_file {"path": "notes.txt"}'

    def build():
        return Workflow(name="X", steps=[Steps(name="cleanup", steps=[ask, Agent(id="janitor", name="Janitor", tools=[delete_file]), calls.step("report")])])

    output, events = pause(build, "x", make_ctx())
    assert names(events)[-2:] == ["StepExecutorPaused", "WorkflowPaused"]
    requirement = output["step_requirements"][0]
    answers = [{**r, "tool_execution": {**r["tool_execution"], "confirmed": True}} for r in requirement["executor_requirements"]]
    run, _ = resume(build, output, make_ctx(), step_requirements=[{"step_id": requirement["step_id"], "executor_requirements": answers}])
    assert run.output["status"] == "COMPLETED"
    assert calls.names == ["report"]
    assert run.output["content"] == "report:Tool delete_file returned: deleted notes.txt"
