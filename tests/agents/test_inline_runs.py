"""An inline or streamed run exists from its first moment, and a lost server's runs end visibly.

The row is committed RUNNING, with the user's input, before the model is called; events are
written in batches while it runs (so /resume works from any replica); and when the process dies
the reaper fails its runs with a reason that says the server was lost.
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from django.utils import timezone

from agents.pipeline.inline import SERVER_LOST, inline_runs_reap
from sessions.models import Run, RunEvent
from tests.agents.conftest import wait_for
from tests.api.sse import parse_sse
from tests.conftest import run_async
from tests.fakes._base import Reply

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]


def _stream(base: str, **form: str):
    client = httpx.Client(timeout=30)
    response = client.send(client.build_request("POST", f"{base}/agents/openai-agent/runs", data=form), stream=True)
    return client, response


def test_a_streamed_run_is_stored_running_with_its_input_before_the_model_answers(live_api, fake_openai):
    gate = threading.Event()
    fake_openai.push(Reply(text="one two three four five six", gate=gate, gate_after=2))
    client, response = _stream(live_api, message="remember me", user_id="alice", session_id="s-live")
    try:
        lines = response.iter_lines()
        run_id = next(json.loads(line[6:])["run_id"] for line in lines if line.startswith("data: "))
        # While the model is held: the run is listed in its session, RUNNING, with what was sent,
        # to whoever asks for runs in progress (the plain listing is AgentOS's: not yet).
        listed = httpx.get(f"{live_api}/sessions/s-live/runs", params={"user_id": "alice", "status": "RUNNING"}).json()
        assert [(run["run_id"], run["status"]) for run in listed] == [(run_id, "RUNNING")]
        assert httpx.get(f"{live_api}/sessions/s-live/runs", params={"user_id": "alice"}).status_code == 404
        stored = Run.objects.for_user("alice").get(pk=run_id)
        assert (stored.status, stored.input["input_content"]) == ("RUNNING", "remember me")
        # Its first events reach the database while it still runs.
        wait_for(lambda: RunEvent.objects.for_user("alice").filter(run_id=run_id).exists())
        assert RunEvent.objects.for_user("alice").filter(run_id=run_id).order_by("event_index").first().event == "RunStarted"
        # A follower that joins now (from any replica: it reads the database, then live events)
        # gets the run from its start to its end, in order.
        follower: dict = {}
        joined = threading.Event()

        def follow() -> None:
            with httpx.stream("POST", f"{live_api}/agents/openai-agent/runs/{run_id}/resume", data={"session_id": "s-live", "user_id": "alice"}, timeout=30) as tail:
                text = []
                for chunk in tail.iter_text():
                    text.append(chunk)
                    if "event: subscribed" in "".join(text):
                        joined.set()  # caught up from the database, now following live
                follower["frames"] = parse_sse("".join(text))

        thread = threading.Thread(target=follow)
        thread.start()
        assert joined.wait(20), "the follower did not catch up while the run was held"
        gate.set()
        rest = [line for line in lines if line.startswith("event: ")]
        thread.join(30)
    finally:
        response.close()
        client.close()
    assert rest[-1] == "event: RunCompleted"
    kinds = [kind for kind, _ in follower["frames"]]
    assert kinds[0] == "catch_up" and kinds[-1] == "RunCompleted"
    indexes = [data["event_index"] for kind, data in follower["frames"] if "event_index" in data]
    assert indexes == list(range(len(indexes)))
    run = Run.objects.for_user("alice").get(pk=run_id)
    assert run.status == "COMPLETED" and run.content == "one two three four five six"
    stored_events = list(RunEvent.objects.for_user("alice").filter(run_id=run_id).order_by("event_index").values_list("event_index", "event"))
    assert [index for index, _ in stored_events] == list(range(len(stored_events)))
    assert stored_events[-1][1] == "RunCompleted"


def test_an_operator_cancels_a_streamed_run_from_the_admin(live_api, fake_openai, admin_client):
    from django.urls import reverse

    gate = threading.Event()
    fake_openai.push(Reply(text="one two three four five six", gate=gate, gate_after=2))
    client, response = _stream(live_api, message="go on", user_id="alice", session_id="s-op")
    try:
        lines = response.iter_lines()
        run_id = next(json.loads(line[6:])["run_id"] for line in lines if line.startswith("data: "))
        changelist = admin_client.get(reverse("admin:agno_sessions_run_changelist"))
        assert run_id in changelist.content.decode()
        admin_client.post(reverse("admin:agno_sessions_run_changelist"), {"action": "cancel_runs", "_selected_action": [run_id]})
        gate.set()
        events = [line[len("event: "):] for line in lines if line.startswith("event: ")]
    finally:
        response.close()
        client.close()
    assert "RunCancelled" in events
    assert wait_for(lambda: Run.objects.for_user("alice").exclude(status="RUNNING").filter(pk=run_id).first()).status == "CANCELLED"


def test_a_non_streamed_run_keeps_its_events_but_not_the_content_deltas(live_api, fake_openai):
    fake_openai.push(Reply(text="one two three"))
    body = httpx.post(f"{live_api}/agents/openai-agent/runs", data={"message": "hi", "stream": "false", "user_id": "alice"}, timeout=30).json()
    events = list(RunEvent.objects.for_user("alice").filter(run_id=body["run_id"]).order_by("event_index").values_list("event", flat=True))
    assert events[0] == "RunStarted" and events[-1] == "RunCompleted" and "RunContent" not in events


def test_the_reaper_fails_a_run_whose_server_stopped_beating_and_nothing_else(live_api, fake_openai, settings):
    settings.AGENTOS_BACKGROUND_LEASE_SECONDS = 3  # a heartbeat every second
    gate = threading.Event()
    fake_openai.push(Reply(text="still going", gate=gate, gate_after=1))
    client, response = _stream(live_api, message="alive", user_id="alice", session_id="s-alive")
    try:
        lines = response.iter_lines()
        alive = next(json.loads(line[6:])["run_id"] for line in lines if line.startswith("data: "))
        # A run left RUNNING by a process that is gone: its heartbeat stopped a lease ago.
        lost = _orphan("bob", "s-lost", minutes_ago=5)
        assert inline_runs_reap() == [lost]
        run = Run.objects.for_user("bob").get(pk=lost)
        assert (run.status, run.error, run.input["input_content"]) == ("ERROR", SERVER_LOST, "hello?")
        last = RunEvent.objects.for_user("bob").filter(run_id=lost).order_by("-event_index").first()
        assert (last.event, last.payload["error_type"]) == ("RunError", "server_lost")
        # The live run's heartbeat is renewed while it waits on its model: once its row is older
        # than the run itself, a reaper looking two seconds ahead (past the run's start plus a
        # lease, but within a beat of its last heartbeat) leaves it alone.
        started = Run.objects.for_user("alice").get(pk=alive).created_at
        wait_for(lambda: Run.objects.for_user("alice").get(pk=alive).updated_at > started + timedelta(seconds=1.5), timeout=10)
        assert inline_runs_reap(now=started + timedelta(seconds=3.5)) == []
        assert Run.objects.for_user("alice").get(pk=alive).status == "RUNNING"
        gate.set()
        assert [line for line in lines if line.startswith("event: ")][-1] == "event: RunCompleted"
    finally:
        response.close()
        client.close()
    assert Run.objects.for_user("alice").get(pk=alive).status == "COMPLETED"


def test_a_run_the_reaper_gave_up_stops_and_keeps_the_reapers_verdict(live_api, fake_openai, settings):
    from jobs.services.cancellation import cancelled_locally

    settings.AGENTOS_BACKGROUND_LEASE_SECONDS = 3  # a heartbeat every second
    gate = threading.Event()
    fake_openai.push(Reply(text="one two three four five six", gate=gate, gate_after=1))
    client, response = _stream(live_api, message="stalled", user_id="alice", session_id="s-stalled")
    try:
        lines = response.iter_lines()
        run_id = next(json.loads(line[6:])["run_id"] for line in lines if line.startswith("data: "))
        # A reaper that believes this process stalled past a lease fails the run; its next
        # heartbeat finds it given up and stops it, as a background run that lost its lease stops.
        assert inline_runs_reap(now=timezone.now() + timedelta(minutes=5)) == [run_id]
        wait_for(lambda: cancelled_locally(run_id), timeout=10)
        gate.set()
        [line for line in lines]
    finally:
        response.close()
        client.close()
    run = Run.objects.for_user("alice").get(pk=run_id)
    assert (run.status, run.error) == ("ERROR", SERVER_LOST)
    events = list(RunEvent.objects.for_user("alice").filter(run_id=run_id).order_by("event_index").values_list("event", flat=True))
    assert events[-1] == "RunError"


def test_a_background_run_is_left_to_its_jobs_lease(live_api, settings):
    settings.EMBEDDED_WORKER = False
    accepted = httpx.post(f"{live_api}/agents/assistant/runs", data={"message": "later", "stream": "false", "background": "true", "user_id": "carol"}).json()
    Run.objects.for_user("carol").filter(pk=accepted["run_id"]).update(status="RUNNING", updated_at=timezone.now() - timedelta(hours=1))
    assert inline_runs_reap() == []


def _orphan(user: str, session_id: str, *, minutes_ago: int) -> str:
    from sessions.services.runs import RunRecord, new_id, run_record

    run = run_record(RunRecord(
        session_id=session_id, owner_id=user, component_id="openai-agent", run_id=new_id(), status="RUNNING", input={"input_content": "hello?"},
    ), create_session=True)
    Run.objects.for_user(user).filter(pk=run.pk).update(updated_at=timezone.now() - timedelta(minutes=minutes_ago))
    return run.pk


@pytest.mark.slow
def test_kill_9_during_50_streams_loses_no_run_and_none_stays_running(settings, tmp_path):
    """50 streamed runs in flight on one server; kill -9. Every run is stored with its input, and
    a second server's reaper fails each, saying the server was lost, within a lease and an interval."""
    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.postgresql":
        url = f"postgres://{database['USER']}@{database['HOST'] or '127.0.0.1'}:{database['PORT'] or 5432}/{database['NAME']}"
    else:
        url = f"sqlite:///{database['NAME']}"
    env = {
        **os.environ, "DJANGO_SETTINGS_MODULE": "agno_site.settings.test", "DATABASE_URL": url, "VAR_DIR": str(tmp_path),
        "AGENTOS_BACKGROUND_LEASE_SECONDS": "3", "AGENTOS_REAPER_INTERVAL_SECONDS": "1", "RUN_THREADS": "64",
        "RUN_MAX_PER_USER": "64", "EMBEDDED_WORKER": "false",
    }
    doomed, doomed_base = _serve(env, tmp_path / "doomed.log")
    try:
        wait_for(lambda: _healthy(doomed_base), timeout=60, interval=0.2)
        streams = threading.Thread(target=lambda: run_async(lambda: _fifty_streams(doomed_base)), daemon=True)
        streams.start()
        wait_for(lambda: Run.objects.unscoped("test").filter(status="RUNNING").count() == 50, timeout=60, interval=0.1)
    finally:
        os.killpg(doomed.pid, signal.SIGKILL)
        doomed.wait(timeout=10)
    runs = list(Run.objects.unscoped("test").values_list("status", "input"))
    assert len(runs) == 50 and all(status == "RUNNING" for status, _ in runs)
    assert sorted(data["input_content"] for _, data in runs) == sorted(f"/slow 30\n#{index}" for index in range(50))
    # A surviving replica's reaper (the embedded worker's, here) fails them once their heartbeat
    # is a lease old.
    survivor, survivor_base = _serve({**env, "EMBEDDED_WORKER": "true"}, tmp_path / "survivor.log")
    try:
        wait_for(lambda: Run.objects.unscoped("test").filter(status="ERROR").count() == 50, timeout=60, interval=0.2)
    finally:
        os.killpg(survivor.pid, signal.SIGTERM)
        survivor.wait(timeout=20)
    assert set(Run.objects.unscoped("test").values_list("error", flat=True)) == {SERVER_LOST}
    assert sorted(data["input_content"] for data in Run.objects.unscoped("test").values_list("input", flat=True)) == sorted(
        f"/slow 30\n#{index}" for index in range(50)
    )


