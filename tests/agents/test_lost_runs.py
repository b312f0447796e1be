"""A run whose process is lost ends like any failed run, for every follower (issue 32, items 2-4).

The reaper's verdict (a background job's worker lost with no attempt left, an inline run's server
lost) is a stored RunError at the next index after the last stored event, published to followers;
every stream frame carries its ``event_index``; a ``/resume`` from the last index a client saw
ends with the run's terminal event even when the lost process sent events it never stored.
"""
from __future__ import annotations

import json
import threading
from datetime import timedelta

import httpx
import pytest
from django.db import connections
from django.utils import timezone

from jobs.models import Job, JobStatus
from jobs.services.jobs import job_run
from agents.pipeline.inline import SERVER_LOST, inline_runs_reap
from jobs.services.claims import job_claim
from jobs.services.reaper import WORKER_LOST, job_reap
from sessions.models import Run, RunEvent
from tests.agents.conftest import wait_for
from tests.agents.test_background_attempts import Follower
from tests.api.sse import parse_sse
from tests.fakes._base import Reply

pytestmark = pytest.mark.django_db(transaction=True)


def resume(base: str, run_id: str, session_id: str, last: int | None = None) -> list[tuple[str, dict]]:
    form = {"session_id": session_id, **({"last_event_index": str(last)} if last is not None else {})}
    with httpx.stream("POST", f"{base}/agents/openai-agent/runs/{run_id}/resume", data=form, timeout=30) as response:
        return parse_sse("".join(response.iter_text()))


@pytest.fixture
def lost_worker(live_api, worker, fake_openai, settings):
    """A streamed background run whose only worker is lost mid-answer (one attempt: no retry).
    Yields (run_id, the follower, the gate that holds the lost worker's model, its thread)."""
    settings.EMBEDDED_WORKER = False  # the test plays the worker
    settings.AGENTOS_BACKGROUND_MAX_ATTEMPTS = 1
    gate = threading.Event()
    fake_openai.push(Reply(text="the lost worker began this answer", gate=gate, gate_after=3))
    follower = Follower(live_api)
    follower.start()
    run_id = wait_for(lambda: Job.objects.unscoped("test").filter(session_id="s-att").values_list("id", flat=True).first())
    doomed = job_claim(worker="doomed-worker")
    assert doomed is not None and doomed.pk == run_id
    def execute() -> None:
        try:
            job_run(doomed, "doomed-worker")
        finally:
            connections.close_all()  # this thread's, before the test database is dropped

    lost = threading.Thread(target=execute, daemon=True)
    lost.start()
    wait_for(lambda: follower.seen("RunContent") >= 3)
    wait_for(lambda: RunEvent.objects.for_user("alice").filter(run_id=run_id, event="RunContent").count() >= 3)
    try:
        yield run_id, follower, gate, lost
    finally:
        gate.set()
        lost.join(timeout=20)


