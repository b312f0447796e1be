"""The agent the tracing bench runs: instant offline model, history on, one tool."""
from engine import Agent


def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


AGENTS = [
    Agent(id="traced", name="Traced", model="offline:demo", add_history_to_context=True, num_history_runs=3, tools=[add]),
    # The provider path: the OpenAI SDK against bench.fake_openai (OPENAI_BASE_URL), which calls add.
    Agent(id="traced-openai", name="Traced (OpenAI)", model="openai:gpt-4o-mini", add_history_to_context=True, num_history_runs=3, tools=[add]),
]
