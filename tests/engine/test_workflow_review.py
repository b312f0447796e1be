"""HumanReview: every field, pause and continue from the stored output alone, timeouts.

Each continue builds the workflow again and reads the paused run through JSON, as a server that
restarted between the pause and the continue would.
"""
from __future__ import annotations

import json

import pytest

from engine import (
    Agent,
    Condition,
    HumanReview,
    InvalidContinuation,
    Loop,
    Router,
    Step,
    StepOutput,
    Steps,
    Workflow,
    tool,
)
from tests.engine.helpers import names


class Calls:
    """Function steps that record what they saw."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, object]] = []

    def step(self, name: str, result=None):
        def fn(step_input):
            self.seen.append((name, step_input.additional_data))
            return result if result is not None else f"{name}:{step_input.previous_step_content or step_input.input}"

        fn.__name__ = name
        return fn

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.seen]


def stored(run) -> dict:
    """The run's output as the database gives it back."""
    return json.loads(json.dumps(run.output))


def pause(build, message: str, ctx):
    run = build().start_run(message, ctx)
    events = list(run)
    assert run.output["status"] == "PAUSED", events[-1]
    return stored(run), events


def resume(build, output: dict, ctx, **answers):
    run = build().continue_run(output, ctx=ctx, **answers)
    events = list(run)
    return run, events


def answer(output: dict, **decision) -> list[dict]:
    return [{**output["step_requirements"][-1], **decision}]


# ---- confirmation ------------------------------------------------------------------------------


def confirm_flow(calls: Calls, **review):
    def build():
        return Workflow(id="deploy", name="Deploy", steps=[
            calls.step("build"),
            Step(name="ship", executor=calls.step("ship"), human_review=HumanReview(requires_confirmation=True, confirmation_message="Ship it?", **review)),
            calls.step("announce"),
        ])

    return build


def test_a_confirmation_pauses_before_the_step(make_ctx):
    calls = Calls()
    build = confirm_flow(calls)
    output, events = pause(build, "v1", make_ctx())
    assert calls.names == ["build"]
    assert names(events)[-2:] == ["StepPaused", "WorkflowPaused"]
    paused_step = events[-2]
    assert {k: paused_step[k] for k in ("step_name", "step_index", "requires_confirmation", "confirmation_message", "requires_user_input")} == {
        "step_name": "ship", "step_index": 1, "requires_confirmation": True, "confirmation_message": "Ship it?", "requires_user_input": False,
    }
    paused = events[-1]
    assert (paused["status"], paused["paused_step_index"], paused["paused_step_name"], paused["pause_kind"]) == ("PAUSED", 1, "ship", "step")
    assert paused["step_results"] == output["step_results"]
    requirement = output["step_requirements"][0]
    assert requirement == {
        "step_id": build().steps[1].step_id, "step_name": "ship", "step_index": 1, "step_type": "Step",
        "requires_confirmation": True, "confirmation_message": "Ship it?", "confirmed": None, "on_reject": "skip",
        "requires_user_input": False, "user_input_message": None, "user_input": None,
        "requires_route_selection": False, "available_choices": None, "allow_multiple_selections": False, "selected_choices": None,
        "requires_output_review": False, "output_review_message": None, "is_post_execution": False, "rejection_feedback": None,
        "retry_count": 0, "max_retries": 3, "timeout_at": None, "on_timeout": "cancel",
        "step_input": {
            "input": "v1", "previous_step_outputs": {"build": output["step_results"][0]}, "previous_step_content": "build:v1",
            "additional_data": None,
        },
    }
    assert (output["paused_step_index"], output["paused_step_name"], output["pause_kind"]) == (1, "ship", "step")


