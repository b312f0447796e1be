"""Stored conversations get their branches and origins as the chat showed them (migration 0005)."""
from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from sessions.models import Run, Session

BEFORE, AFTER = "0004_run_updated_index", "0005_run_origin_and_branches"


def _migrate(target: str):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([("agno_sessions", target)])
    return executor.loader.project_state(("agno_sessions", target)).apps


def _every_migration_applied() -> None:
    """Later migrations of other apps may have gone back with this one: the schema is the
    code's again after the test (servers started on the test database refuse an older one)."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_stored_edits_regenerations_and_origins_are_filled_in() -> None:
    old = _migrate(BEFORE)
    try:
        sessions, runs = old.get_model("agno_sessions", "Session")._base_manager, old.get_model("agno_sessions", "Run")._base_manager
        talk = sessions.create(session_id="s-talk", user_id="alice", component_id="assistant")
        for index, (run_id, status, data) in enumerate([
            ("r1", "COMPLETED", {}),
            ("r2", "COMPLETED", {}),
            ("r3", "COMPLETED", {}),
            ("r4", "COMPLETED", {"forked_from_run_id": "r2"}),  # r2 edited: beside it, after r1
            ("r5", "REGENERATED", {}),
            ("r6", "COMPLETED", {"regenerated_from": "r5"}),  # r5 answered again, in its place
        ]):
            runs.create(run_id=run_id, session=talk, user_id="alice", run_index=index, status=status, run_data=data)
        runs.create(run_id="r6-member", session=talk, user_id="alice", run_index=6, parent_run_id="r6", status="COMPLETED")
        flow = sessions.create(session_id="s-flow", user_id="alice", session_type="workflow")
        runs.create(run_id="w1", session=flow, user_id="alice", run_index=0, run_type="workflow", status="COMPLETED")
        runs.create(run_id="w1-step", session=flow, user_id="alice", run_index=1, parent_run_id="w1", status="COMPLETED")
        case = sessions.create(session_id="eval_e1_1", user_id="alice")
        runs.create(run_id="e1", session=case, user_id="alice", run_index=0, status="COMPLETED")
    finally:
        _migrate(AFTER)
        _every_migration_applied()

    stored = {run.pk: run for run in Run.all_users.all()}
    assert {run_id: stored[run_id].previous_run_id for run_id in ("r1", "r2", "r3", "r4", "r5", "r6")} == {
        "r1": None, "r2": "r1", "r3": "r2", "r4": "r1", "r5": "r4", "r6": "r4",
    }
    # The newest version at each branch point is the active one: what the chat showed.
    assert sorted(run_id for run_id in ("r1", "r2", "r3", "r4", "r5", "r6") if stored[run_id].branch_active) == ["r1", "r4", "r6"]
    origins = {run_id: run.origin for run_id, run in stored.items()}
    assert origins == {
        "r1": "api", "r2": "api", "r3": "api", "r4": "api", "r5": "api", "r6": "api", "r6-member": "team_member",
        "w1": "api", "w1-step": "workflow_step", "e1": "eval",
    }
    assert dict(Session.all_users.values_list("session_id", "origin")) == {"s-talk": "api", "s-flow": "api", "eval_e1_1": "eval"}
