"""An agent with learning on, for the learning tests (added to AGENT_MODULES by them)."""
from __future__ import annotations

from engine import Agent, LearningMachine, Team

AGENTS = [
    Agent(id="learner", name="Learner", model="offline:demo", enable_learning=True),
    # Learning on clears the legacy memory pair: this agent writes no agno_memories row.
    Agent(id="learner-memories-only", name="Learner (memories only)", model="offline:demo", learning=LearningMachine(name="memories", user_profile=False)),
    # The agentic stores (engine.learning_tools): entities under namespace "user" and a decision log;
    # entities under the shared "global" namespace.
    Agent(id="learner-full", name="Learner (full)", model="offline:demo", learning=LearningMachine(name="full", entity_namespace="user", decision_log=True)),
    Agent(id="learner-global", name="Learner (global entities)", model="offline:demo", learning=LearningMachine(name="global", entity_namespace="global", user_memory=False)),
    Agent(id="learner-legacy-off", name="Learner (legacy pair cleared)", model="offline:demo", update_memory_on_run=True, enable_learning=True),
]

TEAMS = [
    Team(
        id="learning-team", name="Learning Team", model="offline:demo", enable_learning=True, update_memory_on_run=True,
        members=[Agent(id="learning-team-member", name="Member", model="offline:demo")],
    ),
]
