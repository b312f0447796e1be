"""An eval whose job fails or ends without it is failed with the reason (issue 31, item 9): the
result file that cannot be written, a job cancelled before it started, a worker lost for good.
No eval stays ``running`` for ever, and a synchronous POST answers with the failure at once."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.models import Job, JobStatus
from jobs.services.jobs import job_cancel
from jobs.services.claims import job_claim
from jobs.services.reaper import WORKER_LOST, job_reap
from evals.models import EvalRun
from tests.agents.conftest import wait_for
from tests.security.conftest import auth, token

pytestmark = pytest.mark.django_db(transaction=True)

ADD = '/call add {"a": 2, "b": 3}'
BODY = {"eval_type": "reliability", "input": ADD, "agent_id": "assistant", "expected_tool_calls": ["add"]}


def test_a_result_file_that_cannot_be_written_fails_the_eval_and_the_post_answers_with_it(client, settings, tmp_path, worker) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the results folder should be")
    settings.EVALS_RESULTS_DIR = str(blocked)
    settings.EVALS_SYNC_WAIT_SECONDS = 30  # before: the POST waited all of it and answered 202, "running"
    response = client.post("/eval-runs", data=json.dumps({**BODY, "file_path_to_save_results": "{run_id}.json"}), content_type="application/json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "failed" and body["error"].startswith("The result file was not written: ")
    row = EvalRun.objects.unscoped("test").get(pk=body["id"])
    assert (row.status, row.error) == ("failed", body["error"])
    # The job's end is written fenced just after its work marked the eval failed (which the POST
    # answered as soon as it read it): a moment later under load.
    wait_for(lambda: Job.objects.unscoped("test").get(pk=row.job_id).status == JobStatus.FAILED, timeout=30)


def test_an_eval_whose_job_was_cancelled_before_it_started_reads_failed(client, settings) -> None:
    settings.EMBEDDED_WORKER = False  # the job waits queued
    queued = client.post("/eval-runs?background=true", data=json.dumps(BODY), content_type="application/json").json()
    row = EvalRun.objects.unscoped("test").get(pk=queued["id"])
    assert job_cancel(job_id=row.job_id, reason="an operator stopped it")
    read = client.get(f"/eval-runs/{row.pk}").json()
    assert (read["status"], read["error"]) == ("failed", "cancelled")
    assert [item["status"] for item in client.get("/eval-runs").json()["data"]] == ["failed"]
    assert EvalRun.objects.unscoped("test").get(pk=row.pk).status == "failed"


def test_an_eval_whose_worker_was_lost_for_good_reads_failed_with_the_reason(client, jwt_server) -> None:
    jwt_server.EMBEDDED_WORKER = False  # this test is the worker: it claims the job, and is lost
    alice = auth(token("alice"))
    queued = client.post("/eval-runs?background=true", data=json.dumps(BODY), content_type="application/json", **alice).json()
    job = job_claim(worker="gone-worker")
    assert job is not None and job.payload["eval_run_id"] == queued["id"]
    EvalRun.objects.for_user("alice").filter(pk=queued["id"]).update(status="running")  # the worker had started it
    Job.objects.unscoped("test").filter(pk=job.pk).update(max_attempts=1)
    job_reap(now=timezone.now() + timedelta(days=1))
    read = client.get(f"/eval-runs/{queued['id']}", **alice).json()
    assert (read["status"], read["error"]) == ("failed", WORKER_LOST)
