"""RUN_MAX_PER_USER: inline and streamed runs per user, from acceptance until the run ends."""
from __future__ import annotations

import contextlib
import json
import logging
import threading

import httpx
import pytest

from agents.pipeline.capacity import runs_in_progress
from sessions.models import Run
from tests.agents.conftest import wait_for
from tests.api.sse import parse_sse
from tests.fakes._base import Failure, Reply

pytestmark = pytest.mark.django_db(transaction=True)

REFUSED = {"detail": "Too many runs in progress for this user: at most 2 at once (RUN_MAX_PER_USER); retry when one has ended, or submit with background=true"}
REFUSED_AT_ONE = {"detail": REFUSED["detail"].replace("at most 2", "at most 1")}
# The offline model streams this slowly for a minute, one word at a time (a cancel lands in ~0.3 s).
SLOW = " ".join(["hold"] * 200) + "\n/slow 60"


def run(base: str, agent: str = "assistant", **form: str) -> httpx.Response:
    form.setdefault("stream", "false")
    return httpx.post(f"{base}/agents/{agent}/runs", data=form, timeout=10)


@contextlib.contextmanager
def streaming(client: httpx.Client, base: str, agent: str = "assistant", **form: str):
    """A streamed run, open once its first event has arrived (the run is under way): the rest of
    its lines, and the RunStarted event."""
    with client.stream("POST", f"{base}/agents/{agent}/runs", data=form) as response:
        assert response.status_code == 200, response.read()
        lines = response.iter_lines()
        assert next(lines) == "event: RunStarted"
        started = json.loads(next(lines).removeprefix("data: "))
        yield lines, started


def read_to_end(lines) -> list[tuple[str, dict]]:
    return parse_sse("\n".join(lines) + "\n\n")


@pytest.fixture(autouse=True)
def _no_runs_in_flight(caplog):
    """Each test starts and ends with no run of its users in progress (a closed stream's run ends
    a moment after its client left; the next test must not find its place taken), and every
    place was given back by its run, not by the safety net for dropped slots."""
    users = ("user:alice", "user:bob", "user:carol", "addr:127.0.0.1")
    wait_for(lambda: not any(runs_in_progress(key) for key in users))
    caplog.set_level(logging.INFO, logger="agno_site.runs")
    yield
    wait_for(lambda: not any(runs_in_progress(key) for key in users))
    dropped = [r for when in ("setup", "call", "teardown") for r in caplog.get_records(when) if "slot was dropped unreleased" in r.getMessage()]
    assert not dropped


@pytest.fixture
def few_run_threads(settings):
    """Three run threads in this process for the test: the regime where one user's streams can
    take them all."""
    import jobs.services.executor as executor

    settings.RUN_THREADS = 3
    previous, executor._executor = executor._executor, None
    yield
    pool, executor._executor = executor._executor, previous
    if pool is not None:
        pool.shutdown(wait=True)


def test_a_user_at_the_cap_is_refused_and_another_users_run_is_not_held_up(live_api, settings, few_run_threads) -> None:
    settings.RUN_MAX_PER_USER = 2
    paused = run(live_api, "hitl-agent", message='/call delete_file {"path": "notes/x.txt"}', user_id="alice", session_id="s-hitl").json()
    tool = {**paused["tools"][0], "confirmed": True}
    continue_url = f"{live_api}/agents/hitl-agent/runs/{paused['run_id']}/continue"
    done = run(live_api, message="answered", user_id="alice", session_id="s-done").json()
    regenerate_url = f"{live_api}/agents/assistant/runs/{done['run_id']}/continue"
    with httpx.Client(timeout=30) as client, contextlib.ExitStack() as held:
        for index in range(2):
            held.enter_context(streaming(client, live_api, message=SLOW, user_id="alice", session_id=f"s-slow-{index}"))
        assert runs_in_progress("user:alice") == 2

        refusals = [
            run(live_api, message="one more", user_id="alice"),
            run(live_api, message="one more, streamed", user_id="alice", stream="true"),
            httpx.post(continue_url, data={"tools": json.dumps([tool]), "session_id": "s-hitl", "stream": "false"}, timeout=10),
            httpx.post(continue_url, data={"tools": json.dumps([tool]), "session_id": "s-hitl"}, timeout=10),
            httpx.post(regenerate_url, data={"session_id": "s-done", "regenerate": "true", "stream": "false"}, timeout=10),
        ]
        assert [(r.status_code, r.json(), r.headers["Retry-After"]) for r in refusals] == [(429, REFUSED, "5")] * 5
        assert Run.objects.for_user("alice").get(pk=paused["run_id"]).status == "PAUSED"  # nothing ran

        # Without the cap alice's third stream would have taken the last run thread, and bob
        # would wait a minute behind her; the request's 10 s timeout would fail this.
        bob = run(live_api, message="hello", user_id="bob")
        assert (bob.status_code, bob.json()["status"]) == (200, "COMPLETED")
        assert runs_in_progress("user:alice") == 2  # her streams are still in flight
    wait_for(lambda: runs_in_progress("user:alice") == 0)  # gone with their clients


