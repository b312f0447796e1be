"""The embedded worker outlives database errors and replaces threads that ended."""
from __future__ import annotations

import threading

import pytest
from django.db import InterfaceError

from tests.agents.conftest import wait_for
from tests.agents.test_background import finished, submit

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_lost_database_connection_does_not_end_the_job_threads(live_api, worker, settings, monkeypatch) -> None:
    import agents.worker as module

    settings.EMBEDDED_WORKER_THREADS = 1
    failures = {"left": 3}
    real_claim = module.job_claim

    def flaky_claim(**kwargs):
        if failures["left"]:
            failures["left"] -= 1
            raise InterfaceError("connection already closed")
        return real_claim(**kwargs)

    monkeypatch.setattr(module, "job_claim", flaky_claim)
    monkeypatch.setattr(module, "IDLE_POLL_SECONDS", 0.05)
    body = submit(live_api, message="after the outage", user_id="alice").json()
    assert wait_for(lambda: finished(body["run_id"])) == "COMPLETED"
    assert failures["left"] == 0
    assert all(thread.is_alive() for thread in module.embedded_worker()._threads)


def test_start_replaces_a_thread_that_ended(worker, settings) -> None:
    settings.EMBEDDED_WORKER_THREADS = 2
    embedded = worker().start()
    names = sorted(thread.name for thread in embedded._threads)
    assert names == ["agno-job-0", "agno-job-1", "agno-reaper"]
    ended = threading.Thread(target=lambda: None, name="agno-job-1")
    ended.start()
    ended.join()
    survivors = [thread for thread in embedded._threads if thread.name != "agno-job-1"]
    embedded._threads = [*survivors, ended]  # as if agno-job-1 had died
    embedded.start()
    assert sorted(thread.name for thread in embedded._threads) == names
    assert all(thread.is_alive() for thread in embedded._threads)
    assert all(any(thread is kept for thread in embedded._threads) for kept in survivors)  # the living are kept
