"""Code agents with hooks and guardrails, for tests/api/test_hooks_api.py (added to AGENT_MODULES there)."""
from __future__ import annotations

import threading

from engine import Agent, CalculatorTools, Team
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
TEAMS = [Team([Agent(id="guarded-member", name="Member")], id="guarded-team", name="Guarded Team", pre_hooks=[PromptInjectionGuardrail()])]
