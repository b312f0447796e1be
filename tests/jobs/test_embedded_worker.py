"""The embedded worker outlives database errors and replaces threads that ended."""
from __future__ import annotations

import threading

import httpx

import pytest
from django.db import InterfaceError

from jobs.models import Job
from tests.agents.conftest import wait_for
from tests.agents.test_background import finished, submit

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_lost_database_connection_does_not_end_the_job_loop(live_api, worker, settings, monkeypatch) -> None:
    import jobs.loop_worker as loops

    settings.EMBEDDED_WORKER = True
    failures = {"left": 3}
    real_claim = loops.job_claim

    def flaky_claim(**kwargs):
        if failures["left"]:
            failures["left"] -= 1
            raise InterfaceError("connection already closed")
        return real_claim(**kwargs)

    monkeypatch.setattr(loops, "job_claim", flaky_claim)
    monkeypatch.setattr(loops, "IDLE_POLL_SECONDS", 0.05)
    embedded = worker().start()
    body = submit(live_api, message="after the outage", user_id="alice").json()
    embedded.wake()  # the live server accepted it; this process's worker is the one under test
    assert wait_for(lambda: finished(body["run_id"])) == "COMPLETED"
    assert failures["left"] == 0
    assert embedded.running


def test_start_restarts_a_job_loop_that_ended(worker, settings) -> None:
    settings.EMBEDDED_WORKER = True
    embedded = worker().start()
    assert embedded.running
    embedded.loop.stop()  # as if its thread had died
    assert not embedded.running
    embedded.start()
    assert embedded.running and embedded._reaper.is_alive()


def test_one_process_carries_many_jobs_at_once(live_api, worker, settings, fake_openai) -> None:
    """Thirty background runs whose model is held, with two run threads: all thirty wait on their
    model at once (a waiting run holds no thread), then all complete when the model answers."""
    import jobs.services.executor as executor
    from tests.fakes._base import Reply

    settings.EMBEDDED_WORKER = True
    settings.RUN_THREADS = 2  # the threads for database phases: far fewer than the runs
    executor._executor = None
    gate = threading.Event()
    for _ in range(30):
        fake_openai.push(Reply(text="held answer", gate=gate, gate_after=0))
    embedded = worker().start()
    run_ids = [
        httpx.post(f"{live_api}/agents/openai-agent/runs", data={"message": f"q{n}", "stream": "false", "background": "true", "user_id": f"u{n}"}).json()["run_id"]
        for n in range(30)
    ]
    embedded.wake()
    try:
        # Every one of them is at its model at the same moment.
        assert wait_for(lambda: len(fake_openai.requests) >= 30)
        holders = set(Job.objects.unscoped("test").filter(pk__in=run_ids).values_list("locked_by", flat=True))
        assert holders == {embedded.name}
        assert embedded.loop.in_flight == 30 and len(executor.run_executor()._threads) <= 2
        gate.set()
        assert all(wait_for(lambda run_id=run_id: finished(run_id)) == "COMPLETED" for run_id in run_ids)
    finally:
        gate.set()
        executor._executor = None  # the next test's pool has the default size
