"""Following a run (agents.pipeline.tail): each event once, its ending included, whatever the
moment the run ends at."""
from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async

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
    # The pause is the stream's last frame: no "subscribed" after it (a socket's client reads its
    # next frame as the answer to what it sends next; CI once read "subscribed" there).
    assert [kind for kind, _ in frames] == ["catch_up", "event", "event", "event"], frames


def test_a_continued_run_whose_last_stored_event_is_its_pause_is_still_followed() -> None:
    """Read RUNNING with the pause as its last stored event because it is running again (continued,
    nothing new stored yet): the follower subscribes and gets what the continuation stores."""
    run = make_run("alice", run_id="r-continued", status="RUNNING", run_type="workflow")
    for index, name in enumerate(["WorkflowStarted", "WorkflowPaused"]):
        make_event("alice", run=run, event_index=index, payload={"event": name, "run_id": run.pk})
    as_read = Run.objects.for_user("alice").get(pk=run.pk)

    async def collect() -> list[tuple[str, str | None]]:
        frames = []
        async for kind, data in resume(as_read):
            frames.append((kind, data.get("event")))
            if kind == "subscribed":
                await sync_to_async(_continued_to_its_end)(run)
        return frames

    frames = asyncio.run(asyncio.wait_for(collect(), timeout=20))
    assert [kind for kind, _ in frames][:4] == ["catch_up", "event", "event", "subscribed"], frames
    assert [name for kind, name in frames if kind == "event"][-2:] == ["WorkflowContinued", "WorkflowCompleted"], frames


def _continued_to_its_end(run: Run) -> None:
    make_event("alice", run=run, event_index=2, payload={"event": "WorkflowContinued", "run_id": run.pk})
    make_event("alice", run=run, event_index=3, payload={"event": "WorkflowCompleted", "run_id": run.pk})
    Run.objects.for_user("alice").filter(pk=run.pk).update(status="COMPLETED")


def test_a_follower_that_saw_nothing_of_an_ended_run_still_gets_its_ending() -> None:
    run = make_run("alice", run_id="r-ended", status="ERROR")
    make_event("alice", run=run, event_index=0, payload={"event": "RunStarted", "run_id": run.pk})
    make_event("alice", run=run, event_index=1, payload={"event": "RunError", "run_id": run.pk, "content": "lost"})
    as_read = Run.objects.for_user("alice").get(pk=run.pk)
    as_read.status = "RUNNING"

    assert [name for kind, name in _followed(as_read, after=1) if kind == "event"] == ["RunError"]
