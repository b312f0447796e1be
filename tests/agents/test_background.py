"""Durable background runs with the embedded worker: accept, execute, bound, tail, resume, cancel."""
from __future__ import annotations

import threading
from datetime import timedelta

import httpx
import pytest
from django.utils import timezone

from jobs.models import Job, JobStatus
from jobs.services.claims import job_claim
from jobs.services.reaper import job_reap
from sessions.models import Run, RunEvent
from tests.agents.conftest import wait_for
from tests.api.sse import parse_sse
from tests.fakes._base import Reply

pytestmark = pytest.mark.django_db(transaction=True)


def submit(base: str, agent: str = "assistant", headers: dict | None = None, **form: str) -> httpx.Response:
    form.setdefault("stream", "false")
    form.setdefault("background", "true")
    return httpx.post(f"{base}/agents/{agent}/runs", data=form, headers=headers or {}, timeout=30)


def run_status(run_id: str) -> str:
    return Run.objects.unscoped("test").get(pk=run_id).status


def finished(run_id: str) -> str | None:
    status = run_status(run_id)
    return status if status in ("COMPLETED", "ERROR", "CANCELLED", "PAUSED") else None


def test_accepted_only_once_committed_then_executed(live_api, worker) -> None:
    response = submit(live_api, message="hello in the background", user_id="alice", session_id="bg-1")
    assert response.status_code == 202
    body = response.json()
    assert set(body) == {"run_id", "session_id", "status"} and (body["session_id"], body["status"]) == ("bg-1", "PENDING")
    assert wait_for(lambda: finished(body["run_id"])) == "COMPLETED"
    run = Run.objects.for_user("alice").get(pk=body["run_id"])
    assert run.run_index == 0 and "hello in the background" in run.content
    job = Job.objects.for_user("alice").get(pk=body["run_id"])
    assert (job.status, job.attempt, job.started_at is not None, job.completed_at is not None) == (JobStatus.COMPLETED, 1, True, True)
    events = list(RunEvent.objects.for_user("alice").filter(run=run).order_by("event_index").values_list("event_index", "event"))
    assert [index for index, _ in events] == list(range(len(events)))
    assert events[0][1] == "RunStarted" and events[-1][1] == "RunCompleted"
    polled = httpx.get(f"{live_api}/agents/assistant/runs/{body['run_id']}", params={"session_id": "bg-1"}).json()
    assert polled["status"] == "COMPLETED" and polled["content"] == run.content


def test_a_job_accepted_while_no_worker_runs_is_executed_when_one_starts(live_api, worker, settings) -> None:
    settings.EMBEDDED_WORKER = False  # "the process is down": nothing executes
    body = submit(live_api, message="survive a restart", user_id="alice").json()
    assert Job.objects.unscoped("test").get(pk=body["run_id"]).status == JobStatus.QUEUED
    assert run_status(body["run_id"]) == "PENDING"
    import jobs.worker as module

    module._worker = None
    settings.EMBEDDED_WORKER = True  # the process is back
    module.embedded_worker().start()
    assert wait_for(lambda: finished(body["run_id"])) == "COMPLETED"


def test_background_stream_carries_event_indexes_and_ends(live_api, worker) -> None:
    with httpx.stream("POST", f"{live_api}/agents/assistant/runs", data={"message": "tail me", "background": "true", "user_id": "alice"}, timeout=30) as response:
        assert response.status_code == 200
        frames = parse_sse("".join(response.iter_text()))
    assert frames[0][0] == "RunStarted" and frames[-1][0] == "RunCompleted"
    assert [data["event_index"] for _, data in frames] == list(range(len(frames)))


