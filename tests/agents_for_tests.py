"""Code-defined agents, teams and workflows the test suite runs (AGENT_MODULES=tests.agents_for_tests)."""
from __future__ import annotations

from engine import Agent, CalculatorTools, HumanReview, Parallel, Step, Team, Workflow, tool
from engine.workflow_types import StepInput, StepOutput


@tool(requires_confirmation=True)
def delete_file(path: str) -> str:
    """Delete a file (a test tool that needs confirmation).

    Args:
        path: The file to delete.
    """
    return f"deleted {path}"


@tool(requires_user_input=True, user_input_fields=["amount"])
def wire_money(to: str, amount: int) -> str:
    """Wire money (a test tool that asks the user for the amount).

    Args:
        to: The recipient.
        amount: How much, filled in by the user.
    """
    return f"wired {amount} to {to}"


AGENTS = [
    Agent(
        id="assistant",
        name="Assistant",
        description="The offline test assistant",
        model="offline:demo",
        tools=[CalculatorTools()],
        add_history_to_context=True,
        num_history_runs=3,
        update_memory_on_run=True,
    ),
    Agent(id="hitl-agent", name="HITL Agent", model="offline:demo", tools=[delete_file, wire_money]),
    Agent(
        id="openai-agent",
        name="OpenAI Agent",
        model="openai:gpt-4o-mini",
        tools=[CalculatorTools()],
        add_history_to_context=True,
        num_history_runs=2,
    ),
]


RESEARCHER = Agent(id="researcher", name="Researcher", description="Finds facts", model="offline:demo", add_history_to_context=True)
WRITER = Agent(id="writer", name="Writer", description="Writes prose", model="offline:demo", tools=[CalculatorTools()])

TEAMS = [
    Team(
        id="research-team", name="Research Team", description="A researcher and a writer", members=[RESEARCHER, WRITER],
        mode="coordinate", model="offline:demo", add_history_to_context=True,
    ),
    Team(
        id="hitl-team", name="HITL Team", members=[Agent(id="hitl-member", name="HITL Member", model="offline:demo", tools=[delete_file])],
        mode="route", model="offline:demo",
    ),
]


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


def exclaim(step_input: StepInput) -> StepOutput:
    """A function step: the previous step's answer, with an exclamation mark."""
    return StepOutput(content=f"{step_input.previous_step_content or step_input.input}!")


def asks_for_facts(step_input: StepInput) -> bool:
    """A Condition's evaluator: the input asks for facts."""
    return "fact" in str(step_input.input).lower()


def by_length(step_input: StepInput) -> str:
    """A Router's selector: the step named "short" for a short input, else "long"."""
    return "short" if len(str(step_input.input)) < 20 else "long"


def long_enough(outputs: list[StepOutput]) -> bool:
    """A Loop's end condition: an output of the iteration is over 30 characters."""
    return any(len(str(output.content or "")) > 30 for output in outputs)


# What a workflow composed in the admin may name (as a step's executor, an evaluator, a selector
# or an end condition), by function name.
FUNCTIONS = [shout, exclaim, asks_for_facts, by_length, long_enough]

# The chat's quick prompts per component (/config's chat.quick_prompts), as agents.demo declares its own.
QUICK_PROMPTS = {
    "assistant": ["Say hello", "What is 6 times 7?"],
    "review-flow": ["Ship it"],
    "no-such-agent": ["Listed for nothing live: left out of /config"],
}
