"""The demo team `make run` serves beside the seeded demo agent (AGENT_MODULES=agents.demo).

Teams are defined in code, so the demo's is here rather than seeded into the database like the
demo agent. Like that agent it runs on OpenAI when OPENAI_API_KEY is set, else on the offline model.
``FUNCTIONS`` are the functions a workflow composed in the admin may name (as a step, a
Condition's evaluator, a Router's selector or a Loop's end condition).
"""
from __future__ import annotations

import os

from agents.runtime import Agent, CalculatorTools, StepInput, StepOutput, Team

MODEL = "openai:gpt-4o-mini" if os.environ.get("OPENAI_API_KEY") else "offline:demo"

AGENTS: list[Agent] = []  # the members answer through the team only

TEAMS = [
    Team(
        id="demo-team",
        name="Demo Team",
        description="A researcher and a writer: the leader hands each part of the question to the member it fits.",
        members=[
            Agent(id="demo-researcher", name="Researcher", description="Finds facts and works out numbers", model=MODEL, tools=[CalculatorTools()]),
            Agent(id="demo-writer", name="Writer", description="Writes clear, short prose", model=MODEL),
        ],
        mode="coordinate",
        model=MODEL,
        instructions="Delegate research and arithmetic to the Researcher and the final wording to the Writer, then answer.",
        add_history_to_context=True,
    ),
]


def combine(step_input: StepInput) -> StepOutput:
    """A step: every earlier step's output, one section each (after a Parallel, say)."""
    return StepOutput(content=step_input.get_all_previous_content() or step_input.get_input_as_string() or "")


def is_question(step_input: StepInput) -> bool:
    """A Condition's evaluator: the workflow's input ends with a question mark."""
    return str(step_input.input or "").rstrip().endswith("?")


def long_enough(outputs: list[StepOutput]) -> bool:
    """A Loop's end condition: some output of the iteration has 50 words or more."""
    return any(len(str(output.content or "").split()) >= 50 for output in outputs)


FUNCTIONS = [combine, is_question, long_enough]