def test_a_confirmed_step_resumes_from_exactly_that_step(make_ctx):
    calls = Calls()
    build = confirm_flow(calls)
    output, _ = pause(build, "v1", make_ctx())
    run, events = resume(build, output, make_ctx(), step_requirements=answer(output, confirmed=True))
    assert calls.names == ["build", "ship", "announce"]
    assert names(events)[0] == "StepContinued"
    assert (events[0]["step_id"], events[0]["step_name"], events[0]["step_index"]) == (output["step_requirements"][0]["step_id"], "ship", 1)
    assert names(events)[-1] == "WorkflowCompleted"
    assert run.output["status"] == "COMPLETED"
    assert run.output["content"] == "announce:ship:build:v1"
    assert [r["step_name"] for r in run.output["step_results"]] == ["build", "ship", "announce"]
    assert run.output["step_requirements"][0]["confirmed"] is True
    assert "paused_step_index" not in run.output


@pytest.mark.parametrize(("on_reject", "status", "ran"), [("skip", "COMPLETED", ["build", "announce"]), ("cancel", "CANCELLED", ["build"])])
def test_on_reject_decides_what_a_rejection_does(make_ctx, on_reject, status, ran):
    calls = Calls()
    build = confirm_flow(calls, on_reject=on_reject)
    output, _ = pause(build, "v1", make_ctx())
    run, events = resume(build, output, make_ctx(), step_requirements=answer(output, confirmed=False))
    assert calls.names == ran
    assert run.output["status"] == status
    if on_reject == "cancel":
        assert events[-1]["event"] == "WorkflowCancelled"
        assert events[-1]["reason"] == "Workflow cancelled: Step 'ship' was rejected"


def test_on_reject_else_runs_a_conditions_else_branch(make_ctx):
    calls = Calls()

    def build():
        return Workflow(name="C", steps=[Condition(
            name="gate", evaluator=True, steps=[calls.step("yes")], else_steps=[calls.step("no")],
            human_review=HumanReview(requires_confirmation=True, on_reject="else"),
        )])

    output, events = pause(build, "x", make_ctx())
    assert output["step_requirements"][0]["step_type"] == "Condition"
    run, events = resume(build, output, make_ctx(), step_requirements=answer(output, confirmed=False))
    assert calls.names == ["no"]
    assert next(e for e in events if e["event"] == "ConditionExecutionCompleted")["branch"] == "else"


@pytest.mark.parametrize("kind", ["Loop", "Steps", "Router"])
def test_containers_ask_for_confirmation_too(make_ctx, kind):
    calls = Calls()
    review = HumanReview(requires_confirmation=True)

    def build():
        inner = calls.step("inner")
        container = {
            "Loop": lambda: Loop(name="c", steps=[inner], max_iterations=1, human_review=review),
            "Steps": lambda: Steps(name="c", steps=[inner], human_review=review),
            "Router": lambda: Router(name="c", selector=lambda si: "inner", choices=[inner], human_review=review),
        }[kind]()
        return Workflow(name="K", steps=[container])

    output, _ = pause(build, "x", make_ctx())
    assert calls.names == []
    assert output["step_requirements"][0]["step_type"] == kind
    run, _ = resume(build, output, make_ctx(), step_requirements=answer(output, confirmed=True))
    assert calls.names == ["inner"]
    assert run.output["status"] == "COMPLETED"


def test_an_unanswered_review_cannot_continue(make_ctx):
    build = confirm_flow(Calls())
    output, _ = pause(build, "v1", make_ctx())
    with pytest.raises(InvalidContinuation, match="unresolved step requirements: \\['ship'\\]"):
        build().continue_run(output, ctx=make_ctx(), step_requirements=[])


def test_only_a_paused_run_continues(make_ctx):
    calls = Calls()
    build = confirm_flow(calls)
    output, _ = pause(build, "v1", make_ctx())
    done, _ = resume(build, output, make_ctx(), step_requirements=answer(output, confirmed=True))
    with pytest.raises(InvalidContinuation, match="not paused. Current status: COMPLETED"):
        build().continue_run(stored(done), ctx=make_ctx(), step_requirements=answer(output, confirmed=True))
    other = Workflow(id="other", name="Other", steps=[calls.step("x")])
    with pytest.raises(InvalidContinuation, match="belongs to workflow deploy"):
        other.continue_run(output, ctx=make_ctx(), step_requirements=answer(output, confirmed=True))


# ---- user input --------------------------------------------------------------------------------

