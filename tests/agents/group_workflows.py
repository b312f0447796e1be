"""Workflows for the tests of Parallel branches as jobs of one group (added to AGENT_MODULES by
the tests that run them): three slow offline branches, three branches on the fake OpenAI server,
and branches whose failures follow their steps' ``on_error``."""
from __future__ import annotations

from engine import Agent, Parallel, Step, Workflow
from engine.workflow_types import StepInput, StepOutput


def shout(step_input: StepInput) -> StepOutput:
    return StepOutput(content=str(step_input.previous_step_content or step_input.input).upper())


def flaky(step_input: StepInput) -> str:
    if "fail-flaky" in str(step_input.input):
        raise ValueError("flaky broke")
    return "flaky ok"


def strict(step_input: StepInput) -> str:
    if "fail-strict" in str(step_input.input):
        raise ValueError("strict broke")
    return "strict ok"


def counted(step_input: StepInput, session_state: dict) -> str:
    session_state["branches_seen"] = session_state.get("branches_seen", 0) + 1
    return "counted"


WORKFLOWS = [
    Workflow(
        id="group-flow", name="Group Flow",
        steps=[
            Parallel(
                Step(name="a", agent=Agent(id="branch-a", name="Branch A", model="offline:demo")),
                Step(name="b", agent=Agent(id="branch-b", name="Branch B", model="offline:demo")),
                Step(name="c", agent=Agent(id="branch-c", name="Branch C", model="offline:demo")),
                name="three",
            ),
            Step(name="shout", executor=shout),
        ],
    ),
    Workflow(
        id="openai-group-flow", name="OpenAI Group Flow",
        steps=[
            Parallel(*[Step(name=f"o{n}", agent=Agent(id=f"openai-branch-{n}", name=f"OpenAI Branch {n}", model="openai:gpt-4o-mini")) for n in range(3)], name="three"),
            Step(name="shout", executor=shout),
        ],
    ),
    Workflow(
        id="branch-errors", name="Branch Errors",
        steps=[
            Parallel(
                Step(name="flaky", executor=flaky, skip_on_failure=True, max_retries=0),
                Step(name="strict", executor=strict, max_retries=0),
                Step(name="counted", executor=counted),
                name="mixed",
            ),
            Step(name="after", executor=shout),
        ],
    ),
]
