"""A Parallel whose branches run elsewhere (``RunContext.parallel_branches``): each branch rebuilt
from the workflow and the Parallel's path and run by ``run_branch`` (here in the same process, as
a branch job runs it in a worker) gives the run exactly the outputs, executor runs and session
state an inline run gets; failures and cancellation as inline."""
from __future__ import annotations

import asyncio
import json

import pytest

from engine import Agent, HumanReview, Loop, Parallel, RunContext, Step, StepInput, Steps, Workflow
from engine.workflow_branches import BranchResult, run_branch, step_at, step_input_from_dict, step_input_to_dict, step_path


def count(step_input: StepInput, session_state: dict) -> str:
    session_state["seen"] = session_state.get("seen", 0) + 1
    return f"counted {step_input.input}"


def broken(step_input: StepInput) -> str:
    raise ValueError("broken branch")


def build(*, skip: bool = True) -> Workflow:
    return Workflow(id="nested-branches", name="Nested Branches", steps=[
        Steps(name="outer", steps=[
            Loop(name="twice", max_iterations=2, steps=[
                Parallel(
                    Step(name="echo", agent=Agent(id="echo", model="offline:demo")),
                    Step(name="count", executor=count),
                    Step(name="broken", executor=broken, max_retries=0, skip_on_failure=skip),
                    name="fan",
                ),
            ]),
        ]),
    ])


class Elsewhere:
    """A ParallelBranches that runs each branch as a worker would: from its path and a copy of
    its input (serialised), on a fresh copy of the workflow, and records what it was asked."""

    def __init__(self, **definition) -> None:
        self.definition = definition  # the workflow a worker rebuilds: the same as the run's
        self.asked: list[tuple[str, int]] = []

    async def run_branches(self, *, scope, path, count, step_input, index):
        self.asked.append((path, count))
        sent = json.loads(json.dumps(step_input_to_dict(step_input)))  # what a job's payload holds
        results = await asyncio.gather(*[
            run_branch(build(**self.definition), scope.ctx, run_id=scope.run_id, path=path, branch_index=n, step_input=step_input_from_dict(sent), index=index)
            for n in range(count)
        ])
        for result in results:
            for event in result.events:
                yield event
        yield list(results)


def ctx(run_id: str, branches=None) -> RunContext:
    return RunContext(run_id=run_id, session_id="s", user_id="u", session_state={}, parallel_branches=branches)


def comparable(output: dict) -> dict:
    """A run's output without what differs between any two runs (ids, times)."""
    text = json.dumps({key: output[key] for key in ("status", "content", "step_results", "session_state")}, sort_keys=True)
    for run in output.get("step_executor_runs") or []:
        text = text.replace(run["run_id"], "<run>")
    data = json.loads(text)
    for result in data["step_results"]:
        _strip(result)
    return data


def _strip(output: dict) -> None:
    for key in ("step_run_id", "metrics"):
        output.pop(key, None)
    for inner in output.get("steps") or []:
        _strip(inner)


def test_branches_run_elsewhere_give_what_inline_branches_give():
    inline = build().run("hello", ctx("inline"))
    elsewhere = Elsewhere()
    delegated = build().run("hello", ctx("delegated", elsewhere))
    assert elsewhere.asked == [("0/steps/0/steps/0", 3), ("0/steps/0/steps/0", 3)]  # the Parallel, once per iteration
    assert delegated["status"] == inline["status"] == "COMPLETED"
    assert comparable(delegated) == comparable(inline)
    assert delegated["session_state"]["seen"] == 2
    assert [run["parent_run_id"] for run in delegated["step_executor_runs"]] == ["delegated", "delegated"]


def test_a_failing_branch_fails_the_run_as_inline_and_a_cancelled_one_cancels_it():
    inline = build(skip=False).run("hello", ctx("inline"))
    delegated = build(skip=False).run("hello", ctx("delegated", Elsewhere(skip=False)))
    assert (delegated["status"], delegated["content"]) == (inline["status"], inline["content"]) == ("ERROR", "ValueError: broken branch")

    class Cancelled:
        async def run_branches(self, *, scope, path, count, step_input, index):
            yield [BranchResult(cancelled=True)] + [BranchResult(error="never seen")] * (count - 1)

    assert build().run("hello", ctx("c", Cancelled()))["status"] == "CANCELLED"


def test_a_step_path_names_one_step_and_a_changed_graph_is_refused():
    workflow = build()
    fan = workflow.steps[0].steps[0].steps[0]
    assert step_at(workflow.steps, step_path(workflow.steps, fan)) is fan
    assert step_path(workflow.steps, Parallel(Step(name="x", executor=count))) is None
    with pytest.raises(LookupError):
        step_at(workflow.steps, "0/steps/3")
    with pytest.raises(LookupError):
        asyncio.run(run_branch(workflow, ctx("r"), run_id="r", path="0", branch_index=0, step_input=StepInput(input="x"), index=0))


def test_a_branch_with_a_review_runs_inline_and_an_agent_pausing_in_a_separate_branch_fails_it():
    from tests.engine.test_workflow_review import delete_file

    reviewed = Workflow(id="reviewed-fan", steps=[Parallel(
        Step(name="ask", executor=count, human_review=HumanReview(requires_confirmation=True)), Step(name="other", executor=count),
    )])
    assert reviewed.steps[0].may_pause and not build().steps[0].steps[0].steps[0].may_pause
    janitor = Workflow(id="janitor-fan", steps=[Parallel(Step(name="clean", agent=Agent(id="janitor", tools=[delete_file])), Step(name="other", executor=count))])
    result = asyncio.run(run_branch(
        janitor, ctx("r"), run_id="r", path="0", branch_index=0, step_input=StepInput(input='/call delete_file {"path": "a"}'), index=0,
    ))
    assert result.error == "Step 'clean' paused for a human in a Parallel branch run as a separate job, where the workflow cannot resume"