def test_resume_after_a_disconnect_misses_and_repeats_nothing(live_api, worker, fake_openai) -> None:
    gate = threading.Event()
    # As the default reply, so the gate holds whichever request of this run reaches the model.
    fake_openai.default = Reply(text="one two three four five six seven eight", gate=gate, gate_after=3)
    seen = []
    with httpx.stream("POST", f"{live_api}/agents/openai-agent/runs", data={"message": "slow", "background": "true", "user_id": "alice", "session_id": "bg-r"}, timeout=30) as response:
        buffer = ""
        for chunk in response.iter_text():
            buffer += chunk
            while "\n\n" in buffer:
                block, buffer = buffer.split("\n\n", 1)
                seen += parse_sse(block + "\n\n")
            if len(seen) >= 4:
                break  # the client goes away; a background run goes on
    run_id = seen[0][1]["run_id"]
    assert run_status(run_id) in ("RUNNING", "PENDING")
    last = seen[-1][1]["event_index"]
    gate.set()
    with httpx.stream("POST", f"{live_api}/agents/openai-agent/runs/{run_id}/resume", data={"session_id": "bg-r", "last_event_index": str(last)}, timeout=30) as response:
        resumed = parse_sse("".join(response.iter_text()))
    events = [frame for frame in resumed if frame[0] not in ("catch_up", "subscribed", "replay")]
    indexes = [data["event_index"] for _, data in seen] + [data["event_index"] for _, data in events]
    assert indexes == list(range(len(indexes))), indexes
    assert events[-1][0] == "RunCompleted"
    stored = list(RunEvent.objects.for_user("alice").filter(run_id=run_id).order_by("event_index").values_list("event_index", flat=True))
    assert stored == indexes


def test_events_of_a_quiet_run_reach_the_database_while_it_waits(live_api, worker, fake_openai) -> None:
    """A follower that missed the live events finds them stored, even when the run then goes
    quiet (a slow model here): buffered events are flushed on a timer, not only by new ones."""
    gate = threading.Event()
    fake_openai.default = Reply(text="one two three", gate=gate, gate_after=1)
    run_id = submit(live_api, "openai-agent", message="wait for me", user_id="alice").json()["run_id"]
    stored = wait_for(lambda: list(RunEvent.objects.for_user("alice").filter(run_id=run_id).values_list("event", flat=True)) or None, timeout=5)
    assert stored[0] == "RunStarted" and run_status(run_id) == "RUNNING"
    gate.set()
    assert wait_for(lambda: finished(run_id)) == "COMPLETED"


class TestIdempotency:
    def test_same_key_same_request_is_the_same_run(self, live_api, worker) -> None:
        key = {"Idempotency-Key": "order-42"}
        first = submit(live_api, headers=key, message="once", user_id="alice").json()
        again = submit(live_api, headers=key, message="once", user_id="alice").json()
        assert again["run_id"] == first["run_id"]
        wait_for(lambda: finished(first["run_id"]))
        assert submit(live_api, headers=key, message="once", user_id="alice").json() == {**first, "status": "COMPLETED"}
        assert Run.objects.unscoped("test").count() == 1

    def test_keys_are_per_user(self, live_api, worker) -> None:
        key = {"Idempotency-Key": "shared-key"}
        alice = submit(live_api, headers=key, message="x", user_id="alice").json()
        bob = submit(live_api, headers=key, message="x", user_id="bob").json()
        assert alice["run_id"] != bob["run_id"]

    def test_misuse_is_a_409_and_long_keys_a_422(self, live_api, worker) -> None:
        key = {"Idempotency-Key": "k-1"}
        first = submit(live_api, headers=key, message="x", user_id="alice").json()
        other_agent = submit(live_api, "hitl-agent", headers=key, message="x", user_id="alice")
        assert (other_agent.status_code, other_agent.json()["detail"]) == (409, "Idempotency-Key was already used by a different component; reuse a key only to retry the identical submission")
        stream = submit(live_api, headers=key, message="x", user_id="alice", stream="true")
        assert stream.status_code == 409 and first["run_id"] in stream.json()["detail"]
        long = submit(live_api, headers={"Idempotency-Key": "k" * 513}, message="x", user_id="alice")
        assert (long.status_code, long.json()["detail"][0]["msg"]) == (422, "Idempotency-Key must be at most 512 characters")

    def test_keys_expire(self, live_api, worker, settings) -> None:
        key = {"Idempotency-Key": "old-key"}
        first = submit(live_api, headers=key, message="x", user_id="alice").json()
        Job.objects.unscoped("test").filter(pk=first["run_id"]).update(created_at=timezone.now() - timedelta(days=2))
        second = submit(live_api, headers=key, message="x", user_id="alice").json()
        assert second["run_id"] != first["run_id"]