SCHEMA = [
    {"name": "region", "field_type": "str", "description": "Where to"},
    {"name": "replicas", "field_type": "int", "required": True},
    {"name": "note", "field_type": "str", "required": False},
]


def input_flow(calls: Calls, executor=None):
    def build():
        review = HumanReview(requires_user_input=True, user_input_message="Where and how many?", user_input_schema=SCHEMA)
        return Workflow(name="I", steps=[Step(name="ship", executor=executor or calls.step("ship"), human_review=review)])

    return build


def test_user_input_pauses_with_its_message_and_schema(make_ctx):
    output, events = pause(input_flow(Calls()), "x", make_ctx())
    paused = events[-2]
    assert (paused["event"], paused["requires_user_input"], paused["user_input_message"]) == ("StepPaused", True, "Where and how many?")
    assert paused["user_input_schema"] == [
        {"name": "region", "field_type": "str", "description": "Where to", "value": None, "required": True},
        {"name": "replicas", "field_type": "int", "description": None, "value": None, "required": True},
        {"name": "note", "field_type": "str", "description": None, "value": None, "required": False},
    ]
    assert output["step_requirements"][0]["user_input_schema"] == paused["user_input_schema"]


def test_user_input_reaches_the_step(make_ctx):
    calls = Calls()
    build = input_flow(calls)
    output, _ = pause(build, "x", make_ctx())
    run, _ = resume(build, output, make_ctx(), step_requirements=answer(output, user_input={"region": "eu", "replicas": 3}))
    assert calls.seen == [("ship", {"user_input": {"region": "eu", "replicas": 3}})]
    fields = {f["name"]: f["value"] for f in run.output["step_requirements"][0]["user_input_schema"]}
    assert fields == {"region": "eu", "replicas": 3, "note": None}


@pytest.mark.parametrize(
    ("user_input", "error"),
    [({"region": "eu"}, "needs user input: \\['replicas'\\]"), ({"region": "eu", "replicas": "three"}, "expected int")],
)
def test_user_input_is_checked_against_its_schema(make_ctx, user_input, error):
    build = input_flow(Calls())
    output, _ = pause(build, "x", make_ctx())
    with pytest.raises(InvalidContinuation, match=error):
        build().continue_run(output, ctx=make_ctx(), step_requirements=answer(output, user_input=user_input))


def test_an_agent_step_is_told_the_user_input(make_ctx):
    def build():
        review = HumanReview(requires_user_input=True, user_input_schema=[{"name": "tone", "field_type": "str"}])
        return Workflow(name="A", steps=[Step(agent=Agent(id="writer"), human_review=review)])

    output, _ = pause(build, "write a haiku", make_ctx())
    run, _ = resume(build, output, make_ctx(), step_requirements=answer(output, user_input={"tone": "dry"}))
    assert run.output["step_executor_runs"][0]["input"] == {"input_content": "write a haiku\n\nUser preferences:\n- tone: dry"}


def test_a_router_asks_which_route(make_ctx):
    calls = Calls()

    def build():
        review = HumanReview(requires_user_input=True, user_input_message="Which way?", allow_multiple_selections=True)
        return Workflow(name="R", steps=[Router(
            name="way", selector=lambda si: "left", choices=[calls.step("left"), calls.step("right")], human_review=review,
        )])

    output, events = pause(build, "x", make_ctx())
    paused = events[-2]
    assert (paused["event"], paused["available_choices"], paused["user_input_message"], paused["allow_multiple_selections"]) == (
        "RouterPaused", ["left", "right"], "Which way?", True,
    )
    with pytest.raises(InvalidContinuation, match="choose from"):
        build().continue_run(output, ctx=make_ctx(), step_requirements=answer(output, selected_choices=["up"]))
    run, _ = resume(build, output, make_ctx(), step_requirements=answer(output, selected_choices=["right", "left"]))
    assert calls.names == ["right", "left"]


# ---- output review -----------------------------------------------------------------------------


