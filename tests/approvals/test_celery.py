"""On PostgreSQL with Redis: an approval resolved over the wire continues its run on a real
Celery worker process (the web tier only queues the continuation)."""
from __future__ import annotations

import httpx
import pytest

from jobs.models import Job, JobStatus
from sessions.models import Run
from tests.agents import test_celery
from tests.agents.conftest import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres_only, pytest.mark.redis, pytest.mark.slow]

cluster = test_celery.cluster  # Celery workers as processes, the web tier pointed at their Redis


def test_resolving_continues_the_run_on_a_celery_worker(live_api, cluster) -> None:
    cluster.env["AGENT_MODULES"] = "tests.agents_for_tests,tests.approvals.agents"
    cluster.worker("w1")
    form = {"message": '/call wire_funds {"to": "bob", "amount": 9}', "stream": "false", "user_id": "alice"}
    paused = httpx.post(f"{live_api}/agents/approval-agent/runs", data=form, timeout=30).json()
    assert paused["status"] == "PAUSED", paused
    approval_id = paused["tools"][0]["approval_id"]
    resolved = httpx.post(f"{live_api}/approvals/{approval_id}/resolve", json={"status": "approved", "resolved_by": "ops"}, timeout=30)
    assert resolved.status_code == 200, resolved.text
    wait_for(lambda: Run.objects.for_user("alice").filter(pk=paused["run_id"], status="COMPLETED").exists(), timeout=60)
    run = Run.objects.for_user("alice").get(pk=paused["run_id"])
    assert run.run_data["tools"][0]["result"] == "wired 9 to bob"
    job = Job.objects.for_user("alice").get(pk=paused["run_id"])
    assert (job.status, job.job_type) == (JobStatus.COMPLETED, "continue")
    assert job.locked_by.endswith(f"-{cluster.processes['w1'].pid}"), job.locked_by  # the worker process ran it