class TestBounds:
    def test_global_and_per_user_caps_hold_and_excess_waits_in_order(self, live_api, worker, settings, fake_openai) -> None:
        settings.AGENTOS_BACKGROUND_MAX_CONCURRENCY = 2
        settings.AGENTOS_BACKGROUND_MAX_PER_USER = 1
        settings.EMBEDDED_WORKER = True
        gate = threading.Event()
        fake_openai.default = Reply(text="done", gate=gate, gate_after=0)
        ids = [submit(live_api, "openai-agent", message=f"job {i}", user_id=user).json()["run_id"] for i, user in enumerate(["alice", "alice", "bob", "bob", "carol"])]
        wait_for(lambda: Job.objects.unscoped("test").filter(status=JobStatus.RUNNING).count() == 2)
        running = list(Job.objects.unscoped("test").filter(status=JobStatus.RUNNING).values_list("user_id", flat=True))
        assert sorted(running) == ["alice", "bob"]  # one per user, two in all
        gate.set()
        for run_id in ids:
            assert wait_for(lambda: finished(run_id)) == "COMPLETED"
        jobs = list(Job.objects.unscoped("test").filter(pk__in=ids))
        # Measured from the recorded timings, not assumed: never more than 2 at once, 1 per user.
        moments = sorted([(job.started_at, 1, job.user_id) for job in jobs] + [(job.completed_at, -1, job.user_id) for job in jobs], key=lambda m: (m[0], m[1]))
        total, per_user, peak, peak_user = 0, {}, 0, 0
        for _, delta, user in moments:
            total += delta
            per_user[user] = per_user.get(user, 0) + delta
            peak, peak_user = max(peak, total), max(peak_user, per_user[user])
        assert (peak, peak_user) == (2, 1)
        alice = sorted((job for job in jobs if job.user_id == "alice"), key=lambda job: job.created_at)
        assert alice[0].completed_at <= alice[1].started_at  # in submission order

    def test_a_full_queue_answers_429(self, live_api, worker, settings) -> None:
        settings.AGENTOS_BACKGROUND_MAX_QUEUE_DEPTH = 1
        settings.EMBEDDED_WORKER = False
        assert submit(live_api, message="fills it", user_id="alice").status_code == 202
        full = submit(live_api, message="one too many", user_id="alice")
        assert (full.status_code, full.json(), full.headers["Retry-After"]) == (429, {"detail": "Job queue is full"}, "5")
        assert Run.objects.unscoped("test").count() == 1

    def test_one_user_filling_their_share_leaves_the_queue_open_to_others(self, live_api, worker, settings) -> None:
        settings.AGENTOS_BACKGROUND_MAX_QUEUE_DEPTH = 3
        settings.AGENTOS_BACKGROUND_MAX_QUEUE_PER_USER = 2
        settings.EMBEDDED_WORKER = False  # nothing leaves the queue
        assert [submit(live_api, message=f"backlog {i}", user_id="alice").status_code for i in range(2)] == [202, 202]
        over = submit(live_api, message="one too many", user_id="alice")
        assert (over.status_code, over.json(), over.headers["Retry-After"]) == (
            429, {"detail": "Job queue share is full for this user: at most 2 queued jobs per user (AGENTOS_BACKGROUND_MAX_QUEUE_PER_USER)"}, "5",
        )
        first = submit(live_api, message="my first", user_id="bob")
        assert first.status_code == 202
        assert sorted(Run.objects.unscoped("test").values_list("user_id", flat=True)) == ["alice", "alice", "bob"]