def review_flow(calls: Calls, requires=True, **review):
    def build():
        return Workflow(name="O", steps=[
            Step(name="draft", executor=calls.step("draft"), human_review=HumanReview(
                requires_output_review=requires, output_review_message="Good draft?", **review,
            )),
            calls.step("publish"),
        ])

    return build


def test_an_output_review_pauses_after_the_step_with_its_output(make_ctx):
    calls = Calls()
    output, events = pause(review_flow(calls), "idea", make_ctx())
    assert calls.names == ["draft"]
    review = events[-2]
    assert (review["event"], review["requires_output_review"], review["output_review_message"]) == ("StepOutputReview", True, "Good draft?")
    requirement = output["step_requirements"][0]
    assert (requirement["is_post_execution"], requirement["step_output"]["content"]) == (True, "draft:idea")
    assert [r["content"] for r in output["step_results"]] == ["draft:idea"]


def test_an_accepted_output_goes_on_and_an_edited_one_replaces_it(make_ctx):
    calls = Calls()
    build = review_flow(calls)
    output, _ = pause(build, "idea", make_ctx())
    run, _ = resume(build, output, make_ctx(), step_requirements=answer(output, confirmed=True))
    assert (calls.names, run.output["content"]) == (["draft", "publish"], "publish:draft:idea")
    edited, _ = resume(build, output, make_ctx(), step_requirements=answer(output, confirmed=True, edited_output="better"))
    assert edited.output["content"] == "publish:better"
    assert edited.output["step_results"][0]["content"] == "better"


def test_a_rejected_output_with_retry_runs_the_step_again_with_the_feedback(make_ctx):
    calls = Calls()
    build = review_flow(calls, on_reject="retry", max_retries=1)
    output, _ = pause(build, "idea", make_ctx())
    second, _ = pause_after(build, output, make_ctx(), confirmed=False, rejection_feedback="shorter")
    assert calls.seen[-1] == ("draft", {"rejection_feedback": "shorter", "previous_output": "draft:idea"})
    assert [r["content"] for r in second["step_results"]] == ["draft:idea"]
    assert second["step_requirements"][-1]["retry_count"] == 1
    run, events = resume(build, second, make_ctx(), step_requirements=answer(second, confirmed=False))
    assert run.output["status"] == "CANCELLED"
    assert events[-1]["reason"] == "Max retries (1) reached for step 'draft'"


def pause_after(build, output, ctx, **decision):
    run, events = resume(build, output, ctx, step_requirements=answer(output, **decision))
    assert run.output["status"] == "PAUSED"
    return stored(run), events


def test_a_rejected_output_with_skip_is_dropped(make_ctx):
    calls = Calls()
    build = review_flow(calls)
    output, _ = pause(build, "idea", make_ctx())
    run, _ = resume(build, output, make_ctx(), step_requirements=answer(output, confirmed=False))
    assert [r["step_name"] for r in run.output["step_results"]] == ["publish"]
    assert run.output["content"] == "publish:idea"


def test_an_output_review_predicate_decides_per_output(make_ctx):
    calls = Calls()
    quiet = review_flow(calls, requires=lambda out: "!" in out.content)
    assert quiet().run("idea", make_ctx())["status"] == "COMPLETED"
    output, _ = pause(quiet, "idea!", make_ctx())
    assert output["step_requirements"][0]["requires_output_review"] is True


# ---- iteration review --------------------------------------------------------------------------


def loop_flow(calls: Calls, **review):
    def count(step_input, session_state):
        session_state["n"] = session_state.get("n", 0) + 1
        calls.seen.append(("count", step_input.additional_data))
        return session_state["n"]

    def build():
        return Workflow(name="L", steps=[
            Loop(name="refine", steps=[count], max_iterations=3, human_review=HumanReview(
                requires_iteration_review=True, iteration_review_message="Again?", **review,
            )),
            calls.step("after"),
        ])

    return build


