"""Code agents and a team with knowledge (added to AGENT_MODULES by test_knowledge_runs.py)."""
from __future__ import annotations

from engine import Agent, StaticKnowledge, Team

HANDBOOK = StaticKnowledge(
    "Handbook",
    [
        {"content": "Background jobs are claimed with a lease and reaped when a worker dies.", "name": "jobs.md", "content_id": "c-jobs", "meta_data": {"topic": "jobs"}},
        {"content": "Every run is one row; its events are stored in order.", "name": "runs.md", "content_id": "c-runs", "meta_data": {"topic": "runs"}},
        {"content": "Alice's note: the launch code word is heron.", "name": "alice.md", "user_id": "alice", "meta_data": {"topic": "notes"}},
    ],
    id="handbook",
    description="How Agno Site works",
)

AGENTS = [
    Agent(id="kb-agent", name="KB Agent", knowledge=HANDBOOK),
    Agent(id="kb-context-agent", name="KB Context Agent", knowledge=HANDBOOK, search_knowledge=False, add_knowledge_to_context=True),
]

TEAMS = [
    Team([Agent(id="kb-writer", name="KB Writer")], id="kb-team", name="KB Team", knowledge=HANDBOOK),
]
