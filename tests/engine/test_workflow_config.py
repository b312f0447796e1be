"""A workflow's steps from stored JSON (``workflow_config``), without Django: every step type
built from ids, run on the offline model, and a run that records its version continues only
on that version."""
from __future__ import annotations

import json

import pytest

from engine import Agent, StepInput, Team, Workflow
from engine.errors import InvalidContinuation
from engine.workflow_config import Executors, StepConfigError, steps_from_config

ECHO = "(offline demo) You said: {} This is the first message I see from you."
WRITER = Agent(id="writer", name="Writer", model="offline:demo")
DESK = Team(id="desk", name="Desk", members=[Agent(id="member", name="Member", model="offline:demo")], mode="route", model="offline:demo")


def upper(step_input: StepInput) -> str:
    return str(step_input.previous_step_content or step_input.input).upper()


def is_long(step_input: StepInput) -> bool:
    return len(str(step_input.input)) > 5


def pick(step_input: StepInput) -> str:
    return "loud"


def twice(outputs) -> bool:
    return False


FUNCTIONS = {fn.__name__: fn for fn in (upper, is_long, pick, twice)}
EXECUTORS = Executors(agent={"writer": WRITER}.get, team={"desk": DESK}.get, function=FUNCTIONS.get)


def test_every_type_builds_from_ids_and_runs(make_ctx) -> None:
    config = [
        {"type": "Parallel", "name": "both", "steps": [{"type": "Step", "name": "w", "agent_id": "writer"}, {"type": "Step", "name": "d", "team_id": "desk"}]},
        {"type": "Condition", "name": "long?", "evaluator": "is_long", "steps": [{"type": "Step", "name": "up", "executor_ref": "upper"}]},
        {"type": "Router", "name": "route", "selector": "pick", "choices": [{"type": "Step", "name": "loud", "executor_ref": "upper"}]},
        {"type": "Loop", "name": "again", "max_iterations": 2, "end_condition": "twice", "steps": [{"type": "Step", "name": "more", "executor_ref": "upper"}]},
        {"type": "Steps", "name": "end", "steps": [{"type": "Step", "name": "last", "agent_id": "writer"}]},
    ]
    workflow = Workflow(id="stored", steps=steps_from_config(json.loads(json.dumps(config)), EXECUTORS), version=3)
    assert [step["type"] for step in workflow.to_dict()["steps"]] == ["Parallel", "Condition", "Router", "Loop", "Steps"]
    output = workflow.run("hello there", make_ctx())
    assert (output["status"], output["workflow_version"]) == ("COMPLETED", 3)
    assert [result["step_name"] for result in output["step_results"]] == ["both", "long?", "route", "again", "end"]
    assert [inner["step_name"] for inner in output["step_results"][3]["steps"]] == ["more", "more"]
    assert output["content"] == ECHO.format("ROUTER ROUTE COMPLETED WITH 1 RESULTS")  # the loop's last output, to the last agent


def test_every_problem_is_reported_at_once_with_its_place() -> None:
    with pytest.raises(StepConfigError) as caught:
        steps_from_config([{"type": "Step", "agent_id": "nobody"}, {"type": "Loop", "steps": [{"type": "Step", "executor_ref": "missing"}]}], EXECUTORS)
    assert caught.value.problems == [
        ("steps[0].agent_id", "No live agent 'nobody'."),
        ("steps[1].steps[0].executor_ref", "No registered function 'missing'."),
    ]
    assert str(caught.value) == "steps[0].agent_id: No live agent 'nobody'.; steps[1].steps[0].executor_ref: No registered function 'missing'."


