"""Code agents with hooks and guardrails, for tests/api/test_hooks_api.py (added to AGENT_MODULES there)."""
from __future__ import annotations

import threading

from engine import Agent, CalculatorTools, Step, Steps, Team, Workflow
from engine.guardrails import PIIDetectionGuardrail, PromptInjectionGuardrail
from engine.hooks import hook

# What the background hook saw, and the gate it waits at: open, unless a test closes it to make
# the hook slow (and opens it again). Closed by default, every run of "guarded" outside those
# tests held its worker for the hook's full 10 s (tests/traces, tests/ui), waited out when the
# test's worker stopped.
audited: list[tuple[str, str, str | None]] = []
audit_gate = threading.Event()
audit_gate.set()


@hook(run_in_background=True)
def audit(run_output, user_id):
    audit_gate.wait(10)
    audited.append((run_output["run_id"], run_output["status"], user_id))


def sign(run_output):
    run_output["content"] += " [checked]"


AGENTS = [
    Agent(id="guarded", name="Guarded", pre_hooks=[PIIDetectionGuardrail(), PromptInjectionGuardrail()], post_hooks=[sign, audit]),
    Agent(id="masked", name="Masked", pre_hooks=[PIIDetectionGuardrail(mask_pii=True)]),
    Agent(id="budgeted", name="Budgeted", tools=[CalculatorTools()], token_budget=5),
]
# What the members' and steps' background hooks saw: (their agent's id, run id, status, user).
inner_audited: list[tuple[str, str, str, str | None]] = []


@hook(run_in_background=True)
def inner_audit(run_output, agent, user_id):
    inner_audited.append((agent.id, run_output["run_id"], run_output["status"], user_id))


TEAMS = [
    Team([Agent(id="guarded-member", name="Member")], id="guarded-team", name="Guarded Team", pre_hooks=[PromptInjectionGuardrail()]),
    Team([Agent(id="audited-member", name="Audited Member", post_hooks=[inner_audit])], id="audited-team", name="Audited Team"),
]
WORKFLOWS = [Workflow(id="audited-flow", name="Audited Flow", steps=[
    Steps(name="outer", steps=[Step(name="write", agent=Agent(id="audited-step-agent", name="Audited Step", post_hooks=[inner_audit]))]),
])]

# The post-hooks an agent or team composed in the admin may name (agents.post_hooks).
POST_HOOKS = [sign, audit]
