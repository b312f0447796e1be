"""Cancel intents are bound to the requester: a caller can only ever stop their own run."""
from __future__ import annotations

import json
import threading

import httpx
import pytest

from jobs.models import CancelIntent
from jobs.services.cancellation import cancel_checker, cancel_poll, cancel_request, forget_local
from sessions.models import Run
from tests.agents.conftest import wait_for
from tests.factories import make_run, make_session
from tests.fakes._base import Reply
from tests.security.conftest import token


@pytest.mark.django_db
class TestBinding:
    def test_an_intent_stops_only_the_named_owners_run(self) -> None:
        cancel_request(run_id="r-bound", user_id="bob")
        assert cancel_checker("r-bound", "alice")() is False
        assert cancel_checker("r-bound", None)() is False
        assert cancel_checker("r-bound", "bob")() is True
        forget_local("r-bound")  # another process: only the database knows
        for owner, stopped in (("alice", False), ("bob", True)):
            check = cancel_checker("r-bound", owner)
            assert check() is False  # nothing asked yet: a check never queries
            assert cancel_poll() == int(stopped)
            assert check() is stopped
            forget_local("r-bound")

    def test_an_unbound_intent_stops_whoevers_run(self) -> None:
        cancel_request(run_id="r-any", user_id=None)
        forget_local("r-any")
        alice, nobody = cancel_checker("r-any", "alice"), cancel_checker("r-any", None)
        assert alice() is False and nobody() is False
        cancel_poll()
        assert alice() is True and nobody() is True
        forget_local("r-any")

    def test_one_poll_asks_for_every_run_in_flight_and_stops_polling_ended_ones(self, django_assert_num_queries, monkeypatch) -> None:
        from jobs.services import cancellation

        monkeypatch.setattr(cancellation, "_polled", {})  # no other test's run in flight here
        checks = {f"r-{n}": cancel_checker(f"r-{n}", "carol") for n in range(1200)}
        for check in checks.values():
            check()  # each run's first check enrols it in the poll
        for run_id, user_id in (("r-7", "carol"), ("r-1100", None), ("r-9", "mallory")):  # asked in another process
            CancelIntent.objects.create(run_id=run_id, user_id=user_id)
        with django_assert_num_queries(3):  # 1,200 runs, 500 a statement
            assert cancel_poll() == 2
        assert [run for run, check in checks.items() if check()] == ["r-7", "r-1100"]
        for run_id in checks:
            forget_local(run_id)
        with django_assert_num_queries(0):
            assert cancel_poll() == 0

    def test_several_callers_may_ask_and_asking_twice_is_one_intent(self) -> None:
        for user in ("bob", "bob", "alice", None, None):
            cancel_request(run_id="r-many", user_id=user)
        rows = sorted(CancelIntent.objects.unscoped("test").filter(run_id="r-many").values_list("user_id", flat=True), key=str)
        assert rows == [None, "alice", "bob"]


def _start(live_api: str, headers: dict[str, str], session_id: str):
    """Start a streamed inline run held by the model; return its open lines and its run id."""
    client = httpx.Client(timeout=30)
    response = client.send(client.build_request("POST", f"{live_api}/agents/openai-agent/runs", headers=headers,
                                                data={"message": "talk slowly", "session_id": session_id}), stream=True)
    lines = response.iter_lines()
    for line in lines:
        if line.startswith("data: "):
            return lines, json.loads(line[6:])["run_id"]
    raise AssertionError("no event")


def _rest(lines) -> list[str]:
    """The names of the events still to come, to the end of the stream."""
    return [line[len("event: "):] for line in lines if line.startswith("event: ")]