def test_a_run_continues_only_on_the_version_it_paused_in(make_ctx) -> None:
    config = [{"type": "Step", "name": "ok", "executor_ref": "upper", "human_review": {"requires_confirmation": True}}]

    def version(number: int) -> Workflow:
        return Workflow(id="stored", steps=steps_from_config(config, EXECUTORS), version=number)

    paused = version(1).run("go", make_ctx())
    assert (paused["status"], paused["workflow_version"]) == ("PAUSED", 1)
    answer = [{**paused["step_requirements"][0], "confirmed": True}]
    with pytest.raises(InvalidContinuation, match="paused in version 1 of stored, not version 2"):
        version(2).continue_run(paused, ctx=make_ctx(), step_requirements=answer)
    run = version(1).continue_run(paused, ctx=make_ctx(), step_requirements=answer)
    list(run)
    assert (run.output["status"], run.output["content"]) == ("COMPLETED", "GO")


def test_a_code_workflow_records_no_version(make_ctx) -> None:
    output = Workflow(id="code", steps=[upper]).run("x", make_ctx())
    assert "workflow_version" not in output


# ---- bounds (issue 31, item 12) ---------------------------------------------------------------

from engine.workflow_config import MAX_DEPTH, MAX_INNER_STEPS, MAX_ITERATIONS, MAX_RETRIES, MAX_STEPS  # noqa: E402

LEAF = {"type": "Step", "executor_ref": "upper"}


def nested(depth: int) -> list:
    """A graph of ``depth`` Steps containers, one inside the other, around a leaf."""
    inner: dict = dict(LEAF)
    for _ in range(depth):
        inner = {"type": "Steps", "steps": [inner]}
    return [inner]


def problems(config) -> list[tuple[str, str]]:
    with pytest.raises(StepConfigError) as refused:
        steps_from_config(config, EXECUTORS)
    return refused.value.problems


def test_a_graph_nested_3000_deep_is_refused_not_a_recursion_error() -> None:
    (problem,) = problems(nested(3000))
    assert problem == ("steps[0]" + ".steps[0]" * (MAX_DEPTH - 1), f"Steps nest at most {MAX_DEPTH} deep: this Steps is at depth {MAX_DEPTH} and holds more.")


def test_a_graph_at_the_depth_bound_builds() -> None:
    assert steps_from_config(nested(MAX_DEPTH - 1), EXECUTORS)


@pytest.mark.parametrize(("config", "where", "message"), [
    ([{"type": "Parallel", "steps": [dict(LEAF)] * 5000}], "steps[0].steps", f"At most {MAX_INNER_STEPS} steps in a list (5000 here)."),
    ([dict(LEAF)] * (MAX_INNER_STEPS + 1), "", f"At most {MAX_INNER_STEPS} steps in a list ({MAX_INNER_STEPS + 1} here)."),
    ([{"type": "Parallel", "steps": [{"type": "Steps", "steps": [dict(LEAF)] * MAX_INNER_STEPS}] * MAX_INNER_STEPS}], "", f"A workflow holds at most {MAX_STEPS} steps in all."),
    ([{"type": "Loop", "steps": [LEAF], "max_iterations": 10**12}], "steps[0].max_iterations", f"A whole number from 1 to {MAX_ITERATIONS}."),
    ([{**LEAF, "max_retries": 10**12}], "steps[0].max_retries", f"A whole number from 0 to {MAX_RETRIES}."),
    ([{"type": "Steps", "steps": [LEAF], "human_review": {"max_retries": 10**12}}], "steps[0].human_review.max_retries", f"A whole number from 0 to {MAX_RETRIES}."),
    ([{"type": "Steps", "steps": [LEAF], "human_review": {"timeout": 10**12}}], "steps[0].human_review.timeout", "Seconds, a whole number from 1 to 2592000 (30 days), or null for none."),
    ([{**LEAF, "name": "n" * 256}], "steps[0].name", "At most 255 characters (256 here)."),
    ([{**LEAF, "executor_ref": "f" * 10**6}], "steps[0].executor_ref", "At most 255 characters (1000000 here)."),
    ([{**LEAF, "description": "d" * 2001}], "steps[0].description", "At most 2000 characters (2001 here)."),
])
def test_counts_and_names_past_their_bounds_are_refused(config, where, message) -> None:
    assert (where, message) in problems(config)
