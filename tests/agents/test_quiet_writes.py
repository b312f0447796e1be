"""The watch writes the quiet runs' events of a tick together: one transaction, one statement,
and nothing lost when that write fails."""
from __future__ import annotations

import time

import pytest
from django.db import OperationalError

from agents.pipeline import eventlog
from agents.pipeline.inline import LoopRecorder
from sessions.models import RunEvent
from tests.factories import make_run

pytestmark = pytest.mark.django_db


def _recorder(user: str) -> LoopRecorder:
    recorder = LoopRecorder(make_run(user), streamed=True, forward=None)
    for n in range(3):
        recorder({"event": "RunContent", "content": f"{user} {n}"})
    return recorder


def _stored(recorder: LoopRecorder) -> list[tuple[int, str]]:
    rows = RunEvent.objects.for_user(recorder.run.user_id).filter(run_id=recorder.run.pk).order_by("event_index")
    return [(row.event_index, row.payload["content"]) for row in rows]


def test_every_due_runs_events_go_in_one_statement(django_assert_num_queries) -> None:
    alice, bob = _recorder("alice"), _recorder("bob")
    with django_assert_num_queries(3):  # the savepoint, one INSERT for both runs, its release
        eventlog.write_quiet([alice, bob])
    assert _stored(alice) == [(0, "alice 0"), (1, "alice 1"), (2, "alice 2")]
    assert _stored(bob) == [(0, "bob 0"), (1, "bob 1"), (2, "bob 2")]
    assert "event_index" not in RunEvent.objects.for_user("alice").first().payload
    assert not alice.buffer and not alice.arrived and alice.flush_due(time.monotonic()) is False


def test_a_failed_write_gives_every_run_its_events_back_in_order(monkeypatch) -> None:
    alice, bob = _recorder("alice"), _recorder("bob")

    def fail(batches) -> None:
        list(batches)
        raise OperationalError("the database went away")

    monkeypatch.setattr(eventlog, "run_events_append_indexed", fail)
    with pytest.raises(OperationalError):
        eventlog.write_quiet([alice, bob])
    alice({"event": "RunContent", "content": "alice 3"})  # arrived meanwhile
    monkeypatch.undo()
    eventlog.write_quiet([alice, bob])
    assert [content for _, content in _stored(alice)] == ["alice 0", "alice 1", "alice 2", "alice 3"]
    assert len(_stored(bob)) == 3


def test_a_run_the_reaper_gave_up_writes_nothing_more() -> None:
    alice, bob = _recorder("alice"), _recorder("bob")
    alice.given_up = True
    eventlog.write_quiet([alice, bob])
    assert _stored(alice) == [] and len(_stored(bob)) == 3


def test_a_run_whose_events_collide_does_not_hold_the_others_back(caplog) -> None:
    alice, bob = _recorder("alice"), _recorder("bob")
    # The reaper wrote its verdict at the index alice's next event was to take.
    from sessions.services.runs import run_events_append

    run_events_append(run=alice.run, events=[{"event": "RunError", "content": "server lost"}], first_index=1)
    eventlog.write_quiet([alice, bob])
    assert len(_stored(bob)) == 3
    assert _stored(alice) == [(1, "server lost")]
    assert not alice.buffer and "collide" in caplog.text


def test_the_watch_batches_only_logs_fed_on_an_event_loop() -> None:
    """A log fed by its run's own thread writes its batches itself, under its lock (so the
    watch never takes events from under a thread that is writing them)."""
    from agents.pipeline.inline import InlineRecorder

    threaded = InlineRecorder(make_run("carol", status="RUNNING"), streamed=True, forward=None)
    threaded({"event": "RunContent", "content": "carol 0"})
    assert threaded.batched is False and _recorder("dave").batched is True
    threaded.tick(time.monotonic() + 60)  # quiet: the watch's tick writes it
    rows = RunEvent.objects.for_user("carol").filter(run_id=threaded.run.pk)
    assert [row.payload["content"] for row in rows] == ["carol 0"]
