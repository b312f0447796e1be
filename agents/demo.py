"""The demo team and docs agent `make run` serves beside the seeded demo agent (AGENT_MODULES=agents.demo).

Teams are defined in code, so the demo's is here rather than seeded into the database like the
demo agent. Like that agent it runs on OpenAI when OPENAI_API_KEY is set, else on the offline model.
``FUNCTIONS`` are the functions a workflow composed in the admin may name (as a step, a
Condition's evaluator, a Router's selector or a Loop's end condition).
The docs agent answers from a small handbook held in memory, so a knowledge search and the
sources under its answers can be seen without uploading anything.
"""
from __future__ import annotations

import os

from agents.runtime import Agent, CalculatorTools, StaticKnowledge, StepInput, StepOutput, Team

MODEL = "openai:gpt-4o-mini" if os.environ.get("OPENAI_API_KEY") else "offline:demo"

HANDBOOK = StaticKnowledge(
    "Agno Site handbook",
    [
        {"name": "Runs", "content": "A run is created the same way whatever the transport: it is committed RUNNING with its input before the model is called, and ends completed, error, cancelled or paused."},
        {"name": "Background jobs", "content": "Background jobs are committed rows first, then handed to Celery. A worker claims a job and holds a lease with heartbeats; a periodic reaper re-queues or fails expired leases, so a killed worker loses nothing."},
        {"name": "Tenancy", "content": "Every row that belongs to someone carries user_id, and the default manager refuses to be evaluated until it is scoped with for_user. A forgotten filter is an exception in tests, never a leak."},
        {"name": "Schedules", "content": "Schedules fire once: a fire first claims its (schedule, scheduled_for) row, and only the claimer submits, so replicas or a second beat never double-fire."},
        {"name": "Knowledge", "content": "Contents are ingested by background jobs that read, chunk and embed them. Chunks carry user_id; the tenant filter runs in the same query as the vector scan, so a user's top results are complete."},
        {"name": "Offline model", "content": "Without a provider key the built-in offline model answers: deterministic, no network, and clearly labelled as a demo. It searches the knowledge base when asked a question."},
    ],
    id="agno-site-handbook",
    description="A few facts about how Agno Site works (in memory)",
)

AGENTS: list[Agent] = [  # the team's members answer through the team only
    Agent(
        id="demo-docs",
        name="Docs Agent",
        description="Answers questions about Agno Site from its handbook and shows the sources it used",
        model=MODEL,
        knowledge=HANDBOOK,
        instructions="Answer from the knowledge base; say so when it has nothing on the question.",
        markdown=True,
    ),
]

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
