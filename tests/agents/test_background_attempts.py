"""A background run executed again after its worker was lost shows one answer, the new attempt's.

The new attempt is announced (a CustomEvent named RunAttemptStarted, carrying ``attempt`` and the
``superseded_from_index`` from which the earlier output is void). A follower that saw the lost
attempt's tokens drops them on the announcement; replays and the stored run show attempt 2 only.
"""
from __future__ import annotations

import asyncio
import threading
from datetime import timedelta

import httpx
import pytest
from agno.client.os import AgentOSClient
from agno.run.agent import CustomEvent, RunCompletedEvent, RunContentEvent, RunOutput, RunStartedEvent, run_output_event_from_dict
from agno.utils.http import aclose_default_clients
from django.utils import timezone

from jobs.models import Job
from jobs.services.jobs import job_run
from jobs.services.claims import job_claim
from jobs.services.reaper import job_reap
from sessions.models import Run, RunEvent
from tests.agents.conftest import wait_for
from tests.api.sse import parse_sse
from tests.fakes._base import Reply

pytestmark = pytest.mark.django_db(transaction=True)

FIRST, SECOND = "the lost worker began this answer", "the second attempt answers this"


class Follower(threading.Thread):
    """The submitting client: it streams the background run from its start and keeps every frame."""

    def __init__(self, base: str) -> None:
        super().__init__(daemon=True)
        self.base, self.frames, self.lock = base, [], threading.Lock()

    def run(self) -> None:
        form = {"message": "answer me", "background": "true", "stream": "true", "user_id": "alice", "session_id": "s-att"}
        with httpx.stream("POST", f"{self.base}/agents/openai-agent/runs", data=form, timeout=60) as response:
            buffer = ""
            for chunk in response.iter_text():
                buffer += chunk
                while "\n\n" in buffer:
                    block, buffer = buffer.split("\n\n", 1)
                    with self.lock:
                        self.frames += parse_sse(block + "\n\n")

    def seen(self, event: str) -> int:
        with self.lock:
            return sum(1 for name, _ in self.frames if name == event)


def applied(frames: list[tuple[str, dict]]) -> list[tuple[str, dict]]:
    """What a client shows: the frames without those an attempt announcement made void."""
    shown: list[tuple[str, dict]] = []
    for name, data in frames:
        if name == "CustomEvent" and data.get("name") == "RunAttemptStarted":
            shown = [(n, d) for n, d in shown if d.get("event_index", -1) < data["superseded_from_index"]]
        shown.append((name, data))
    return shown


def answer(frames: list[tuple[str, dict]]) -> str:
    return "".join(data["content"] for name, data in frames if name == "RunContent")


