"""Code-defined workflows the workflow tests run (added to AGENT_MODULES by their fixture)."""
from __future__ import annotations

from agents.runtime import Agent, HumanReview, Parallel, Step, Workflow
from agents.runtime.workflow_types import StepInput, StepOutput


def shout(step_input: StepInput) -> StepOutput:
    """A function step: the previous step's answer, in capitals."""
    return StepOutput(content=str(step_input.previous_step_content or step_input.input).upper())


DRAFTER = Agent(id="drafter", name="Drafter", model="offline:demo")
CHECKER = Agent(id="checker", name="Checker", model="offline:demo")

WORKFLOWS = [
    Workflow(
        id="draft-flow", name="Draft Flow", description="Two drafts side by side, then shouted",
        steps=[Parallel(Step(name="draft", agent=DRAFTER), Step(name="check", agent=CHECKER), name="both"), Step(name="shout", executor=shout)],
    ),
    Workflow(
        id="review-flow", name="Review Flow",
        steps=[Step(name="publish", executor=shout, human_review=HumanReview(requires_confirmation=True, confirmation_message="Publish it?"))],
    ),
]
