"""A background workflow run's Parallel branches are jobs of one group: separate jobs that run at
once (not behind the session's one-run-at-a-time rule, which still holds for the session's
other runs), cancelled with their run, failing as their steps' ``on_error`` says, and reused by
a re-run of their parent."""
from __future__ import annotations

import httpx
import pytest

from jobs.models import Job, JobStatus
from agents.pipeline.workflow_branches import BRANCH_JOB_TYPE
from sessions.models import Run
from tests.agents.conftest import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

MODULE = "tests.agents.group_workflows"


@pytest.fixture(autouse=True)
def group_workflows(settings):
    settings.AGENT_MODULES = [*settings.AGENT_MODULES, MODULE]


def submit(base: str, workflow_id: str, **form: str) -> str:
    form = {"stream": "false", "background": "true", "user_id": "alice", **form}
    response = httpx.post(f"{base}/workflows/{workflow_id}/runs", data=form, timeout=30)
    assert response.status_code == 202, response.text
    return response.json()["run_id"]


def run_row(run_id: str) -> Run:
    return Run.objects.unscoped("test").get(pk=run_id)


def ended(run_id: str) -> str | None:
    status = run_row(run_id).status
    return status if status in ("COMPLETED", "ERROR", "CANCELLED") else None


def job(job_id: str) -> Job:
    return Job.objects.unscoped("test").get(pk=job_id)


def branches(run_id: str) -> list[Job]:
    return list(Job.objects.unscoped("test").filter(parent_job_id=run_id).order_by("branch_index"))


def overlapping(jobs: list[Job]) -> bool:
    """Every job had started before any of them ended: they ran at the same time."""
    return max(j.started_at for j in jobs) < min(j.completed_at for j in jobs)


def test_branches_are_jobs_of_one_group_and_run_at_once(live_api, worker) -> None:
    run_id = submit(live_api, "group-flow", message="/slow 1", session_id="g-1")
    assert wait_for(lambda: ended(run_id), timeout=60) == "COMPLETED"
    jobs = branches(run_id)
    assert [(j.job_type, j.group_id, j.branch_index, j.session_id, j.status) for j in jobs] == [
        (BRANCH_JOB_TYPE, run_id, n, "g-1", JobStatus.COMPLETED) for n in range(3)
    ]
    assert overlapping(jobs)  # the three slow answers were being written at once
    parent = job(run_id)
    assert parent.started_at < min(j.started_at for j in jobs) and max(j.completed_at for j in jobs) < parent.completed_at
    # Each branch's agent run is a child of the workflow run, and the results come in branch order.
    children = Run.objects.unscoped("test").filter(parent_run_id=run_id)
    assert sorted(child.component_id for child in children) == ["branch-a", "branch-b", "branch-c"]
    data = run_row(run_id).run_data
    assert [step["step_name"] for step in data["step_results"][0]["steps"]] == ["a", "b", "c"]
    assert data["content"].startswith("## PARALLEL EXECUTION RESULTS\n\n### ✅ SUCCESS: A\n")
    assert sorted(r["run_id"] for r in data["step_executor_runs"]) == sorted(child.pk for child in children)
    assert all(child.run_data["parent_run_id"] == run_id for child in children)
    # Each branch's events were the workflow run's while the branch still ran (followers see them live).
    from sessions.models import RunEvent

    stored = RunEvent.objects.unscoped("test").filter(run_id=run_id, event="StepStarted")
    started = {event.payload["step_name"]: event.created_at for event in stored}
    assert all(started[name] < branch.completed_at for name, branch in zip("abc", jobs))


def test_a_second_run_in_the_session_still_waits_behind_the_first(live_api, worker) -> None:
    first = submit(live_api, "group-flow", message="/slow 1", session_id="g-2")
    second = submit(live_api, "group-flow", message="/slow 0.2", session_id="g-2")
    for run_id in (first, second):
        assert wait_for(lambda: ended(run_id), timeout=60) == "COMPLETED"
    # The first run's branches ran beside it; the second run began only once the first had ended.
    assert overlapping(branches(first))
    assert job(second).started_at >= job(first).completed_at
    assert min(j.started_at for j in branches(second)) >= job(first).completed_at


def test_cancel_mid_parallel_cancels_the_branch_jobs(live_api, worker, settings) -> None:
    # Two may run beside their waiting parent: the third branch is still queued when the cancel comes.
    settings.AGENTOS_BACKGROUND_MAX_PER_USER = 2
    run_id = submit(live_api, "group-flow", message="/slow 20", session_id="g-3")
    wait_for(lambda: [j.status for j in branches(run_id)].count(JobStatus.RUNNING) == 2, timeout=30)
    assert [j.status for j in branches(run_id)].count(JobStatus.QUEUED) == 1
    cancelled = httpx.post(f"{live_api}/workflows/group-flow/runs/{run_id}/cancel", params={"session_id": "g-3"}, timeout=30)
    assert cancelled.status_code == 200, cancelled.text
    assert wait_for(lambda: ended(run_id), timeout=30) == "CANCELLED"
    assert wait_for(lambda: all(j.status == JobStatus.CANCELLED for j in branches(run_id)), timeout=30)
    assert job(run_id).status == JobStatus.CANCELLED


