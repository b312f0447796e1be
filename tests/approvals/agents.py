"""The approval agent the approvals tests run (added to AGENT_MODULES by their conftest)."""
from __future__ import annotations

from agents.runtime import Agent, Team, approval, tool


@approval
@tool
def wire_funds(to: str, amount: int) -> str:
    """Wire money: an operator approves it first.

    Args:
        to: The recipient.
        amount: How much.
    """
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


AGENTS = [
    Agent(id="approval-agent", name="Approval Agent", model="offline:demo", tools=[wire_funds, delete_record, refund]),
]


TEAMS = [
    Team(
        id="approval-team", name="Approval Team", mode="route", model="offline:demo",
        members=[Agent(id="treasurer", name="Treasurer", model="offline:demo", tools=[wire_funds])],
    ),
]
