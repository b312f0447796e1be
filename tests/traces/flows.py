"""A workflow for the trace tests (added to AGENT_MODULES by test_tracing.py): an agent step, then
a Parallel of two slow function steps."""
from __future__ import annotations

import asyncio

from engine import Agent, Parallel, Step, Workflow


async def _slow(step_input):
    await asyncio.sleep(0.05)
    return f"done: {step_input.input}"


AGENTS = [
    Agent(id="untraced-agent", name="Never traced", tracing=False),
    Agent(id="traced-agent", name="Always traced", tracing=True),
]

WORKFLOWS = [Workflow(
    id="traced-flow", name="Traced flow",
    steps=[
        Step(name="first", agent=Agent(id="trace-step-agent", name="Trace step agent")),
        Parallel(Step(name="left", executor=_slow), Step(name="right", executor=_slow), name="both"),
    ],
)]

# An agent that reasons first (offline models both): its reasoning is a span with the reasoning
# model's call and the reasoning step inside.
AGENTS.append(Agent(id="reasoning-agent", name="Reasoning agent", model="offline:demo", reasoning_model="offline:thinker"))