@pytest.fixture
def rerun(live_api, worker, fake_openai, settings):
    """A run whose first worker streamed part of an answer, then was lost; the second attempt finishes it."""
    settings.EMBEDDED_WORKER = False  # the test plays both workers
    settings.AGENTOS_BACKGROUND_MAX_ATTEMPTS = 2
    settings.AGENTOS_BACKGROUND_RETRY_DELAY_SECONDS = 0
    gate = threading.Event()
    fake_openai.push(Reply(text=FIRST, gate=gate, gate_after=3))
    fake_openai.push(Reply(text=SECOND))
    follower = Follower(live_api)
    follower.start()
    run_id = wait_for(lambda: Job.objects.unscoped("test").filter(session_id="s-att").values_list("id", flat=True).first())
    doomed = job_claim(worker="doomed-worker")
    assert doomed is not None and doomed.pk == run_id
    lost = threading.Thread(target=lambda: job_run(doomed, "doomed-worker"), daemon=True)
    lost.start()
    wait_for(lambda: follower.seen("RunContent") >= 3)  # the follower shows part of the first answer
    # ...and the quiet run's events reach the database: the stored run holds both attempts.
    wait_for(lambda: RunEvent.objects.for_user("alice").filter(run_id=run_id, event="RunContent").count() >= 3)
    # The worker stops heartbeating; the reaper gives the job another attempt.
    Job.objects.unscoped("test").filter(pk=run_id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert job_reap() == ([run_id], [])
    successor = job_claim(worker="successor")
    assert successor is not None and successor.attempt == 2
    gate.set()  # the lost worker runs on unaware for a moment (its sends still reach followers), fenced out
    lost.join(timeout=20)
    assert not lost.is_alive()
    assert job_run(successor, "successor") == "COMPLETED"
    follower.join(timeout=20)
    assert not follower.is_alive()
    return run_id, follower.frames


def test_a_follower_of_the_lost_attempt_ends_with_one_answer(rerun) -> None:
    run_id, frames = rerun
    indexes = [data["event_index"] for _, data in frames]
    assert indexes == sorted(set(indexes))  # strictly increasing: nothing twice, nothing out of order
    assert FIRST.split()[0] in answer(frames)  # it did show the lost attempt's tokens first
    announcements = [data for name, data in frames if name == "CustomEvent"]
    assert [(data["name"], data["attempt"], data["superseded_from_index"], data["run_id"]) for data in announcements] == [("RunAttemptStarted", 2, 0, run_id)]
    shown = applied(frames)
    assert answer(shown) == SECOND
    assert [name for name, _ in shown if name in ("RunStarted", "RunCompleted")] == ["RunStarted", "RunCompleted"]
    assert shown[-1][1]["content"] == SECOND


def test_a_replay_and_the_stored_run_show_the_second_attempt_only(rerun, live_api) -> None:
    run_id, _ = rerun
    with httpx.stream("POST", f"{live_api}/agents/openai-agent/runs/{run_id}/resume", data={"session_id": "s-att"}, timeout=30) as response:
        replayed = parse_sse("".join(response.iter_text()))
    events = [(name, data) for name, data in replayed if name != "replay"]
    assert [name for name, _ in events if name != "RunContent"][:2] == ["CustomEvent", "RunStarted"]
    assert [name for name, _ in events].count("RunStarted") == 1
    assert answer(events) == SECOND and events[-1][0] == "RunCompleted"
    run = Run.objects.for_user("alice").get(pk=run_id)
    assert (run.status, run.content) == ("COMPLETED", SECOND)
    polled = httpx.get(f"{live_api}/agents/openai-agent/runs/{run_id}", params={"session_id": "s-att"}, timeout=10).json()
    assert polled["content"] == SECOND
    assert [event["event"] for event in polled["events"]].count("RunStarted") == 1
    # The stored run keeps the superseded attempt's events: the record, not the replay.
    stored = list(RunEvent.objects.for_user("alice").filter(run_id=run_id).values_list("event", flat=True))
    assert stored.count("RunStarted") == 2


def test_agno_client_parses_the_resumed_rerun(rerun, live_api) -> None:
    run_id, _ = rerun
    client = AgentOSClient(base_url=live_api, timeout=30)

    async def collect():
        try:
            raw = client._astream_post_form_data(f"/agents/openai-agent/runs/{run_id}/resume", {"session_id": "s-att"})
            return [event async for event in client._parse_sse_events(raw, run_output_event_from_dict)]
        finally:
            await aclose_default_clients()

    events = asyncio.run(collect())
    assert isinstance(events[0], CustomEvent) and (events[0].name, events[0].attempt) == ("RunAttemptStarted", 2)
    assert isinstance(events[1], RunStartedEvent) and isinstance(events[-1], RunCompletedEvent)
    assert "".join(event.content for event in events if isinstance(event, RunContentEvent)) == events[-1].content == SECOND
    polled = httpx.get(f"{live_api}/agents/openai-agent/runs/{run_id}", params={"session_id": "s-att"}, timeout=10).json()
    output = RunOutput.from_dict(polled)  # the stored events parse too: no unknown event name among them
    assert output.content == SECOND and isinstance(output.events[0], CustomEvent)
