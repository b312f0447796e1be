"""The approval agent the approvals tests run (added to AGENT_MODULES by their conftest)."""
from __future__ import annotations

from engine import Agent, Step, Team, Workflow, approval, tool
from tests.agents_for_tests import shout

# Every wire_funds call that ran, in this process (the tests' worker runs here too): a tool
# that needs an approval must run once it is approved, and never otherwise.
WIRED: list[str] = []


@approval
@tool
def wire_funds(to: str, amount: int) -> str:
    """Wire money: an operator approves it first.

    Args:
        to: The recipient.
        amount: How much.
    """
    WIRED.append(f"{amount} to {to}")
    return f"wired {amount} to {to}"


@approval(type="audit")
@tool(requires_confirmation=True)
def delete_record(record: str) -> str:
    """Delete a record: the user confirms it, and the decision is kept for audit.

    Args:
        record: The record to delete.
    """
    return f"deleted {record}"


@tool(requires_approval=True, requires_user_input=True, user_input_fields=["amount"])
def refund(order: str, amount: int) -> str:
    """Refund an order: an operator approves it and says how much.

    Args:
        order: The order.
        amount: How much, filled in by the operator.
    """
    return f"refunded {amount} on {order}"


APPROVAL_AGENT = Agent(id="approval-agent", name="Approval Agent", model="offline:demo", tools=[wire_funds, delete_record, refund])

AGENTS = [APPROVAL_AGENT]


TEAMS = [
    Team(
        id="approval-team", name="Approval Team", mode="route", model="offline:demo",
        members=[Agent(id="treasurer", name="Treasurer", model="offline:demo", tools=[wire_funds])],
    ),
    # A member that is an agent of its own too: its run inside the team's is a run of that agent.
    Team(id="approval-crew", name="Approval Crew", mode="route", model="offline:demo", members=[APPROVAL_AGENT]),
]


# An agent step whose @approval tool pauses the workflow; then a function step.
WORKFLOWS = [
    Workflow(id="approval-flow", name="Approval Flow", steps=[Step(name="pay", agent=APPROVAL_AGENT), Step(name="shout", executor=shout)]),
    Workflow(id="treasury-flow", name="Treasury Flow", steps=[Step(name="treasury", team=TEAMS[0]), Step(name="shout", executor=shout)]),
]