def test_an_iteration_review_pauses_after_each_iteration(make_ctx):
    calls = Calls()
    build = loop_flow(calls, on_reject="retry")
    output, events = pause(build, "x", make_ctx())
    assert (events[-2]["event"], events[-2]["output_review_message"]) == ("StepOutputReview", "Again?")
    assert output["step_results"][0]["content"] == "Loop refine completed iteration 1/3"
    second, _ = pause_after(build, output, make_ctx(), confirmed=False, rejection_feedback="more")
    assert calls.seen == [("count", None), ("count", {"rejection_feedback": "more"})]
    assert second["session_state"] == {"n": 2}
    assert [s["content"] for s in second["step_results"][0]["steps"]] == [1, 2]
    run, _ = resume(build, second, make_ctx(), step_requirements=answer(second, confirmed=True))
    assert calls.names == ["count", "count", "after"]
    assert run.output["step_results"][0]["content"] == "Loop refine completed iteration 2/3"
    assert run.output["content"] == "after:Loop refine completed iteration 2/3"


# ---- on_error="pause" and max_retries ----------------------------------------------------------


def failing_flow(calls: Calls, failures: int, max_retries: int = 1):
    def flaky(step_input):
        calls.seen.append(("flaky", None))
        if len(calls.seen) <= failures:
            raise RuntimeError("down")
        return "up"

    def build():
        return Workflow(name="E", steps=[
            Step(name="flaky", executor=flaky, max_retries=0, human_review=HumanReview(on_error="pause", max_retries=max_retries)),
            calls.step("next"),
        ])

    return build


def test_on_error_pause_asks_to_retry_or_skip(make_ctx):
    calls = Calls()
    build = failing_flow(calls, failures=1)
    output, events = pause(build, "x", make_ctx())
    assert names(events)[-2:] == ["StepError", "WorkflowPaused"]
    assert output["error_requirements"] == [{
        "step_id": build().steps[0].step_id, "step_name": "flaky", "step_index": 0, "error_message": "RuntimeError: down",
        "error_type": "RuntimeError", "retry_count": 0, "max_retries": 1, "decision": None,
    }]
    with pytest.raises(InvalidContinuation, match="retry"):
        build().continue_run(output, ctx=make_ctx())
    run, _ = resume(build, output, make_ctx(), error_requirements=[{"decision": "retry"}])
    assert (run.output["status"], run.output["content"]) == ("COMPLETED", "next:up")
    skipped, _ = resume(build, output, make_ctx(), error_requirements=[{"decision": "skip"}])
    assert [r["step_name"] for r in skipped.output["step_results"]] == ["next"]


def test_error_retries_stop_at_max_retries(make_ctx):
    calls = Calls()
    build = failing_flow(calls, failures=10, max_retries=1)
    output, _ = pause(build, "x", make_ctx())
    again, _ = resume(build, output, make_ctx(), error_requirements=[{"decision": "retry"}])
    assert again.output["status"] == "PAUSED"
    assert again.output["error_requirements"][-1]["retry_count"] == 1
    run, events = resume(build, stored(again), make_ctx(), error_requirements=[{"decision": "retry"}])
    assert run.output["status"] == "ERROR"
    assert events[-1]["error"] == "Max retries (1) reached for step 'flaky': RuntimeError: down"


# ---- timeout -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("on_timeout", "status", "ran"), [
    ("cancel", "CANCELLED", ["build"]), ("skip", "COMPLETED", ["build", "announce"]), ("approve", "COMPLETED", ["build", "ship", "announce"]),
])
def test_a_review_answered_after_its_timeout_follows_on_timeout(make_ctx, clock, on_timeout, status, ran):
    calls = Calls()
    build = confirm_flow(calls, timeout=60, on_timeout=on_timeout)
    output, _ = pause(build, "v1", make_ctx())
    assert output["step_requirements"][0]["timeout_at"] == "2026-11-30T09:43:53+00:00"  # the fake clock, plus 60 s
    clock.advance(61)
    run, _ = resume(build, output, make_ctx(), step_requirements=answer(output, confirmed=True))
    assert (run.output["status"], calls.names) == (status, ran)
    assert run.output["step_requirements"][0]["timed_out"] is True