def _serve(env: dict[str, str], log: Path) -> tuple[subprocess.Popen, str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(port)], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    return process, f"http://127.0.0.1:{port}"


def _healthy(base: str) -> bool:
    try:
        return httpx.get(f"{base}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


async def _fifty_streams(base: str) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:

        async def one(index: int) -> None:
            try:
                await client.post("/agents/assistant/runs", data={"message": f"/slow 30\n#{index}", "user_id": f"user-{index % 5}"})
            except httpx.HTTPError:
                pass  # the server was killed under it

        await asyncio.gather(*(one(index) for index in range(50)))


def _alice():
    from core.auth import Principal

    return Principal(user_id="alice", isolated=True, via="session")


def _paused_run() -> dict:
    from agents.pipeline.runs import RunRequest
    from agents.pipeline.submit import Finished, submit_run

    paused = submit_run(principal=_alice(), component_id="hitl-agent", request=RunRequest(message='/call delete_file {"path": "a.txt"}', stream=False), kind="agent")
    assert isinstance(paused, Finished) and paused.output["status"] == "PAUSED"
    return paused.output


def test_a_continue_claims_its_paused_run_so_two_continues_cannot_both_run_it():
    """The continuation is committed RUNNING before it runs (as a new run is); a second continue
    with the same decisions, from any process, is refused instead of running the tool twice."""
    from agents.pipeline.runs import RunNotContinuable
    from agents.pipeline.submit import Started, submit_continue

    paused = _paused_run()
    tools = [{**paused["tools"][0], "confirmed": True}]
    first = submit_continue(principal=_alice(), component_id="hitl-agent", run_id=paused["run_id"], session_id=paused["session_id"], tools=tools, kind="agent")
    assert isinstance(first, Started)
    assert Run.objects.for_user("alice").get(pk=paused["run_id"]).status == "RUNNING"  # before anything of it ran
    with pytest.raises(RunNotContinuable):
        submit_continue(principal=_alice(), component_id="hitl-agent", run_id=paused["run_id"], session_id=paused["session_id"], tools=tools, kind="agent")
    events: list[dict] = []
    with first.slot:  # as the stream's thread holds it
        output = first.execute(on_event=events.append)
    assert output["status"] == "COMPLETED" and "deleted a.txt" in json.dumps(output["tools"])
    stored = Run.objects.for_user("alice").get(pk=paused["run_id"])
    assert stored.status == "COMPLETED"
    # Its events were numbered on from the paused run's and stored.
    indexes = list(RunEvent.objects.for_user("alice").filter(run_id=stored.pk).order_by("event_index").values_list("event_index", flat=True))
    assert indexes == list(range(len(indexes))) and events[-1]["event"] == "RunCompleted"


def test_a_fork_exists_running_with_its_sources_input_before_it_runs():
    from agents.pipeline.runs import Continuation, RunRequest
    from agents.pipeline.submit import Started, submit_continue, submit_run

    done = submit_run(principal=_alice(), component_id="assistant", request=RunRequest(message="what is 2+2?", stream=False), kind="agent").output
    fork = submit_continue(
        principal=_alice(), component_id="assistant", run_id=done["run_id"], session_id=done["session_id"], continuation=Continuation(regenerate=True), kind="agent",
    )
    assert isinstance(fork, Started) and fork.run_id != done["run_id"]
    begun = Run.objects.for_user("alice").get(pk=fork.run_id)
    assert (begun.status, begun.input["input_content"], begun.session_id) == ("RUNNING", "what is 2+2?", done["session_id"])
    with fork.slot:
        assert fork.execute()["status"] == "COMPLETED"
    assert Run.objects.for_user("alice").get(pk=done["run_id"]).status == "REGENERATED"
    assert Run.objects.for_user("alice").get(pk=fork.run_id).status == "COMPLETED"


def test_an_edited_question_is_the_forks_stored_input():
    from agents.pipeline.runs import Continuation, RunRequest
    from agents.pipeline.submit import Finished, submit_continue, submit_run

    done = submit_run(principal=_alice(), component_id="assistant", request=RunRequest(message="what is 2+2?", stream=False), kind="agent").output
    edited = submit_continue(
        principal=_alice(), component_id="assistant", run_id=done["run_id"], session_id=done["session_id"], stream=False,
        continuation=Continuation(fork=True, continue_from="last_user", input="what is 3+3?"), kind="agent",
    )
    assert isinstance(edited, Finished) and edited.output["status"] == "COMPLETED"
    assert Run.objects.for_user("alice").get(pk=edited.output["run_id"]).input["input_content"] == "what is 3+3?"
    assert Run.objects.for_user("alice").get(pk=done["run_id"]).input["input_content"] == "what is 2+2?"


def test_a_json_run_whose_client_leaves_still_ends_and_is_recorded(live_api, fake_openai):
    """stream=false: the client gives up while the model is held. The run is not cut short where
    it stood (it would stay RUNNING until the reaper called its server lost): it goes on, and is
    recorded as it ends."""
    gate = threading.Event()
    fake_openai.push(Reply(text="late but whole", gate=gate, gate_after=0))
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{live_api}/agents/openai-agent/runs", data={"message": "are you there?", "stream": "false", "user_id": "alice", "session_id": "s-gone"}, timeout=1.5)
    run = wait_for(lambda: Run.objects.for_user("alice").filter(session_id="s-gone").first())
    assert run.status == "RUNNING"
    gate.set()
    wait_for(lambda: Run.objects.for_user("alice").get(pk=run.pk).status == "COMPLETED")
    assert Run.objects.for_user("alice").get(pk=run.pk).content == "late but whole"


def test_a_streams_first_frame_is_ready_when_its_response_is_returned():
    """The run's first event is taken on the loop as the response is made (``run_open``): the
    stream's first frame needs no trip around the event loop, whatever else the loop has to do."""
    from agents.api.streaming import stream_on_loop
    from agents.pipeline.runs import RunRequest
    from agents.pipeline.submit import Started, submit_run

    started = submit_run(principal=_alice(), component_id="assistant", request=RunRequest(message="hello", stream=True), wait=False, kind="agent")
    assert isinstance(started, Started)

    async def follow() -> tuple[str, list[str]]:
        frames = stream_on_loop(started)
        step = frames.__anext__()
        with pytest.raises(StopIteration) as first:  # it completes without awaiting anything
            step.send(None)
        return first.value.value, [frame async for frame in frames]

    first, rest = asyncio.run(follow())
    assert first.startswith("event: RunStarted") and f'"run_id": "{started.run_id}"' in first.replace('":"', '": "')
    assert "event: RunCompleted" in "".join(rest)
    assert Run.objects.for_user("alice").get(pk=started.run_id).status == "COMPLETED"


def test_a_run_whose_opening_fails_is_recorded_as_an_error(monkeypatch):
    from engine.run_iteration import RunIteration
    from agents.pipeline.runs import RunRequest
    from agents.pipeline.submit import submit_run

    def broken(self):
        raise ValueError("a bug before the first event")

    monkeypatch.setattr(RunIteration, "opening", broken)
    started = submit_run(principal=_alice(), component_id="assistant", request=RunRequest(message="hello", stream=True), wait=False, kind="agent")
    events: list[dict] = []

    async def drive() -> dict:
        opened = started.open(on_event=events.append)
        return await started.execute_async(on_event=events.append, opened=opened)

    output = asyncio.run(drive())
    started.slot.release()
    assert output["status"] == "ERROR" and "ValueError" in output["content"]
    assert [event["event"] for event in events][-1] == "RunError"
    stored = Run.objects.for_user("alice").get(pk=started.run_id)
    assert (stored.status, stored.input["input_content"]) == ("ERROR", "hello")
