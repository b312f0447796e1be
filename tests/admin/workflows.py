"""Workflows for the console's tests beside the suite's own: a user-input review, and a loop."""
from __future__ import annotations

from engine import HumanReview, Loop, Step, Workflow
from engine.workflow_types import StepInput, StepOutput


def brief(step_input: StepInput) -> StepOutput:
    """The reviewer's answers, as the step saw them."""
    answers = (step_input.additional_data or {}).get("user_input") or {}
    return StepOutput(content=", ".join(f"{name}={value!r}" for name, value in sorted(answers.items())))


def again(step_input: StepInput) -> StepOutput:
    return StepOutput(content=f"again after {step_input.previous_step_content or step_input.input}")


WORKFLOWS = [
    Workflow(
        id="intake-flow", name="Intake Flow",
        steps=[Step(name="brief", executor=brief, human_review=HumanReview(
            requires_user_input=True, user_input_message="Who is it for?",
            user_input_schema=[{"name": "audience", "field_type": "str"}, {"name": "copies", "field_type": "int"}],
        ))],
    ),
    Workflow(id="loop-flow", name="Loop Flow", steps=[Loop(name="twice", steps=[Step(name="again", executor=again)], max_iterations=2)]),
]