class TestSessionStrategies:
    def hold(self, fake_openai) -> threading.Event:
        gate = threading.Event()
        fake_openai.push(Reply(text="first answer", gate=gate, gate_after=0))
        return gate

    def test_enqueue_waits_its_turn(self, live_api, worker, fake_openai) -> None:
        gate = self.hold(fake_openai)
        first = submit(live_api, "openai-agent", message="first", user_id="alice", session_id="s-q").json()
        wait_for(lambda: run_status(first["run_id"]) == "RUNNING")
        second = submit(live_api, "openai-agent", message="second", user_id="alice", session_id="s-q").json()
        polled = httpx.get(f"{live_api}/agents/openai-agent/runs/{second['run_id']}", params={"session_id": "s-q"}).json()
        assert (polled["status"], polled["waiting_on"]) == ("PENDING", first["run_id"])
        gate.set()
        assert wait_for(lambda: finished(second["run_id"])) == "COMPLETED"
        assert finished(first["run_id"]) == "COMPLETED"

    def test_reject_answers_409(self, live_api, worker, fake_openai) -> None:
        gate = self.hold(fake_openai)
        first = submit(live_api, "openai-agent", message="first", user_id="alice", session_id="s-rej").json()
        wait_for(lambda: run_status(first["run_id"]) == "RUNNING")
        rejected = submit(live_api, "openai-agent", message="second", user_id="alice", session_id="s-rej", session_strategy="reject")
        assert rejected.status_code == 409 and "already in progress" in rejected.json()["detail"]
        gate.set()
        assert wait_for(lambda: finished(first["run_id"])) == "COMPLETED"

    def test_interrupt_cancels_the_running_one(self, live_api, worker, fake_openai) -> None:
        gate = self.hold(fake_openai)
        first = submit(live_api, "openai-agent", message="first", user_id="alice", session_id="s-int").json()
        wait_for(lambda: run_status(first["run_id"]) == "RUNNING")
        second = submit(live_api, "openai-agent", message="second", user_id="alice", session_id="s-int", session_strategy="interrupt").json()
        gate.set()
        assert wait_for(lambda: finished(first["run_id"])) == "CANCELLED"
        assert wait_for(lambda: finished(second["run_id"])) == "COMPLETED"

    def test_unknown_strategy_is_a_422(self, live_api, worker) -> None:
        assert submit(live_api, message="x", session_strategy="shove").status_code == 422


class TestCancel:
    def test_a_queued_run_is_cancelled_before_execution(self, live_api, worker, settings) -> None:
        settings.EMBEDDED_WORKER = False
        body = submit(live_api, message="never runs", user_id="alice", session_id="s-c").json()
        assert httpx.post(f"{live_api}/agents/assistant/runs/{body['run_id']}/cancel").json() == {}
        polled = httpx.get(f"{live_api}/agents/assistant/runs/{body['run_id']}", params={"session_id": "s-c"}).json()
        assert (polled["status"], polled["content"], polled["cancellation_stage"]) == ("CANCELLED", "cancelled before execution", "PENDING")
        assert Job.objects.unscoped("test").get(pk=body["run_id"]).status == JobStatus.CANCELLED

    def test_a_running_run_stops_at_its_next_step(self, live_api, worker, fake_openai) -> None:
        gate = threading.Event()
        fake_openai.push(Reply(text="a b c d e f g h", gate=gate, gate_after=2))
        body = submit(live_api, "openai-agent", message="stop me", user_id="alice", session_id="s-cr").json()
        wait_for(lambda: run_status(body["run_id"]) == "RUNNING")
        httpx.post(f"{live_api}/agents/openai-agent/runs/{body['run_id']}/cancel")
        gate.set()
        assert wait_for(lambda: finished(body["run_id"])) == "CANCELLED"
        assert Job.objects.unscoped("test").get(pk=body["run_id"]).status == JobStatus.CANCELLED


