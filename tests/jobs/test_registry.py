"""Job types register their execute and their lifecycle hooks with the queue (jobs.registry): the
worker goes through the registry, a type nothing registered fails with its reason (once, never a
crash loop), and observers hear of cancels, lost workers, retries and ends in the transaction
that makes them."""
from __future__ import annotations

import ast
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from jobs.loop_worker import LoopWorker
from jobs.models import Job, JobStatus
from jobs.registry import job_handler, job_hook_register, job_type_execute
from jobs.services.execution import execute_plain_job
from jobs.services.jobs import job_cancel, job_enqueue, job_requeue, job_run
from jobs.services.claims import job_claim
from jobs.services.reaper import WORKER_LOST, job_reap
from sessions.models import RunStatus
from tests.agents.conftest import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

HOOKED, FAILING_HOOK = "test-hooked", "test-hook-fails"
heard: list[tuple[str, str, dict]] = []


@job_handler(HOOKED, FAILING_HOOK)
def _nothing_to_do(job: Job, worker: str) -> str:
    return execute_plain_job(job, worker, lambda job, report: report(done=1))


def _recorder(event: str):
    def hook(job: Job, **details) -> None:
        # What the hook sees is the job's row inside the change: the new status, not committed yet.
        status = Job.objects.unscoped("test").filter(pk=job.pk).values_list("status", flat=True).first()
        heard.append((event, job.pk, {**details, "status_then": status}))

    return hook


for _event in ("cancelled", "lost", "requeued", "ended"):
    job_hook_register(_event, HOOKED, hook=_recorder(_event))


def _refuse(job: Job, **details) -> None:
    raise RuntimeError("an observer failed")


job_hook_register("cancelled", FAILING_HOOK, hook=_refuse)


@pytest.fixture(autouse=True)
def no_worker(settings):
    settings.EMBEDDED_WORKER = False  # only these tests claim
    settings.AGENTOS_BACKGROUND_MAX_CONCURRENCY = 10
    settings.AGENTOS_BACKGROUND_MAX_PER_USER = 10
    heard.clear()


def _job(job_id: str) -> Job:
    return Job.objects.unscoped("test").get(pk=job_id)


def test_a_job_of_a_type_nothing_registered_fails_once_with_its_reason_and_the_worker_goes_on():
    stranger = Job.objects.create(id="j-stranger", job_type="from-a-newer-release", user_id="alice", payload={}, max_attempts=3)
    loop = LoopWorker(1, name="w-registry").start()
    try:
        loop.wake()
        wait_for(lambda: _job(stranger.pk).status == JobStatus.FAILED)
        # The next job still runs on the same loop: the unknown one neither crashed nor blocked it.
        known = job_enqueue(job_type=HOOKED, owner_id="alice", payload={})
        loop.wake()
        wait_for(lambda: _job(known.pk).status == JobStatus.COMPLETED)
        assert loop.running
    finally:
        loop.stop()
    failed = _job(stranger.pk)
    assert (failed.status, failed.attempt, failed.lease_expires_at) == (JobStatus.FAILED, 1, None)
    assert failed.error == "No handler for jobs of type 'from-a-newer-release' in this worker (is it running an older release?)"
    # Settled, not left to its lease: the reaper has nothing to retry, attempts left or not.
    assert job_reap(now=timezone.now() + timedelta(hours=1), trusted=False) == ([], [])


def test_observers_hear_a_cancel_with_its_reason_and_stage_inside_the_change():
    queued = job_enqueue(job_type=HOOKED, owner_id="alice", payload={})
    assert job_cancel(job_id=queued.pk, reason="the content was deleted")
    assert heard == [("cancelled", queued.pk, {"reason": "the content was deleted", "stage": "PENDING", "status_then": JobStatus.CANCELLED})]


def test_observers_hear_a_lost_worker_retried_then_failed_and_an_operators_retry():
    queued = job_enqueue(job_type=HOOKED, owner_id="alice", payload={}, max_attempts=2)
    later = timezone.now() + timedelta(seconds=django_settings.AGENTOS_BACKGROUND_LEASE_SECONDS + 1)
    assert job_claim(worker="w-doomed").pk == queued.pk
    assert job_reap(now=later, trusted=False) == ([queued.pk], [])
    Job.objects.unscoped("test").filter(pk=queued.pk).update(available_at=timezone.now())
    assert job_claim(worker="w-doomed-too").attempt == 2
    assert job_reap(now=later + timedelta(seconds=django_settings.AGENTOS_BACKGROUND_LEASE_SECONDS + 1), trusted=False) == ([], [queued.pk])
    assert job_requeue(job_id=queued.pk) is not None
    assert heard == [
        ("lost", queued.pk, {"retrying": True, "error": "", "status_then": JobStatus.QUEUED}),
        ("lost", queued.pk, {"retrying": False, "error": WORKER_LOST, "status_then": JobStatus.FAILED}),
        ("requeued", queued.pk, {"status_then": JobStatus.QUEUED}),
    ]


def test_observers_hear_the_end_its_execute_wrote():
    queued = job_enqueue(job_type=HOOKED, owner_id="alice", payload={})
    assert job_run(job_claim(worker="w1"), "w1") == RunStatus.COMPLETED
    assert heard == [("ended", queued.pk, {"status": RunStatus.COMPLETED, "status_then": JobStatus.COMPLETED})]


def test_an_observer_that_fails_undoes_the_change_it_observed():
    queued = job_enqueue(job_type=FAILING_HOOK, owner_id="alice", payload={})
    with pytest.raises(RuntimeError, match="an observer failed"):
        job_cancel(job_id=queued.pk, reason="stop")
    assert _job(queued.pk).status == JobStatus.QUEUED  # nothing half-done: the job may still be cancelled


def test_the_run_job_types_are_registered_by_the_apps_that_own_them():
    from agents.pipeline.background import run_job_execute
    from agents.pipeline.workflow_branches import BRANCH_JOB_TYPE, branch_job_execute

    assert {job_type: job_type_execute(job_type) for job_type in ("run", "continue", "branch", BRANCH_JOB_TYPE)} == {
        "run": run_job_execute, "continue": run_job_execute, "branch": run_job_execute, BRANCH_JOB_TYPE: branch_job_execute,
    }
    for job_type in ("knowledge-ingest", "metrics_refresh", "eval", "eval-batch", "post_hooks"):
        assert job_type_execute(job_type) is not None, job_type


CONSUMERS = ("agents", "knowledge", "evals", "metrics", "scheduler")


def test_the_queue_imports_none_of_its_consumers():
    root = Path(__file__).resolve().parents[2] / "jobs"
    imported: dict[str, list[str]] = {}
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            )
            for name in names:
                if name.split(".")[0] in CONSUMERS:
                    imported.setdefault(str(path.relative_to(root)), []).append(name)
    assert imported == {}