def test_a_follower_of_a_run_failed_by_the_reaper_gets_its_error(lost_worker, live_api) -> None:
    run_id, follower, gate, lost = lost_worker
    Job.objects.unscoped("test").filter(pk=run_id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert job_reap() == ([], [run_id])
    follower.join(timeout=20)
    assert not follower.is_alive()
    name, data = follower.frames[-1]
    assert name == "RunError" and data["content"] == WORKER_LOST and data["error_type"] == "worker_lost"
    indexes = [data["event_index"] for _, data in follower.frames]
    assert indexes == sorted(set(indexes))
    # Stored, as the run's last event, at the next index after the others.
    stored = list(RunEvent.objects.for_user("alice").filter(run_id=run_id).order_by("event_index").values_list("event_index", "event"))
    assert stored[-1] == (data["event_index"], "RunError") and stored[-1][0] == stored[-2][0] + 1
    run = Run.objects.for_user("alice").get(pk=run_id)
    assert (run.status, run.error) == ("ERROR", WORKER_LOST)
    # The lost worker, back to life, is fenced out: the verdict stands.
    gate.set()
    lost.join(timeout=20)
    assert Run.objects.for_user("alice").get(pk=run_id).status == "ERROR"
    replayed = resume(live_api, run_id, "s-att")
    assert replayed[-1][0] == "RunError" and replayed[-1][1]["content"] == WORKER_LOST


def _frames(lines) -> list[dict]:
    """The data of each SSE frame read so far from ``lines`` (until the caller stops)."""
    return [json.loads(line[6:]) for line in lines if line.startswith("data: ")]


def test_every_inline_frame_carries_the_index_its_event_is_stored_under(live_api, fake_openai) -> None:
    with httpx.stream("POST", f"{live_api}/agents/openai-agent/runs", data={"message": "hi", "user_id": "alice", "session_id": "s-idx"}, timeout=30) as response:
        frames = parse_sse("".join(response.iter_text()))
    indexes = [data["event_index"] for _, data in frames]
    assert indexes == list(range(len(frames)))
    run_id = frames[0][1]["run_id"]
    stored = list(RunEvent.objects.for_user("alice").filter(run_id=run_id).order_by("event_index").values_list("event_index", "event"))
    assert stored == [(data["event_index"], name) for name, data in frames]


def test_a_resume_from_the_last_index_seen_of_a_lost_inline_run_ends_with_its_error(live_api, fake_openai, settings) -> None:
    """The server died after sending events it never stored: the reaper's RunError takes the next
    index after the last stored one, which the client has seen; its resume still ends with it."""
    from jobs.services.cancellation import cancelled_locally

    settings.AGENTOS_BACKGROUND_LEASE_SECONDS = 3  # the run's heartbeat finds it given up within a second
    gate = threading.Event()
    fake_openai.push(Reply(text="one two three four five six", gate=gate, gate_after=3))
    client = httpx.Client(timeout=30)
    response = client.send(client.build_request("POST", f"{live_api}/agents/openai-agent/runs", data={"message": "hi", "user_id": "alice", "session_id": "s-lost"}), stream=True)
    try:
        seen: list[dict] = []
        for line in response.iter_lines():
            if line.startswith("data: "):
                seen.append(json.loads(line[6:]))
                if sum(1 for data in seen if data["event"] == "RunContent") == 3:
                    break
        run_id, last_seen = seen[0]["run_id"], seen[-1]["event_index"]
        assert [data["event_index"] for data in seen] == list(range(len(seen)))
        wait_for(lambda: RunEvent.objects.for_user("alice").filter(run_id=run_id, event_index=last_seen).exists())
        # Its last two events never reached the database before the server died.
        RunEvent.objects.for_user("alice").filter(run_id=run_id, event_index__gte=last_seen - 1).delete()
        assert inline_runs_reap(now=timezone.now() + timedelta(minutes=5)) == [run_id]
        error = RunEvent.objects.for_user("alice").get(run_id=run_id, event="RunError")
        assert error.event_index == last_seen - 1  # the next after the last stored: one the client saw
        wait_for(lambda: cancelled_locally(run_id), timeout=10)  # this "dead" server stops it, writing nothing more
        replayed = resume(live_api, run_id, "s-lost", last=last_seen)
        assert replayed[-1][0] == "RunError" and replayed[-1][1]["content"] == SERVER_LOST
        assert replayed[-1][1]["event_index"] == last_seen - 1
    finally:
        gate.set()
        response.close()
        client.close()


def test_the_jobs_of_a_worker_whose_heartbeat_stopped_are_reaped_before_their_lease_ends(live_api, settings) -> None:
    from jobs.models import ProcessBeat
    from jobs.services.liveness import process_beat

    settings.EMBEDDED_WORKER = False  # the test plays the workers
    settings.AGENTOS_BACKGROUND_MAX_ATTEMPTS = 1
    settings.AGENTOS_BACKGROUND_LEASE_SECONDS = 60
    settings.AGENTOS_PROCESS_HEARTBEAT_SECONDS = 1
    settings.AGENTOS_PROCESS_LOST_AFTER_SECONDS = 3
    ids = [
        httpx.post(f"{live_api}/agents/assistant/runs", data={"message": name, "stream": "false", "background": "true", "user_id": "alice", "session_id": name}).json()["run_id"]
        for name in ("dead", "alive")
    ]
    dead, alive = job_claim(worker="w-dead"), job_claim(worker="w-alive")
    assert {dead.pk, alive.pk} == set(ids)
    start = timezone.now()
    process_beat(["w-dead", "w-alive"], now=start)
    assert job_reap(now=start) == ([], [])  # the reaper's first pass: it only records itself
    # Five seconds on, w-dead has not beaten since; w-alive has. Both leases run for a minute more.
    later = start + timedelta(seconds=5)
    Job.objects.unscoped("test").filter(pk__in=ids).update(updated_at=start)
    process_beat(["w-alive"], now=later)
    assert job_reap(now=later) == ([], [dead.pk])
    run = Run.objects.for_user("alice").get(pk=dead.pk)
    assert (run.status, run.error) == ("ERROR", WORKER_LOST)
    assert RunEvent.objects.for_user("alice").filter(run_id=dead.pk).order_by("-event_index").first().event == "RunError"
    assert Job.objects.unscoped("test").get(pk=alive.pk).status == JobStatus.RUNNING
    assert ProcessBeat.objects.get(name="w-alive").beat_at == later


def test_after_a_pause_of_the_reaper_no_worker_is_lost_for_its_silence(live_api, settings) -> None:
    """After an outage every beat is old: the first pass after it gives the workers time to beat."""
    from jobs.services.liveness import process_beat

    settings.EMBEDDED_WORKER = False
    settings.AGENTOS_PROCESS_LOST_AFTER_SECONDS = 3
    settings.AGENTOS_REAPER_INTERVAL_SECONDS = 1
    run_id = httpx.post(f"{live_api}/agents/assistant/runs", data={"message": "m", "stream": "false", "background": "true", "user_id": "alice"}).json()["run_id"]
    assert job_claim(worker="w-1").pk == run_id
    start = timezone.now()
    process_beat(["w-1"], now=start)
    assert job_reap(now=start) == ([], [])
    Job.objects.unscoped("test").filter(pk=run_id).update(updated_at=start)
    assert job_reap(now=start + timedelta(seconds=30)) == ([], [])  # the reaper's previous pass is 30 s old
    assert Job.objects.unscoped("test").get(pk=run_id).status == JobStatus.RUNNING


def test_a_process_holding_jobs_beats_for_its_worker(live_api, worker, fake_openai, settings) -> None:
    from jobs.models import ProcessBeat

    settings.EMBEDDED_WORKER = True
    settings.AGENTOS_PROCESS_HEARTBEAT_SECONDS = 0.2
    gate = threading.Event()
    fake_openai.push(Reply(text="held", gate=gate, gate_after=0))
    embedded = worker().start()
    run_id = httpx.post(f"{live_api}/agents/openai-agent/runs", data={"message": "m", "stream": "false", "background": "true", "user_id": "alice"}).json()["run_id"]
    embedded.wake()
    try:
        first = wait_for(lambda: ProcessBeat.objects.filter(name=embedded.name).values_list("beat_at", flat=True).first())
        assert Job.objects.unscoped("test").get(pk=run_id).locked_by == embedded.name
        wait_for(lambda: ProcessBeat.objects.get(name=embedded.name).beat_at > first)  # and again, while it holds the job
    finally:
        gate.set()
    assert wait_for(lambda: Run.objects.for_user("alice").get(pk=run_id).status == "COMPLETED")


def test_an_inline_run_whose_server_stopped_beating_is_reaped_before_a_lease(live_api, fake_openai, settings) -> None:
    from tests.agents.test_inline_runs import _orphan

    settings.AGENTOS_BACKGROUND_LEASE_SECONDS = 60
    settings.AGENTOS_PROCESS_HEARTBEAT_SECONDS = 0.2
    settings.AGENTOS_PROCESS_LOST_AFTER_SECONDS = 2
    gate = threading.Event()
    fake_openai.push(Reply(text="still going", gate=gate, gate_after=1))
    client = httpx.Client(timeout=30)
    response = client.send(client.build_request("POST", f"{live_api}/agents/openai-agent/runs", data={"message": "hi", "user_id": "alice", "session_id": "s-beat"}), stream=True)
    try:
        lines = response.iter_lines()
        alive = next(json.loads(line[6:])["run_id"] for line in lines if line.startswith("data: "))
        # This process beats for its run every heartbeat interval, not every third of a lease.
        started = Run.objects.for_user("alice").get(pk=alive).created_at
        wait_for(lambda: Run.objects.for_user("alice").get(pk=alive).updated_at > started + timedelta(seconds=0.5), timeout=10)
        lost = _orphan("bob", "s-quiet", minutes_ago=0)
        Run.objects.for_user("bob").filter(pk=lost).update(updated_at=timezone.now() - timedelta(seconds=5))
        # A pass that does not trust heartbeats (the first after an outage) waits for a lease...
        assert inline_runs_reap(trusted=False) == []
        # ...one that does fails the silent run after a few seconds, and leaves the beating one.
        assert inline_runs_reap(trusted=True) == [lost]
        assert Run.objects.for_user("alice").get(pk=alive).status == "RUNNING"
        assert RunEvent.objects.for_user("bob").filter(run_id=lost).order_by("-event_index").first().event == "RunError"
    finally:
        gate.set()
        response.close()
        client.close()
