"""The workflow bench.workflow_parallel serves from Agno Site (AGENT_MODULES=bench.workflow_agents).

It mirrors the workflow bench/agentos_reference/app.py builds with --parallel-workflow: a function
step, a ``Parallel`` of four agent branches, each on a model id of its own so that bench.fake_openai
can pace each one differently, and a function step that joins their answers.
"""
from __future__ import annotations

from engine import Agent, Parallel, Step, StepInput, StepOutput, Workflow

WORKFLOW_ID = "bench-workflow"
BRANCH_MODELS = ["bench-branch-1", "bench-branch-2", "bench-branch-3", "bench-branch-4"]


def prepare(step_input: StepInput) -> StepOutput:
    """The question the branches answer: the step before them costs no model call."""
    return StepOutput(content=f"Answer in one short paragraph: {step_input.input}")


def combine(step_input: StepInput) -> StepOutput:
    """The branches' answers joined: the step after them, also without a model call."""
    return StepOutput(content=f"Combined the branches' answers ({len(str(step_input.get_last_step_content()))} characters)")


# The branch agents are the workflow's alone, not agents of their own (AGENT_MODULES needs the list).
AGENTS: list[Agent] = []
WORKFLOWS = [
    Workflow(
        id=WORKFLOW_ID,
        name="Bench Workflow",
        steps=[
            prepare,
            Parallel(
                *[Step(name=f"branch-{n}", agent=Agent(id=model, name=f"Branch {n}", model=f"openai:{model}"))
                  for n, model in enumerate(BRANCH_MODELS, 1)],
                name="branches",
            ),
            combine,
        ],
    )
]
