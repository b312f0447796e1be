"""A background workflow run's Parallel branches on real Celery worker processes (PostgreSQL,
Redis): the branches are separate jobs any worker takes, inside their model calls at once; a
worker killed (kill -9) mid-branch loses nothing: the reaper retries its branch (and, if it held
the workflow run too, the run, which reuses the branches that had finished) and the run completes."""
from __future__ import annotations

import threading

import pytest

from jobs.models import JobStatus
from tests.agents import test_celery
from tests.agents.conftest import wait_for
from tests.agents.test_workflow_groups import MODULE, branches, ended, job, run_row, submit
from tests.fakes._base import Reply

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres_only, pytest.mark.redis, pytest.mark.slow]

cluster = test_celery.cluster  # the fixture: real Celery workers and beat on the test database


def test_a_killed_workers_branch_is_retried_and_the_run_completes(live_api, cluster, fake_openai, settings) -> None:
    settings.AGENT_MODULES = [*settings.AGENT_MODULES, MODULE]
    cluster.env["AGENT_MODULES"] = ",".join(settings.AGENT_MODULES)
    # The three branches' first answers wait on a gate: all three are inside their model call
    # at once, whichever processes took them; a rerun after the kill gets the default answer.
    gate = threading.Event()
    for _ in range(3):
        fake_openai.push(Reply(text="one two three four five", gate=gate, gate_after=1))
    fake_openai.default = test_celery.SLOW
    cluster.worker("w1")
    cluster.worker("w2")
    cluster.beat()
    run_id = submit(live_api, "openai-group-flow", message="split me", session_id="gk-1")
    fake_openai.wait_for_requests(3, timeout=60)
    before = branches(run_id)
    assert [(j.status, j.group_id, j.branch_index) for j in before] == [(JobStatus.RUNNING, run_id, n) for n in range(3)]
    holders = {j.pk: j.locked_by for j in before}
    victim_holder = before[0].locked_by
    victim = next(name for name, process in cluster.processes.items() if victim_holder.endswith(f"-{process.pid}"))
    parent_was_on_victim = job(run_id).locked_by == victim_holder
    cluster.kill(victim)  # kill -9, mid-branch
    gate.set()
    assert wait_for(lambda: ended(run_id), timeout=120) == "COMPLETED"
    after = branches(run_id)
    assert [j.status for j in after] == [JobStatus.COMPLETED] * 3
    # The victim's branches ran again; the others ran once, their results reused even by a
    # re-run of the workflow run itself.
    assert [j.attempt for j in after] == [2 if holders[j.pk] == victim_holder else 1 for j in after]
    assert job(run_id).attempt == (2 if parent_was_on_victim else 1)
    data = run_row(run_id).run_data
    assert [step["step_name"] for step in data["step_results"][0]["steps"]] == ["o0", "o1", "o2"]
    assert all(step["success"] for step in data["step_results"][0]["steps"])
