"""Code-defined agents and teams the test suite runs (AGENT_MODULES=tests.agents_for_tests)."""
from __future__ import annotations

from agents.runtime import Agent, CalculatorTools, Team, tool


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
