"""The agent the in-process benchmark runs: instant offline model, history on, no tools."""
from engine import Agent

AGENTS = [Agent(id="bench", name="Bench", model="offline:demo", add_history_to_context=True, num_history_runs=3)]