def test_a_review_answered_in_time_is_followed(make_ctx, clock):
    calls = Calls()
    build = confirm_flow(calls, timeout=60, on_timeout="cancel")
    output, _ = pause(build, "v1", make_ctx())
    clock.advance(59)
    run, _ = resume(build, output, make_ctx(), step_requirements=answer(output, confirmed=True))
    assert run.output["status"] == "COMPLETED"


# ---- configuration -----------------------------------------------------------------------------


def test_human_review_fields_are_checked_for_their_step_type():
    with pytest.raises(ValueError, match="requires_iteration_review is not supported on Step"):
        Step(executor=lambda si: 1, human_review=HumanReview(requires_iteration_review=True))
    with pytest.raises(ValueError, match="requires_user_input is not supported on Loop"):
        Loop(steps=[lambda si: 1], human_review=HumanReview(requires_user_input=True))
    with pytest.raises(ValueError, match="on_reject must be one of"):
        HumanReview(on_reject="ignore")
    with pytest.raises(ValueError, match="cannot both be set"):
        HumanReview(requires_output_review=True, requires_iteration_review=True)


def test_step_ids_are_the_same_in_every_build_of_a_definition():
    calls = Calls()
    first, second = confirm_flow(calls)(), confirm_flow(calls)()
    assert [s.step_id for s in first.steps] == [s.step_id for s in second.steps]
    assert Step(name="mine", step_id="fixed", executor=lambda si: StepOutput(content=1)).step_id == "fixed"


# ---- an executor's own pause -------------------------------------------------------------------


@tool(requires_confirmation=True)
def delete_file(path: str) -> str:
    """Delete a file.

    Args:
        path: The file.
    """
    return f"deleted {path}"


def executor_flow(calls: Calls):
    def ask(step_input):
        return '/call delete_file {"path": "notes.txt"}'

    def build():
        return Workflow(name="X", steps=[ask, Agent(id="janitor", name="Janitor", tools=[delete_file]), calls.step("report")])

    return build


def test_an_agent_step_whose_tool_needs_confirmation_pauses_the_workflow(make_ctx):
    calls = Calls()
    build = executor_flow(calls)
    output, events = pause(build, "x", make_ctx())
    assert names(events)[-2:] == ["StepExecutorPaused", "WorkflowPaused"]
    child = output["step_executor_runs"][0]
    assert child["status"] == "PAUSED"
    requirement = output["step_requirements"][0]
    assert (requirement["requires_executor_input"], requirement["executor_run_id"], requirement["executor_type"]) == (True, child["run_id"], "agent")
    assert [r["tool_execution"]["tool_name"] for r in requirement["executor_requirements"]] == ["delete_file"]
    assert output["pause_kind"] == "executor"

    answers = [{**r, "confirmation": True, "tool_execution": {**r["tool_execution"], "confirmed": True}} for r in requirement["executor_requirements"]]
    with pytest.raises(InvalidContinuation, match="executor_requirements"):
        build().continue_run(output, ctx=make_ctx(), step_requirements=[{"step_id": requirement["step_id"]}])
    run, events = resume(build, output, make_ctx(), step_requirements=[{"step_id": requirement["step_id"], "executor_requirements": answers}])
    assert run.output["status"] == "COMPLETED"
    assert calls.names == ["report"]
    runs = run.output["step_executor_runs"]
    assert [(r["run_id"], r["status"]) for r in runs] == [(child["run_id"], "COMPLETED")]
    assert runs[0]["content"] == "Tool delete_file returned: deleted notes.txt"
    assert "RunContinued" in names(events)


def test_a_bad_executor_answer_is_refused_before_anything_runs(make_ctx):
    build = executor_flow(Calls())
    output, _ = pause(build, "x", make_ctx())
    requirement = output["step_requirements"][0]
    wrong = [{**r, "tool_execution": {**r["tool_execution"], "tool_call_id": "nope", "confirmed": True}} for r in requirement["executor_requirements"]]
    with pytest.raises(InvalidContinuation, match="Unknown tool_call_id nope"):
        build().continue_run(output, ctx=make_ctx(), step_requirements=[{"executor_requirements": wrong}])