@pytest.mark.django_db(transaction=True)
def test_a_cancel_on_a_brand_new_session_stops_the_callers_run_and_nobody_elses(live_api, fake_openai, jwt_server) -> None:
    alice, bob = ({"Authorization": f"Bearer {token(user)}"} for user in ("alice", "bob"))
    # Bob knows Alice's in-flight run id. The run is stored from its first moment, in Alice's
    # new session, so Bob's cancel answers as for an unknown run (it must not tell him the run
    # exists) and records nothing; were it recorded, it would be bound to him: Alice's run goes on.
    gate = threading.Event()
    fake_openai.push(Reply(text="one two three four", gate=gate, gate_after=1))
    response, run_id = _start(live_api, alice, "new-a1")
    assert Run.objects.for_user("alice").get(pk=run_id).status == "RUNNING"
    cancelled = httpx.post(f"{live_api}/agents/openai-agent/runs/{run_id}/cancel", params={"session_id": "bobs-own"}, headers=bob)
    assert (cancelled.status_code, cancelled.json()) == (200, {})
    gate.set()
    rest = _rest(response)
    assert rest[-1] == "RunCompleted" and "RunCancelled" not in rest
    assert Run.objects.for_user("alice").get(pk=run_id).status == "COMPLETED"
    # Named with Alice's session: the same answer, and still nothing of hers stops.
    refused = httpx.post(f"{live_api}/agents/openai-agent/runs/{run_id}/cancel", params={"session_id": "new-a1"}, headers=bob)
    assert (refused.status_code, refused.json()) == (200, {})
    assert not CancelIntent.objects.unscoped("test").filter(run_id=run_id).exists()

    # Alice cancels her own run on a session that does not exist yet: it stops.
    gate = threading.Event()
    fake_openai.push(Reply(text="one two three four", gate=gate, gate_after=1))
    response, run_id = _start(live_api, alice, "new-a2")
    cancelled = httpx.post(f"{live_api}/agents/openai-agent/runs/{run_id}/cancel", params={"session_id": "new-a2"}, headers=alice)
    assert (cancelled.status_code, cancelled.json()) == (200, {})
    gate.set()
    assert _rest(response)[-2:] == ["RunCancelled", "RunCompleted"]
    assert wait_for(lambda: Run.objects.for_user("alice").filter(pk=run_id).values_list("status", flat=True).first()) == "CANCELLED"


@pytest.mark.django_db(transaction=True)
def test_another_users_session_still_looks_missing(live_api, jwt_server) -> None:
    session = make_session("alice", session_id="alice-own", component_id="openai-agent")
    make_run("alice", session=session, run_id="alice-own-run", status="COMPLETED")
    response = httpx.post(f"{live_api}/agents/openai-agent/runs/some-run/cancel", params={"session_id": "alice-own"},
                          headers={"Authorization": f"Bearer {token('bob')}"})
    assert (response.status_code, response.json()) == (200, {})  # as for a session that does not exist
    assert not CancelIntent.objects.unscoped("test").exists()


@pytest.mark.django_db
class TestEnrolment:
    @pytest.fixture(autouse=True)
    def _own_poll(self, monkeypatch):
        from jobs.services import cancellation

        monkeypatch.setattr(cancellation, "_polled", {})  # no other test's run in flight here
        monkeypatch.setattr(cancellation, "_local", {})
        return cancellation

    def test_a_checker_released_elsewhere_stops_polling_only_when_the_last_one_is(self, _own_poll) -> None:
        parent_here, parent_in_a_branch = cancel_checker("wf-1", "dana"), cancel_checker("wf-1", "dana")
        parent_here(), parent_in_a_branch()
        parent_in_a_branch.release()
        parent_in_a_branch.release()  # twice changes nothing
        assert "wf-1" in _own_poll._polled  # the workflow run still executes here
        parent_here.release()
        assert _own_poll._polled == {}

    def test_an_intent_found_for_a_run_that_ended_meanwhile_is_not_kept(self, _own_poll, monkeypatch) -> None:
        check = cancel_checker("r-gone", "erin")
        check()
        CancelIntent.objects.create(run_id="r-gone", user_id="erin")
        real_filter = CancelIntent.objects.unscoped("test").filter

        def ended_during_the_query(*args, **kwargs):
            forget_local("r-gone")  # the run ends while the poll's statement runs
            return real_filter(*args, **kwargs)

        monkeypatch.setattr(type(CancelIntent.objects.unscoped("test")), "filter", lambda self, *a, **k: ended_during_the_query(*a, **k))
        assert cancel_poll() == 0
        assert _own_poll._local == {}
