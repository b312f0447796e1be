"""One async execute for a run, and its thin sync facade (agents.pipeline.execution).

The web server awaits ``run_execute`` on its loop; a caller without a loop (a test, the shell,
an eval) goes through ``run_execute_here``, which drives the same coroutine on its own thread with
every database phase on the caller's connection: a caller inside a transaction writes the run's
rows in that transaction and sees them before it commits. A run-end observer that raises does not
leave the run RUNNING, whichever way the run was driven.
"""
from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from agents.api.streaming import stream_on_loop
from agents.pipeline import observers
from agents.pipeline.execution import run_execute_here
from agents.pipeline.observers import RunEnd
from agents.pipeline.runs import RunRequest, run_prepare
from agents.pipeline.submit import Accepted, Finished, Started, submit_run
from core.auth import Principal
from jobs.models import Job
from jobs.services.executor import drive_here, in_run_thread
from sessions.models import Run, RunEvent
from tests.agents.conftest import wait_for
from tests.api.sse import parse_sse
from tests.fakes._base import Reply

ALICE = Principal(user_id="alice", isolated=True, via="session")


def _stored_events(run_id: str) -> list[str]:
    return list(RunEvent.objects.for_user("alice").filter(run_id=run_id).order_by("event_index").values_list("event", flat=True))


@pytest.mark.django_db
def test_a_caller_inside_a_transaction_writes_the_run_on_its_own_connection(fake_openai) -> None:
    """A slow streamed run driven by the facade inside the caller's (never committed) transaction:
    its batches are written while it runs, on the caller's connection (the watch's could not see
    the uncommitted run), and the caller reads the finished run in the same transaction."""
    fake_openai.push(Reply(text="one two three four five six", delay=0.3))
    received: list[dict[str, Any]] = []
    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        started = submit_run(principal=ALICE, component_id="openai-agent", kind="agent", request=RunRequest(message="slowly", session_id="s-here"))
        assert isinstance(started, Started)
        with started.slot:
            output = started.execute(on_event=received.append)
        stored = Run.objects.for_user("alice").get(pk=started.run_id)
        assert (output["status"], stored.status, stored.content) == ("COMPLETED", "COMPLETED", "one two three four five six")
        assert _stored_events(started.run_id) == [event["event"] for event in received]
    event_writes = [query for query in queries.captured_queries if "INSERT INTO" in query["sql"] and "agno_run_events" in query["sql"]]
    assert len(event_writes) >= 2, "the events written while it ran, then its last ones with its end"


@pytest.mark.django_db
def test_a_database_phase_runs_in_the_callers_thread_and_its_errors_reach_the_coroutine() -> None:
    caller = threading.get_ident()

    def phase(fail: bool) -> int:
        if fail:
            raise LookupError("from the phase")
        return threading.get_ident()

    async def work() -> tuple[int, str]:
        here = await in_run_thread(phase, False)
        try:
            await in_run_thread(phase, True)
        except LookupError as exc:
            return here, str(exc)
        return here, ""

    assert drive_here(work()) == (caller, "from the phase")


@pytest.mark.django_db
def test_the_facade_begins_a_prepared_run_itself() -> None:
    prepared = run_prepare(principal=ALICE, component_id="assistant", kind="agent", request=RunRequest(message="hello", stream=False))
    output = run_execute_here(prepared)
    assert output["status"] == "COMPLETED"
    assert Run.objects.for_user("alice").get(pk=prepared.run_id).status == "COMPLETED"
    assert _stored_events(prepared.run_id)[-1] == "RunCompleted"


# ---- a run-end observer that raises -------------------------------------------------------------


class Observed:
    def __init__(self) -> None:
        self.failed: list[str] = []
        self.told_after: list[str] = []


@pytest.fixture
def failing_observer():
    """A run-end observer that writes, then raises (a bug in an app's observer), and one
    registered after it that records what it is told."""
    seen = Observed()

    def fail(end: RunEnd) -> None:
        seen.failed.append(end.run_id)
        Run.objects.unscoped("test: the failing observer's write").filter(pk=end.run_id).update(content="written by a failing observer")
        raise RuntimeError("a bug in an observer")

    observers.register_run_end("test-failing", fail)
    observers.register_run_end("test-after", lambda end: seen.told_after.append(end.run_id))
    yield seen
    observers.unregister("test-failing")
    observers.unregister("test-after")


def _ended_despite(observed: Observed, run_id: str, caplog) -> Run:
    """The run ended with its real status, without what the failing observer wrote; the failure
    is logged with the observer's name, and the observers after it were told."""
    stored = Run.objects.for_user("alice").get(pk=run_id)
    assert stored.status == "COMPLETED" and stored.content != "written by a failing observer"
    assert run_id in observed.failed and observed.told_after.count(run_id) == 1
    assert any("test-failing" in record.getMessage() and run_id in record.getMessage() for record in caplog.records)
    assert _stored_events(run_id)[-1] == "RunCompleted"
    return stored


@pytest.mark.django_db(transaction=True)
class TestAFailingRunEndObserver:
    def test_a_run_driven_by_the_facade_ends(self, failing_observer, caplog) -> None:
        caplog.set_level(logging.ERROR, logger="agno_site.runs")
        finished = submit_run(principal=ALICE, component_id="assistant", kind="agent", request=RunRequest(message="hello", stream=False))
        assert isinstance(finished, Finished) and finished.output["status"] == "COMPLETED"
        _ended_despite(failing_observer, finished.output["run_id"], caplog)

    def test_a_stream_on_the_servers_loop_ends_with_its_last_event(self, failing_observer, caplog) -> None:
        caplog.set_level(logging.ERROR, logger="agno_site.runs")
        started = submit_run(principal=ALICE, component_id="assistant", kind="agent", request=RunRequest(message="hello", stream=True), wait=False)
        assert isinstance(started, Started)

        async def follow() -> str:
            return "".join([frame async for frame in stream_on_loop(started)])

        frames = parse_sse(asyncio.run(follow()))
        assert frames[-1][0] == "RunCompleted", frames[-3:]
        _ended_despite(failing_observer, started.run_id, caplog)

    def test_a_background_run_ends(self, failing_observer, caplog, worker) -> None:
        caplog.set_level(logging.ERROR, logger="agno_site.runs")
        worker()
        accepted = submit_run(principal=ALICE, component_id="assistant", kind="agent", request=RunRequest(message="hello", stream=False), background=True)
        assert isinstance(accepted, Accepted)
        wait_for(lambda: Run.objects.for_user("alice").get(pk=accepted.job.pk).status not in ("PENDING", "RUNNING"))
        _ended_despite(failing_observer, accepted.job.pk, caplog)
        assert Job.objects.unscoped("test").get(pk=accepted.job.pk).status == "completed"
