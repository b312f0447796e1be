"""Following a run (agents.pipeline.tail): each event once, its ending included, whatever the
moment the run ends at."""
from __future__ import annotations

import asyncio

import pytest

from agents.pipeline.tail import resume
from sessions.models import Run
from tests.factories import make_event, make_run

pytestmark = pytest.mark.django_db(transaction=True)


def _followed(run: Run, after: int = -1) -> list[tuple[str, str | None]]:
    async def collect() -> list[tuple[str, str | None]]:
        return [(kind, data.get("event")) async for kind, data in resume(run, after)]

    return asyncio.run(asyncio.wait_for(collect(), timeout=20))


def test_a_run_that_paused_between_its_status_and_its_events_being_read_ends_once() -> None:
    """The follower read the run RUNNING, then its events, by then stored up to its pause: the
    catch-up sends the pause, and the follow that comes next must not send it again (a workflow
    socket's client once took the second WorkflowPaused for the continued run's own end)."""
    run = make_run("alice", run_id="r-paused", status="PAUSED", run_type="workflow")
    for index, name in enumerate(["WorkflowStarted", "StepPaused", "WorkflowPaused"]):
        make_event("alice", run=run, event_index=index, payload={"event": name, "run_id": run.pk})
    as_read = Run.objects.for_user("alice").get(pk=run.pk)
    as_read.status = "RUNNING"  # the status as the follower read it, a moment before the pause

    frames = _followed(as_read)

    assert [name for kind, name in frames if kind == "event"] == ["WorkflowStarted", "StepPaused", "WorkflowPaused"]


def test_a_follower_that_saw_nothing_of_an_ended_run_still_gets_its_ending() -> None:
    run = make_run("alice", run_id="r-ended", status="ERROR")
    make_event("alice", run=run, event_index=0, payload={"event": "RunStarted", "run_id": run.pk})
    make_event("alice", run=run, event_index=1, payload={"event": "RunError", "run_id": run.pk, "content": "lost"})
    as_read = Run.objects.for_user("alice").get(pk=run.pk)
    as_read.status = "RUNNING"

    assert [name for kind, name in _followed(as_read, after=1) if kind == "event"] == ["RunError"]