def test_a_place_is_given_back_when_the_run_completes(live_api, settings, fake_openai) -> None:
    settings.RUN_MAX_PER_USER = 1
    gate = threading.Event()
    fake_openai.push(Reply(text="a whole answer", gate=gate))
    answer: dict = {}
    inline = threading.Thread(target=lambda: answer.update(response=run(live_api, "openai-agent", message="slow", user_id="alice")))
    inline.start()
    fake_openai.wait_for_requests(1)
    refused = run(live_api, message="meanwhile", user_id="alice", stream="true")
    assert (refused.status_code, refused.json()) == (429, REFUSED_AT_ONE)
    gate.set()
    inline.join(10)
    assert answer["response"].json()["status"] == "COMPLETED"
    # Given back before the answer left: the client's next run is accepted at once.
    gate = threading.Event()
    fake_openai.push(Reply(text="streamed answer", gate=gate))
    with httpx.Client(timeout=30) as client:
        with streaming(client, live_api, "openai-agent", message="slow stream", user_id="alice") as (lines, _):
            assert run(live_api, message="meanwhile", user_id="alice").status_code == 429
            gate.set()
            assert read_to_end(lines)[-1][0] == "RunCompleted"
    assert run(live_api, message="next", user_id="alice").json()["status"] == "COMPLETED"


def test_a_place_is_given_back_when_the_run_fails(live_api, settings, fake_openai) -> None:
    settings.RUN_MAX_PER_USER = 1
    gate = threading.Event()
    fake_openai.push(lambda recorded: gate.wait(10) and Failure(400, "bad request upstream"))
    with httpx.Client(timeout=30) as client:
        with streaming(client, live_api, "openai-agent", message="fails", user_id="alice") as (lines, _):
            assert run(live_api, message="meanwhile", user_id="alice").status_code == 429
            gate.set()
            assert read_to_end(lines)[-1][0] == "RunError"
    assert run(live_api, message="next", user_id="alice").json()["status"] == "COMPLETED"
    # Refused before it starts (no such agent, another user's session): nothing is kept either.
    assert run(live_api, "nope", message="x", user_id="alice").status_code == 404
    run(live_api, message="bob's", user_id="bob", session_id="s-bob")
    assert run(live_api, message="x", user_id="alice", session_id="s-bob", stream="true").status_code == 404
    assert runs_in_progress("user:alice") == 0
    with httpx.Client(timeout=30) as client, streaming(client, live_api, message=SLOW, user_id="alice"):
        assert run(live_api, message="the cap still holds", user_id="alice").status_code == 429


def test_a_place_is_given_back_when_the_client_disconnects(live_api, settings, fake_openai) -> None:
    from jobs.services.cancellation import cancelled_locally

    settings.RUN_MAX_PER_USER = 1
    gate = threading.Event()
    fake_openai.push(Reply(text="one two three four five six", gate=gate, gate_after=2))
    with httpx.Client(timeout=30) as client:
        with streaming(client, live_api, "openai-agent", message="talk slowly", user_id="alice", session_id="s-dc") as (_, started):
            assert run(live_api, message="meanwhile", user_id="alice").status_code == 429
    # The client is gone. Once the server has noticed, let the model go on: the run stops at its
    # next step and ends, and its place is free.
    wait_for(lambda: cancelled_locally(started["run_id"]))
    assert runs_in_progress("user:alice") == 1  # still running: still counted
    gate.set()
    wait_for(lambda: runs_in_progress("user:alice") == 0)
    assert Run.objects.for_user("alice").get(session_id="s-dc").status == "CANCELLED"
    assert run(live_api, message="next", user_id="alice").json()["status"] == "COMPLETED"


def test_runs_for_no_user_share_the_client_address(live_api, settings, fake_openai) -> None:
    settings.RUN_MAX_PER_USER = 1
    with httpx.Client(timeout=30) as client, streaming(client, live_api, message=SLOW):
        anonymous = run(live_api, message="no user either")
        assert (anonymous.status_code, anonymous.json()) == (429, REFUSED_AT_ONE)
        assert run(live_api, message="carol's", user_id="carol").json()["status"] == "COMPLETED"


def test_a_made_up_forwarded_for_does_not_buy_an_anonymous_client_another_place(live_api, settings, fake_openai) -> None:
    settings.RUN_MAX_PER_USER = 1
    with httpx.Client(timeout=30) as client, streaming(client, live_api, message=SLOW):
        forged = httpx.post(
            f"{live_api}/agents/assistant/runs", data={"message": "me again", "stream": "false"},
            headers={"X-Forwarded-For": "203.0.113.9"}, timeout=10,
        )
        assert (forged.status_code, forged.json()) == (429, REFUSED_AT_ONE)


@pytest.mark.django_db(transaction=True)
def test_an_operators_retry_is_one_more_queued_run_of_the_owners(settings):
    """A retry goes through the one submit service as the owner's background run, so it counts
    against their queue share: a bulk retry cannot crowd them (or anyone) out of the queue."""
    from jobs.services.jobs import job_cancel
    from agents.pipeline.runs import RunRequest
    from agents.pipeline.submit import RunNotRetryable, submit_retry, submit_run
    from core.auth import Principal
    from sessions.models import RunStatus
    from tests.factories import make_run, make_session

    settings.EMBEDDED_WORKER = False
    settings.AGENTOS_BACKGROUND_MAX_QUEUE_PER_USER = 1
    session = make_session("alice", component_id="assistant")
    failed = make_run("alice", session=session, component_id="assistant", status=RunStatus.ERROR, input={"input_content": "again"})
    alice = Principal(user_id="alice", isolated=True, via="session")
    queued = submit_run(principal=alice, component_id="assistant", request=RunRequest(message="first", stream=False), background=True, kind="agent")
    with pytest.raises(RunNotRetryable, match="queue share is full"):
        submit_retry(run_id=failed.pk)
    assert job_cancel(job_id=queued.job.pk)
    retried = submit_retry(run_id=failed.pk)
    assert (retried.job.user_id, retried.job.session_id, retried.run_status) == ("alice", session.pk, RunStatus.PENDING)