def test_a_skipped_branch_fails_softly_and_a_failing_one_fails_the_run(live_api, worker) -> None:
    soft = submit(live_api, "branch-errors", message="fail-flaky", session_id="g-4")
    assert wait_for(lambda: ended(soft), timeout=60) == "COMPLETED"
    data = run_row(soft).run_data
    [mixed, after] = data["step_results"]
    assert [(s["step_name"], s["success"]) for s in mixed["steps"]] == [("flaky", False), ("strict", True), ("counted", True)]
    assert after["content"].startswith("## PARALLEL EXECUTION RESULTS\n\n### ❌ FAILURE: FLAKY\n")
    assert data["session_state"]["branches_seen"] == 1  # a branch's session state comes back

    hard = submit(live_api, "branch-errors", message="fail-strict", session_id="g-5")
    assert wait_for(lambda: ended(hard), timeout=60) == "ERROR"
    assert run_row(hard).run_data["content"] == "ValueError: strict broke"
    # The branches themselves ran to their ends; their failure is their result, not a lost job.
    assert [j.status for j in branches(hard)] == [JobStatus.COMPLETED] * 3
    assert branches(hard)[1].result["error"] == "ValueError: strict broke"


def _in_a_thread(job_, worker_name: str):
    """A worker's attempt at a run job, on an event loop of its own (as a worker process runs it)."""
    import asyncio
    import threading

    from jobs.services.jobs import job_execute

    outcome: list[str] = []
    thread = threading.Thread(target=lambda: outcome.append(asyncio.run(job_execute(job_, worker_name))))
    thread.start()
    return thread, outcome


def test_a_rerun_of_the_workflow_run_reuses_the_branches_that_had_finished(live_api, worker, settings) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from jobs.services.claims import job_claim

    from jobs.services.jobs import job_run
    from jobs.services.reaper import job_reap

    settings.EMBEDDED_WORKER = False  # this test is every worker: it claims by hand
    settings.AGENTOS_BACKGROUND_MAX_ATTEMPTS = 2
    settings.AGENTOS_BACKGROUND_RETRY_DELAY_SECONDS = 0
    settings.AGENTOS_BACKGROUND_LEASE_SECONDS = 3  # renewed every second: a lost lease is seen soon
    run_id = submit(live_api, "group-flow", message="/slow 0.3", session_id="g-6")
    first = job_claim(worker="doomed")
    assert first.pk == run_id
    doomed, doomed_outcome = _in_a_thread(first, "doomed")
    wait_for(lambda: len(branches(run_id)) == 3)
    # Two branches end while the run's first attempt waits for them; then its worker is lost.
    done = [job_claim(worker="w2") for _ in range(2)]
    assert all(job_run(branch, "w2") == "COMPLETED" for branch in done)
    # The reaper's clock past the lease (the run is queued again, available from that moment).
    assert job_reap(now=timezone.now() + timedelta(seconds=settings.AGENTOS_BACKGROUND_LEASE_SECONDS + 1)) == ([run_id], [])
    doomed.join(30)
    assert doomed_outcome == ["LOST"]  # it saw its lease gone and wrote nothing
    # The lost attempt did not stop the branch still queued: the next attempt waits for it.
    [last] = [j for j in branches(run_id) if j.status == JobStatus.QUEUED]
    assert job_claim(worker="w2").pk == last.pk  # another worker takes it, and is still at it when ...
    second = wait_for(lambda: job_claim(worker="w3"))  # ... the run's second attempt starts
    assert (second.pk, second.attempt) == (run_id, 2)
    rerun, rerun_outcome = _in_a_thread(second, "w3")
    assert job_run(job(last.pk), "w2") == "COMPLETED"
    rerun.join(30)
    assert rerun_outcome == ["COMPLETED"]
    jobs = branches(run_id)
    assert [(j.status, j.attempt) for j in jobs] == [(JobStatus.COMPLETED, 1)] * 3  # each branch ran once
    assert all(job(j.pk).completed_at < second.started_at for j in done)
    data = run_row(run_id).run_data
    assert [step["step_name"] for step in data["step_results"][0]["steps"]] == ["a", "b", "c"]
    assert Run.objects.unscoped("test").filter(parent_run_id=run_id).count() == 3


def test_a_worker_with_room_for_one_job_runs_the_branches_its_waiting_run_gave_up_its_place_to(live_api, worker, settings) -> None:
    settings.WORKER_RUNS_PER_PROCESS = 1  # the run waiting for its group must not keep the only place
    run_id = submit(live_api, "group-flow", message="one at a time", session_id="g-7")
    assert wait_for(lambda: ended(run_id), timeout=60) == "COMPLETED"
    jobs = branches(run_id)
    assert [j.status for j in jobs] == [JobStatus.COMPLETED] * 3
    assert {j.locked_by for j in jobs} == {job(run_id).locked_by}  # all on the one loop, one after another
