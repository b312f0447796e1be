"""The agent the tracing bench runs: instant offline model, history on, one tool."""
from agents.runtime import Agent


def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


AGENTS = [Agent(id="traced", name="Traced", model="offline:demo", add_history_to_context=True, num_history_runs=3, tools=[add])]
