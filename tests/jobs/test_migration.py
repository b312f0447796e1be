"""The job queue's models moved from ``agents`` to ``jobs`` with their tables: a database migrated
to the release before the move keeps every job, cancel intent and worker beat, and the
permissions granted on them (jobs 0001, agents 0017)."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from jobs.models import CancelIntent, Job, JobStatus, ProcessBeat


BEFORE = ("agents", "0016_post_hooks")
AFTER = [("jobs", "0001_initial"), ("agents", "0017_job_models_move_to_jobs_app")]


def _migrate(targets: list[tuple[str, str | None]]) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor


@pytest.fixture
def every_migration_applied_after():
    """The test takes the schema back before the move; afterwards every migration is applied
    again, or later tests (and servers started on the test database) would find it behind."""
    yield
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("every_migration_applied_after")
def test_jobs_intents_beats_and_permissions_survive_the_move() -> None:
    # Unapplying jobs 0001 unapplies agents 0017 with it: the state of the release before the move.
    executor = _migrate([("jobs", None)])
    applied = executor.loader.applied_migrations
    assert BEFORE in applied and AFTER[0] not in applied and AFTER[1] not in applied
    before = executor.loader.project_state(BEFORE).apps
    old_job = before.get_model("agents", "Job")._base_manager
    now = timezone.now()
    old_job.create(
        id="run-queued", user_id="alice", job_type="run", component_id="assistant", session_id="s1",
        payload={"input": "hello"}, status="queued", max_attempts=2, idempotency_scope="alice", idempotency_key="k1",
    )
    old_job.create(
        id="run-running", user_id="bob", job_type="continue", component_type="team", status="running", attempt=1,
        locked_by="celery-host-1", lease_expires_at=now + timedelta(seconds=30), progress={"done": 3},
    )
    before.get_model("agents", "CancelIntent")._base_manager.create(run_id="run-running", user_id="bob")
    before.get_model("agents", "ProcessBeat")._base_manager.create(name="celery-host-1", beat_at=now)
    # What an operator was granted on the old app's model (content types as the old release made them).
    old_type = ContentType.objects.get(app_label="agents", model="job")
    operators = Group.objects.create(name="operators")
    operators.permissions.add(Permission.objects.get(content_type=old_type, codename="change_job"))
    operator = User.objects.create_user("ops")
    operator.groups.add(operators)

    _migrate(AFTER)

    assert {
        job.pk: (job.user_id, job.job_type, job.component_type, job.status, job.attempt, job.locked_by, job.progress, job.idempotency_key)
        for job in Job.all_users.order_by("pk")
    } == {
        "run-queued": ("alice", "run", "agent", JobStatus.QUEUED, 0, "", {}, "k1"),
        "run-running": ("bob", "continue", "team", JobStatus.RUNNING, 1, "celery-host-1", {"done": 3}, None),
    }
    assert list(CancelIntent.all_users.values_list("run_id", "user_id")) == [("run-running", "bob")]
    assert list(ProcessBeat.objects.values_list("name", flat=True)) == ["celery-host-1"]
    # The content type itself moved (same id), so the group's permission now reads jobs.change_job.
    assert ContentType.objects.get(pk=old_type.pk).app_label == "jobs"
    assert not ContentType.objects.filter(app_label="agents", model__in=["job", "cancelintent", "processbeat"]).exists()
    assert User.objects.get(pk=operator.pk).has_perm("jobs.change_job")


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("every_migration_applied_after")
def test_the_move_changes_no_table() -> None:
    """State only: going back and forth creates, renames or drops no table and no index."""
    def schema() -> dict[str, set[str]]:
        with connection.cursor() as cursor:
            return {
                table: set(connection.introspection.get_constraints(cursor, table))
                for table in ("agno_jobs", "agno_cancel_intents", "agno_process_beats")
            }

    after = schema()
    _migrate([("jobs", None)])
    assert schema() == after
    _migrate(AFTER)
    assert schema() == after