class TestReaper:
    def lose_a_worker(self, base: str, settings, attempts: int) -> str:
        settings.EMBEDDED_WORKER = False
        settings.AGENTOS_BACKGROUND_MAX_ATTEMPTS = attempts
        run_id = submit(base, message="my worker dies", user_id="alice").json()["run_id"]
        job = job_claim(worker="doomed-worker")  # claims, then "dies": no heartbeat ever comes
        assert job is not None and job.pk == run_id
        Job.objects.unscoped("test").filter(pk=run_id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
        return run_id

    def test_worker_lost_without_attempts_left_is_a_visible_error(self, live_api, worker, settings) -> None:
        run_id = self.lose_a_worker(live_api, settings, attempts=1)
        assert job_reap() == ([], [run_id])
        run = Run.objects.for_user("alice").get(pk=run_id)
        assert run.status == "ERROR" and run.error.startswith("Worker lost")
        assert Job.objects.unscoped("test").get(pk=run_id).status == JobStatus.FAILED

    def test_worker_lost_with_attempts_left_is_run_again(self, live_api, worker, settings) -> None:
        settings.AGENTOS_BACKGROUND_RETRY_DELAY_SECONDS = 0
        run_id = self.lose_a_worker(live_api, settings, attempts=2)
        assert job_reap() == ([run_id], [])
        import jobs.worker as module

        module._worker = None
        settings.EMBEDDED_WORKER = True
        module.embedded_worker().start()
        assert wait_for(lambda: finished(run_id)) == "COMPLETED"
        job = Job.objects.unscoped("test").get(pk=run_id)
        assert (job.status, job.attempt) == (JobStatus.COMPLETED, 2)

    def test_a_zombie_worker_cannot_overwrite_its_successor(self, live_api, worker, settings) -> None:
        from jobs.services.jobs import job_run

        run_id = self.lose_a_worker(live_api, settings, attempts=2)
        zombie = Job.objects.unscoped("test").get(pk=run_id)
        job_reap()
        Job.objects.unscoped("test").filter(pk=run_id).update(available_at=timezone.now())
        successor = job_claim(worker="successor")
        assert successor.attempt == 2
        assert job_run(zombie, "doomed-worker") == "LOST"  # fenced out: writes nothing
        assert run_status(run_id) == "RUNNING"
        assert job_run(successor, "successor") == "COMPLETED"
        assert run_status(run_id) == "COMPLETED"


class TestJobsThatCannotStart:
    def test_a_run_whose_agent_was_switched_off_before_it_ran_fails_at_once_saying_so(self, live_api, worker, settings) -> None:
        """Not left RUNNING for the reaper to call a lost worker a lease later: it fails now,
        with the reason on the run, the job and a RunError event that ends any follower's stream."""
        from agents.models import AgentDefinition
        from jobs.services.jobs import job_run
        from agents.services.definitions import definition_create

        settings.EMBEDDED_WORKER = False
        definition_create(agent_id="short-lived", name="Short lived")
        run_id = submit(live_api, "short-lived", message="hello?", user_id="alice", session_id="s-gone").json()["run_id"]
        AgentDefinition.objects.filter(agent_id="short-lived").update(is_active=False)  # an operator switches it off
        job = job_claim(worker="w1")
        assert job is not None and job.pk == run_id

        assert job_run(job, "w1") == "ERROR"
        run = Run.objects.for_user("alice").get(pk=run_id)
        assert run.status == "ERROR" and run.error.startswith("Agent short-lived is no longer available")
        assert run.finished_at is not None and run.run_data["content"] == run.error
        job = Job.objects.unscoped("test").get(pk=run_id)
        assert (job.status, job.error, job.attempt) == (JobStatus.FAILED, run.error, 1)
        events = list(RunEvent.objects.for_user("alice").filter(run=run).order_by("event_index"))
        assert [(e.event_index, e.event, e.payload["error_type"]) for e in events] == [(0, "RunError", "agent_not_found")]
        assert job_reap() == ([], [])  # nothing left for the reaper
        polled = httpx.get(f"{live_api}/agents/short-lived/runs/{run_id}", params={"session_id": "s-gone"}, timeout=10)
        assert polled.status_code == 404  # the agent itself is gone from the API, as for any run of it


    def test_a_continuation_whose_source_run_was_deleted_fails_saying_so(self, live_api, worker, settings) -> None:
        from jobs.services.jobs import job_run

        settings.EMBEDDED_WORKER = False  # the follow-up waits in the queue
        body = submit(live_api, message="the question", user_id="alice", session_id="s-src", background="false").json()
        assert body["status"] == "COMPLETED"
        accepted = httpx.post(f"{live_api}/agents/assistant/runs/{body['run_id']}/continue",
                              data={"session_id": "s-src", "input": "and then?", "background": "true", "stream": "false"}).json()
        Run.objects.unscoped("test").filter(pk=body["run_id"]).delete()  # an operator deletes the source run
        job = job_claim(worker="w1")
        assert job is not None and job.pk == accepted["run_id"]
        assert job_run(job, "w1") == "ERROR"
        run = Run.objects.for_user("alice").get(pk=accepted["run_id"])
        assert run.error == f"Run {body['run_id']} was deleted before this continuation could run"
        assert RunEvent.objects.for_user("alice").get(run=run).payload["error_type"] == "invalid_continuation"


class TestHumanInTheLoopOnTheQueue:
    def pause(self, base: str) -> dict:
        body = submit(base, "hitl-agent", message='/call delete_file {"path": "q.txt"}', user_id="alice", session_id="s-hq").json()
        assert wait_for(lambda: finished(body["run_id"])) == "PAUSED"
        assert Job.objects.unscoped("test").get(pk=body["run_id"]).status == JobStatus.PAUSED
        return body

    def paused_tools(self, base: str, run_id: str) -> list:
        polled = httpx.get(f"{base}/agents/hitl-agent/runs/{run_id}", params={"session_id": "s-hq"}).json()
        return polled["tools"]

    def test_a_paused_background_run_continues_in_the_background(self, live_api, worker) -> None:
        import json

        body = self.pause(live_api)
        tools = [{**tool, "confirmed": True} for tool in self.paused_tools(live_api, body["run_id"])]
        response = httpx.post(f"{live_api}/agents/hitl-agent/runs/{body['run_id']}/continue", data={"tools": json.dumps(tools), "session_id": "s-hq", "background": "true", "stream": "false"})
        assert (response.status_code, response.json()) == (202, {"run_id": body["run_id"], "session_id": "s-hq", "status": "PENDING"})
        assert wait_for(lambda: finished(body["run_id"])) == "COMPLETED"
        job = Job.objects.unscoped("test").get(pk=body["run_id"])
        assert (job.status, job.attempt, job.job_type) == (JobStatus.COMPLETED, 2, "continue")
        assert "deleted q.txt" in Run.objects.unscoped("test").get(pk=body["run_id"]).content
        # The session is free again for the next background run.
        follow_up = submit(live_api, "hitl-agent", message="thanks", user_id="alice", session_id="s-hq").json()
        assert wait_for(lambda: finished(follow_up["run_id"])) == "COMPLETED"

    def test_streamed_background_continue_carries_on_the_event_indexes(self, live_api, worker) -> None:
        import json

        body = self.pause(live_api)
        stored = RunEvent.objects.unscoped("test").filter(run_id=body["run_id"]).count()
        tools = [{**tool, "confirmed": False, "confirmation_note": "not now"} for tool in self.paused_tools(live_api, body["run_id"])]
        with httpx.stream("POST", f"{live_api}/agents/hitl-agent/runs/{body['run_id']}/continue", data={"tools": json.dumps(tools), "session_id": "s-hq", "background": "true"}, timeout=30) as response:
            frames = parse_sse("".join(response.iter_text()))
        assert frames[0][0] == "RunContinued" and frames[-1][0] == "RunCompleted"
        assert [data["event_index"] for _, data in frames] == list(range(stored, stored + len(frames)))

    def test_continuing_inline_settles_the_job(self, live_api, worker) -> None:
        import json

        body = self.pause(live_api)
        tools = [{**tool, "confirmed": True} for tool in self.paused_tools(live_api, body["run_id"])]
        done = httpx.post(f"{live_api}/agents/hitl-agent/runs/{body['run_id']}/continue", data={"tools": json.dumps(tools), "session_id": "s-hq", "stream": "false"}).json()
        assert done["status"] == "COMPLETED"
        assert Job.objects.unscoped("test").get(pk=body["run_id"]).status == JobStatus.COMPLETED

    def test_a_paused_run_does_not_hold_its_session(self, live_api, worker) -> None:
        import json

        body = self.pause(live_api)
        # The user goes on talking while the approval waits: the next run does not queue behind it.
        follow_up = submit(live_api, "hitl-agent", message="never mind, just say hi", user_id="alice", session_id="s-hq").json()
        assert wait_for(lambda: finished(follow_up["run_id"]), timeout=10) == "COMPLETED"
        assert run_status(body["run_id"]) == "PAUSED"
        # The decision, made later, still continues the paused run.
        tools = [{**tool, "confirmed": True} for tool in self.paused_tools(live_api, body["run_id"])]
        response = httpx.post(f"{live_api}/agents/hitl-agent/runs/{body['run_id']}/continue", data={"tools": json.dumps(tools), "session_id": "s-hq", "background": "true", "stream": "false"})
        assert response.status_code == 202, response.text
        assert wait_for(lambda: finished(body["run_id"])) == "COMPLETED"
        assert "deleted q.txt" in Run.objects.unscoped("test").get(pk=body["run_id"]).content

    def test_cancelling_a_paused_background_run(self, live_api, worker) -> None:
        body = self.pause(live_api)
        httpx.post(f"{live_api}/agents/hitl-agent/runs/{body['run_id']}/cancel")
        polled = httpx.get(f"{live_api}/agents/hitl-agent/runs/{body['run_id']}", params={"session_id": "s-hq"}).json()
        assert (polled["status"], polled["cancellation_stage"]) == ("CANCELLED", "PAUSED")


class TestLease:
    """One watch thread per process renews the leases of the jobs the process runs."""

    def test_a_long_run_keeps_its_lease(self, live_api, worker, fake_openai, settings) -> None:
        settings.AGENTOS_BACKGROUND_LEASE_SECONDS = 3  # renewed every second
        gate = threading.Event()
        fake_openai.push(Reply(text="a b c d", gate=gate, gate_after=1))
        run_id = submit(live_api, "openai-agent", message="take your time", user_id="alice").json()["run_id"]
        wait_for(lambda: run_status(run_id) == "RUNNING")
        first = Job.objects.unscoped("test").get(pk=run_id).lease_expires_at
        # Renewed while the model holds the run, past the lease it was claimed with.
        wait_for(lambda: Job.objects.unscoped("test").get(pk=run_id).lease_expires_at > first + timedelta(seconds=1), timeout=10)
        assert timezone.now() < Job.objects.unscoped("test").get(pk=run_id).lease_expires_at
        gate.set()
        assert wait_for(lambda: finished(run_id)) == "COMPLETED"
        assert job_reap() == ([], [])  # nothing for the reaper: the lease never lapsed

    def test_a_lost_lease_stops_the_run(self, live_api, settings) -> None:
        from jobs.services.execution import Lease
        from jobs.services.cancellation import cancelled_locally, forget_local

        settings.EMBEDDED_WORKER = False
        settings.AGENTOS_BACKGROUND_LEASE_SECONDS = 3
        run_id = submit(live_api, message="lose me", user_id="alice").json()["run_id"]
        job = job_claim(worker="w1")
        lease = Lease(job, "w1")
        try:
            lease.tick(lease.renew_at - 0.1)  # not due yet: nothing happens
            assert Job.objects.unscoped("test").get(pk=run_id).lease_expires_at == job.lease_expires_at
            lease.tick(lease.renew_at)
            renewed = Job.objects.unscoped("test").get(pk=run_id).lease_expires_at
            assert renewed > job.lease_expires_at and not lease.lost and not cancelled_locally(run_id)
            # The reaper gave the job to another attempt (this process paused past its lease).
            Job.objects.unscoped("test").filter(pk=run_id).update(locked_by="the-successor", attempt=2)
            lease.tick(lease.renew_at)
            assert lease.lost and cancelled_locally(run_id)  # the run stops at its next step
            assert Job.objects.unscoped("test").get(pk=run_id).lease_expires_at == renewed  # not the old attempt's to renew
        finally:
            forget_local(run_id)

    def test_a_run_past_its_time_limit_is_cancelled(self, live_api, settings) -> None:
        from jobs.services.execution import Lease
        from jobs.services.cancellation import cancelled_locally, forget_local

        settings.EMBEDDED_WORKER = False
        settings.AGENTOS_BACKGROUND_LEASE_SECONDS = 3  # checked at each renewal, every second
        settings.AGENTOS_BACKGROUND_TIMEOUT_SECONDS = 5
        run_id = submit(live_api, message="too long", user_id="alice").json()["run_id"]
        lease = Lease(job_claim(worker="w1"), "w1")
        try:
            lease.tick(lease.renew_at)
            assert not cancelled_locally(run_id)
            lease.tick(max(lease.renew_at, lease.deadline + 1))
            assert lease.timed_out and cancelled_locally(run_id) and not lease.lost
        finally:
            forget_local(run_id)


class TestBackgroundBranch:
    """Follow-ups and regenerations of a finished run, queued as jobs of their own (background=true)."""

    def finished_run(self, base: str) -> dict:
        body = submit(base, message="the question", user_id="alice", session_id="s-br").json()
        assert wait_for(lambda: finished(body["run_id"])) == "COMPLETED"
        return body

    def test_a_regeneration_is_a_durable_job_and_replaces_the_original_when_done(self, live_api, worker) -> None:
        source = self.finished_run(live_api)
        response = httpx.post(f"{live_api}/agents/assistant/runs/{source['run_id']}/continue",
                              data={"session_id": "s-br", "regenerate": "true", "background": "true", "stream": "false"})
        assert response.status_code == 202
        accepted = response.json()
        assert accepted["run_id"] != source["run_id"] and (accepted["session_id"], accepted["status"]) == ("s-br", "PENDING")
        assert wait_for(lambda: finished(accepted["run_id"])) == "COMPLETED"
        job = Job.objects.unscoped("test").get(pk=accepted["run_id"])
        assert (job.status, job.job_type, job.attempt) == (JobStatus.COMPLETED, "branch", 1)
        run = Run.objects.for_user("alice").get(pk=accepted["run_id"])
        assert run.run_data["regenerated_from"] == source["run_id"] and run.content.startswith("(offline demo) You said: the question")
        assert run.input == Run.objects.for_user("alice").get(pk=source["run_id"]).input and run.run_index == 1
        assert wait_for(lambda: run_status(source["run_id"]) == "REGENERATED")
        events = list(RunEvent.objects.for_user("alice").filter(run=run).order_by("event_index").values_list("event_index", "event"))
        assert [index for index, _ in events] == list(range(len(events)))
        assert events[0][1] == "RunContinued" and events[-1][1] == "RunCompleted"

    def test_the_submission_checks_without_reading_what_the_worker_reads(self, live_api, worker) -> None:
        """History and memories are read by the worker that runs the job, not twice."""
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        from agents.pipeline.continuation import branch_submit
        from agents.pipeline.runs import Continuation
        from core.auth import OPEN

        source = self.finished_run(live_api)
        with CaptureQueriesContext(connection) as queries:
            job = branch_submit(principal=OPEN, component_id="assistant", run_id=source["run_id"], session_id="s-br",
                                requested_user_id=None, continuation=Continuation(regenerate=True), stream=False, kind="agent")
        reads = [query["sql"] for query in queries.captured_queries if query["sql"].lstrip().upper().startswith("SELECT")]
        assert not any("agno_memories" in sql for sql in reads), reads
        assert sum('FROM "agno_runs"' in sql for sql in reads) == 1, reads  # the run continued, not the history
        assert wait_for(lambda: finished(job.pk)) == "COMPLETED"

    def test_a_streamed_follow_up_in_the_background(self, live_api, worker) -> None:
        source = self.finished_run(live_api)
        with httpx.stream("POST", f"{live_api}/agents/assistant/runs/{source['run_id']}/continue",
                          data={"session_id": "s-br", "input": "and more?", "background": "true"}, timeout=30) as response:
            assert response.status_code == 200
            frames = parse_sse("".join(response.iter_text()))
        assert frames[0][0] == "RunContinued" and frames[-1][0] == "RunCompleted"
        new_id = frames[-1][1]["run_id"]
        assert new_id != source["run_id"] and frames[-1][1]["content"].startswith("(offline demo) You said: and more?")
        assert [data["event_index"] for _, data in frames] == list(range(len(frames)))
        run = Run.objects.for_user("alice").get(pk=new_id)
        assert (run.status, run.run_data["forked_from_run_id"]) == ("COMPLETED", source["run_id"])
        assert run_status(source["run_id"]) == "COMPLETED"  # a follow-up replaces nothing

    def test_what_the_background_refuses_before_queueing(self, live_api, worker, fake_openai) -> None:
        from tests.fakes._base import Failure

        fake_openai.push(Failure(401, "bad key"))
        failed = submit(live_api, "openai-agent", message="hi", user_id="alice", session_id="s-br").json()
        assert wait_for(lambda: finished(failed["run_id"])) == "ERROR"
        retry = httpx.post(f"{live_api}/agents/openai-agent/runs/{failed['run_id']}/continue",
                           data={"session_id": "s-br", "continue_from": "last_user", "background": "true", "stream": "false"})
        assert (retry.status_code, retry.json()) == (400, {"detail": "background=true continues in a new run: pass fork=true to retry a failed run in the background"})
        bad = httpx.post(f"{live_api}/agents/openai-agent/runs/{failed['run_id']}/continue",
                         data={"session_id": "s-br", "continue_from": "nowhere", "background": "true", "stream": "false"})
        assert bad.status_code == 400
        assert Job.objects.unscoped("test").count() == 1 and Run.objects.unscoped("test").count() == 1
