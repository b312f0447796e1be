"""Jobs that are not runs (knowledge ingestion, a metrics refresh) and jobs of one group (a
workflow's parallel steps): the handler registry, progress, cancel, failures, and the claim's
session rule for groups."""
from __future__ import annotations

import threading

import pytest

from jobs.models import Job, JobStatus
from jobs.registry import job_handler
from jobs.services.execution import execute_plain_job
from jobs.services.cancellation import cancel_request
from jobs.services.jobs import DuplicateJob, job_enqueue, job_run, job_submit
from jobs.services.claims import job_claim
from jobs.selectors import waiting_on
from sessions.models import Run

pytestmark = pytest.mark.django_db(transaction=True)

# What the test handlers saw, by job id.
seen: dict[str, list] = {}
release = threading.Event()


def _count_to(job: Job, report) -> None:
    for step in range(1, int(job.payload["steps"]) + 1):
        seen.setdefault(job.pk, []).append(step)
        report(done=step, total=job.payload["steps"])
        if job.payload.get("wait"):
            release.wait(5)
    if job.payload.get("fail"):
        raise ValueError("page 3 of report.pdf could not be read")


@job_handler("test-count")
def _count_handler(job: Job, worker: str) -> str:
    return execute_plain_job(job, worker, _count_to)


@pytest.fixture(autouse=True)
def no_worker(settings):
    settings.EMBEDDED_WORKER = False  # only these tests claim
    settings.AGENTOS_BACKGROUND_MAX_CONCURRENCY = 10
    settings.AGENTOS_BACKGROUND_MAX_PER_USER = 10
    seen.clear()
    release.clear()


def _job(job_id: str) -> Job:
    return Job.objects.unscoped("test").get(pk=job_id)


def test_a_job_without_a_run_or_a_session_runs_its_handler_and_records_progress():
    queued = job_enqueue(job_type="test-count", owner_id="alice", payload={"steps": 3})
    assert (queued.session_id, queued.status) == ("", JobStatus.QUEUED)
    claimed = job_claim(worker="w1")
    assert claimed.pk == queued.pk
    assert job_run(claimed, "w1") == "COMPLETED"
    done = _job(queued.pk)
    assert (done.status, done.progress, done.error) == (JobStatus.COMPLETED, {"done": 3, "total": 3}, "")
    assert seen[queued.pk] == [1, 2, 3]
    assert not Run.objects.unscoped("test").filter(pk=queued.pk).exists()


def test_a_key_accepts_one_job_of_its_type_and_owner_ever_and_is_apart_from_run_keys():
    first = job_enqueue(job_type="test-count", owner_id=None, payload={"steps": 1}, idempotency_key="periodic:60:1")
    assert job_run(job_claim(worker="w1"), "w1") == "COMPLETED"
    with pytest.raises(DuplicateJob) as duplicate:  # ended or not, the key stays taken
        job_enqueue(job_type="test-count", owner_id=None, payload={"steps": 1}, idempotency_key="periodic:60:1")
    assert duplicate.value.job.pk == first.pk
    other_owner = job_enqueue(job_type="test-count", owner_id="alice", payload={"steps": 1}, idempotency_key="periodic:60:1")
    # A client's Idempotency-Key on a run submission is another namespace: it neither finds the
    # job nor is refused because of it.
    run = job_submit(
        owner_id=None, session=None, session_id="s-key", component_id="assistant", payload={}, input={}, stream=False,
        idempotency_key="periodic:60:1",
    )
    assert not run.duplicate and len({first.pk, other_owner.pk, run.job.pk}) == 3


def test_a_handler_that_fails_ends_its_job_failed_with_a_reason_a_user_can_read():
    queued = job_enqueue(job_type="test-count", owner_id="alice", payload={"steps": 2, "fail": True})
    assert job_run(job_claim(worker="w1"), "w1") == "ERROR"
    failed = _job(queued.pk)
    assert (failed.status, failed.error, failed.progress["done"]) == (JobStatus.FAILED, "page 3 of report.pdf could not be read", 2)


def test_a_cancelled_job_stops_at_its_next_report():
    queued = job_enqueue(job_type="test-count", owner_id="alice", payload={"steps": 50, "wait": True})
    claimed = job_claim(worker="w1")
    outcome: list[str] = []
    worker = threading.Thread(target=lambda: outcome.append(job_run(claimed, "w1")))
    worker.start()
    cancel_request(run_id=queued.pk, user_id="alice")
    release.set()
    worker.join(10)
    assert outcome == ["CANCELLED"] and len(seen[queued.pk]) < 50
    assert _job(queued.pk).status == JobStatus.CANCELLED


def test_a_job_of_a_type_nothing_handles_fails_visibly():
    with pytest.raises(ValueError, match="no handler"):
        job_enqueue(job_type="nobody-handles-this", owner_id=None, payload={})
    job = Job.objects.create(id="j-unknown", job_type="from-a-newer-release", user_id=None, payload={})
    assert job_run(job_claim(worker="w1"), "w1") == "ERROR"
    assert _job(job.pk).status == JobStatus.FAILED and "from-a-newer-release" in _job(job.pk).error


def _run_job(session_id: str, group_id: str = "") -> str:
    accepted = job_submit(
        owner_id="alice", session=None, session_id=session_id, component_id="assistant", payload={}, input={"input_content": "hi"},
        stream=False, group_id=group_id,
    )
    return accepted.job.pk


def test_jobs_of_one_group_run_alongside_each_other_but_not_alongside_the_rest_of_their_session():
    step_a, step_b = _run_job("s1", group_id="wf-1"), _run_job("s1", group_id="wf-1")
    later = _run_job("s1")  # the conversation's next run: after the whole group
    assert {job_claim(worker="w1").pk, job_claim(worker="w2").pk} == {step_a, step_b}
    assert job_claim(worker="w3") is None
    assert waiting_on(_job(later)) in (step_a, step_b)


def test_a_group_waits_behind_what_its_session_started_before_it():
    first = _run_job("s1")
    grouped = _run_job("s1", group_id="wf-2")
    assert job_claim(worker="w1").pk == first
    assert job_claim(worker="w2") is None
    assert waiting_on(_job(grouped)) == first


def test_jobs_outside_any_session_never_wait_for_each_other():
    jobs = {job_enqueue(job_type="test-count", owner_id="alice", payload={"steps": 1}).pk for _ in range(3)}
    assert {job_claim(worker=f"w{n}").pk for n in range(3)} == jobs
