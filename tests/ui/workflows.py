"""Workflows the chat's browser tests run beside the suite's own (added to AGENT_MODULES by
test_chat_workflows.py): an input form from an input_schema and a counted loop, and a run that
asks for each kind of review in turn (user input, a route choice, an output review), and an
agent step whose tool call waits for approval."""
from __future__ import annotations

import json

from engine.agent import Agent
from engine.workflow import Workflow
from engine.workflow_review import HumanReview
from engine.workflow_steps import Loop, Router, Step
from engine.workflow_types import StepInput, StepOutput
from tests.agents_for_tests import delete_file


def order(step_input: StepInput) -> StepOutput:
    """The structured input as the form sent it."""
    value = step_input.input
    return StepOutput(content=f"Order: {json.dumps(value, sort_keys=True) if isinstance(value, dict) else value}")


def tick(step_input: StepInput) -> StepOutput:
    return StepOutput(content="tick")


def greet(step_input: StepInput) -> StepOutput:
    """The person's answer to the step's user input."""
    answer = (step_input.additional_data or {}).get("user_input") or {}
    return StepOutput(content=f"Dear {answer.get('recipient')}, x{answer.get('copies')}")


def formal(step_input: StepInput) -> StepOutput:
    return StepOutput(content=f"{step_input.previous_step_content}. Yours faithfully.")


def casual(step_input: StepInput) -> StepOutput:
    return StepOutput(content=f"{step_input.previous_step_content}. Cheers!")


FLAKY_CALLS: list[str] = []


def flaky(step_input: StepInput) -> StepOutput:
    """Fails on its first call of a run's input, then answers."""
    FLAKY_CALLS.append(str(step_input.input))
    if FLAKY_CALLS.count(str(step_input.input)) == 1:
        raise RuntimeError("the printer is out of paper")
    return StepOutput(content=f"Printed: {step_input.input}")


def polish(step_input: StepInput) -> StepOutput:
    """The letter in the tone the person chose (a router's own output is its summary)."""
    return StepOutput(content=f"Polished: {step_input.get_step_content('casual') or step_input.get_step_content('formal')}")


WORKFLOWS = [
    Workflow(
        id="order-flow", name="Order Flow", description="A form for its input, then a loop of two",
        input_schema={
            "type": "object",
            "properties": {
                "item": {"type": "string", "description": "What to order"},
                "count": {"type": "integer"},
                "rush": {"type": "boolean"},
                "size": {"enum": ["S", "M", "L"]},
            },
            "required": ["item", "count"],
        },
        steps=[Step(name="order", executor=order), Loop(name="repeat", steps=[Step(name="tick", executor=tick)], max_iterations=2)],
    ),
    Workflow(
        id="letter-flow", name="Letter Flow",
        steps=[
            Step(name="greet", executor=greet, human_review=HumanReview(
                requires_user_input=True, user_input_message="Who is the letter for?",
                user_input_schema=[{"name": "recipient", "field_type": "str"}, {"name": "copies", "field_type": "int"}])),
            Router(name="tone", selector=lambda step_input: [], choices=[Step(name="formal", executor=formal), Step(name="casual", executor=casual)],
                   human_review=HumanReview(requires_user_input=True, user_input_message="Which tone?")),
            Step(name="polish", executor=polish, human_review=HumanReview(requires_output_review=True, output_review_message="Keep this letter?")),
        ],
    ),
    Workflow(
        id="guard-flow", name="Guard Flow",
        steps=[Step(name="clean", agent=Agent(id="cleaner", name="Cleaner", model="offline:demo", tools=[delete_file]))],
    ),
    Workflow(
        id="print-flow", name="Print Flow",
        steps=[Step(name="print", executor=flaky, max_retries=0, human_review=HumanReview(on_error="pause"))],
    ),
]
