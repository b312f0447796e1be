"""/ws/runs on the live ASGI server: follow, replay and cancel runs, guarded like REST."""
from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from jobs.models import Job, JobStatus
from sessions.models import Run, RunEvent
from tests.agents.conftest import wait_for
from tests.api.sse import parse_sse
from tests.factories import make_event, make_run, make_session
from tests.fakes._base import Reply
from tests.security.conftest import USER_SCOPES, token

pytestmark = pytest.mark.django_db(transaction=True)


def ws_url(base: str) -> str:
    return base.replace("http://", "ws://") + "/ws/runs"


class Socket:
    """A client that sorts what arrives into control messages (JSON) and run events (SSE text)."""

    def __init__(self, base: str, **headers: str) -> None:
        self.url, self.headers = ws_url(base), headers

    def __enter__(self) -> Socket:
        self.conn = connect(self.url, additional_headers=self.headers, open_timeout=10).__enter__()
        self.hello = self.control()
        return self

    def __exit__(self, *exc: object) -> None:
        self.conn.__exit__(*exc)

    def send(self, **message: Any) -> None:
        self.conn.send(json.dumps(message))

    def receive(self) -> tuple[str, dict[str, Any]]:
        text = self.conn.recv(timeout=20)
        if text.startswith("event: "):
            [(name, data)] = parse_sse(text)
            return name, data
        body = json.loads(text)
        return "control:" + body["event"], body

    def control(self) -> dict[str, Any]:
        kind, body = self.receive()
        assert kind.startswith("control:"), (kind, body)
        return body

    def events_until_end(self) -> tuple[list[dict[str, Any]], list[tuple[str, dict[str, Any]]]]:
        controls, events = [], []
        while True:
            kind, body = self.receive()
            if kind.startswith("control:"):
                controls.append(body)
                continue
            events.append((kind, body))
            if kind in ("RunCompleted", "RunError", "RunCancelled", "RunPaused"):
                return controls, events


def _nested(depth: int) -> Any:
    value: Any = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def finished(run_id: str) -> str | None:
    status = Run.objects.unscoped("test").get(pk=run_id).status
    return status if status in ("COMPLETED", "ERROR", "CANCELLED", "PAUSED") else None


class TestProtocol:
    def test_connected_ping_and_bad_messages(self, live_api) -> None:
        with Socket(live_api) as socket:
            assert socket.hello == {"event": "connected", "message": "Connected to Agno Site.", "requires_auth": False}
            socket.send(action="ping")
            assert socket.control() == {"event": "pong"}
            socket.conn.send("not json")
            assert socket.control()["error_type"] == "invalid_message"
            socket.send(action="fly")
            assert socket.control() == {"event": "error", "error": "Unknown action: fly", "error_type": "unknown_action"}
            socket.send(action="reconnect")
            assert socket.control()["error"] == "run_id is required"
            socket.send(action="reconnect", run_id="r", last_event_index="x")
            assert socket.control()["error"].startswith("last_event_index must be an integer")
            socket.send(action="reconnect", run_id="no-such-run")
            assert socket.control() == {"event": "error", "error": "Run not found", "error_type": "run_not_found", "run_id": "no-such-run"}

    def test_a_deeply_nested_binary_or_empty_frame_gets_an_error_and_the_socket_stays(self, live_api) -> None:
        deep = '{"action": "ping", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
        too_deep = {"event": "error", "error": "JSON decode error: nested more than 64 levels deep", "error_type": "invalid_message"}
        with Socket(live_api) as socket:
            socket.conn.send(deep)
            assert socket.control() == too_deep
            socket.conn.send(json.dumps({"action": "ping", "x": _nested(64)}))
            assert socket.control() == too_deep
            socket.conn.send(b'{"action": "ping"}')
            assert socket.control()["error_type"] == "invalid_message"
            socket.conn.send("")
            assert socket.control()["error_type"] == "invalid_message"
            socket.send(action="ping", x=_nested(63))  # 64 levels with the frame's own object
            assert socket.control() == {"event": "pong"}

    def test_a_finished_run_is_replayed_from_an_index(self, live_api) -> None:
        session = make_session("alice", session_id="ws-done", component_id="assistant")
        run = make_run("alice", session=session, run_id="ws-done-run", status="COMPLETED")
        for index, name in enumerate(["RunStarted", "RunContent", "RunContent", "RunCompleted"]):
            make_event("alice", run=run, event_index=index, payload={"event": name, "run_id": run.pk})
        with Socket(live_api) as socket:
            socket.send(action="reconnect", run_id=run.pk, session_id=session.pk, last_event_index=1)
            controls, events = socket.events_until_end()
            assert controls == [{"event": "replay", "run_id": run.pk, "status": "COMPLETED", "total_events": 2,
                                 "message": "Run completed. Replaying stored events from database."}]
            assert [(name, data["event_index"]) for name, data in events] == [("RunContent", 2), ("RunCompleted", 3)]


def test_following_a_live_background_run_misses_and_repeats_nothing(live_api, worker, fake_openai) -> None:
    gate = threading.Event()
    fake_openai.default = Reply(text="one two three four five six", gate=gate, gate_after=2)
    run_id = httpx.post(f"{live_api}/agents/openai-agent/runs", data={
        "message": "follow me", "background": "true", "stream": "false", "user_id": "alice", "session_id": "ws-live",
    }, timeout=30).json()["run_id"]
    # The run is held in its model call; its first events are stored: "the page before the reload".
    wait_for(lambda: RunEvent.objects.unscoped("test").filter(run_id=run_id).exists())
    with Socket(live_api) as socket:
        socket.send(action="reconnect", run_id=run_id, session_id="ws-live", last_event_index=0)
        assert socket.control()["event"] == "catch_up"
        gate.set()
        controls, events = socket.events_until_end()
        assert [control["event"] for control in controls] == ["subscribed"]
        indexes = [data["event_index"] for _, data in events]
        assert indexes == list(range(1, len(indexes) + 1))
        assert events[-1][0] == "RunCompleted" and "one two three" in events[-1][1]["content"]
        # Live events go out before the final write commits: wait for it, then compare.
        assert wait_for(lambda: finished(run_id)) == "COMPLETED"
        stored = list(RunEvent.objects.unscoped("test").filter(run_id=run_id).order_by("event_index").values_list("event_index", flat=True))
        assert stored == [0] + indexes


class TestGuarded:
    """With JWT and isolation on, the socket answers exactly as REST does."""

    @pytest.fixture
    def alice_run(self, jwt_server) -> Run:
        session = make_session("alice", session_id="ws-alice", component_id="assistant")
        run = make_run("alice", session=session, run_id="ws-alice-run", status="COMPLETED")
        make_event("alice", run=run, event_index=0, payload={"event": "RunCompleted", "run_id": run.pk, "content": "ALICE-ONLY"})
        return run

    def test_actions_wait_for_authentication(self, live_api, alice_run) -> None:
        with Socket(live_api) as socket:
            assert socket.hello["requires_auth"] is True
            socket.send(action="reconnect", run_id=alice_run.pk, session_id="ws-alice")
            assert socket.control()["event"] == "auth_required"
            socket.send(action="authenticate", token="garbage")
            assert socket.control()["event"] == "auth_error"
            socket.send(action="authenticate", token=token("alice", key="not-the-server-key-0123456789-0123456789"))
            assert socket.control()["event"] == "auth_error"
            socket.send(action="authenticate", token=token("alice"))
            assert socket.control()["event"] == "authenticated"
            socket.send(action="reconnect", run_id=alice_run.pk, session_id="ws-alice")
            _controls, events = socket.events_until_end()
            assert events == [("RunCompleted", {"event": "RunCompleted", "run_id": alice_run.pk, "content": "ALICE-ONLY", "event_index": 0})]

    def test_another_users_run_is_not_found_like_a_missing_one(self, live_api, alice_run) -> None:
        with Socket(live_api, Authorization=f"Bearer {token('bob')}") as socket:
            assert socket.hello["requires_auth"] is False
            socket.send(action="reconnect", run_id=alice_run.pk, session_id="ws-alice")
            refused = socket.control()
            socket.send(action="reconnect", run_id="missing-run", session_id="ws-alice")
            missing = socket.control()
            assert (refused, missing) == (
                {"event": "error", "error": "Run not found", "error_type": "run_not_found", "run_id": alice_run.pk},
                {"event": "error", "error": "Run not found", "error_type": "run_not_found", "run_id": "missing-run"},
            )
            socket.send(action="cancel", run_id=alice_run.pk, session_id="ws-alice")
            assert socket.control()["error_type"] == "run_not_found"
            socket.send(action="reconnect", run_id=alice_run.pk)
            assert socket.control()["error"] == "session_id is required for this action"
        assert Run.objects.for_user("alice").get(pk=alice_run.pk).status == "COMPLETED"

    def test_a_token_without_the_run_scope_is_refused(self, live_api, alice_run) -> None:
        scopes = [scope for scope in USER_SCOPES if scope != "agents:run"]
        with Socket(live_api, Authorization=f"Bearer {token('alice', scopes)}") as socket:
            socket.send(action="reconnect", run_id=alice_run.pk, session_id="ws-alice")
            assert socket.control() == {
                "event": "error", "error": "Insufficient permissions. Required scope(s): agents:run", "error_type": "run_forbidden", "run_id": alice_run.pk,
            }

    def test_a_refused_handshake_credential_is_reported(self, live_api, alice_run) -> None:
        with Socket(live_api, Authorization="Bearer nope") as socket:
            assert socket.hello["requires_auth"] is True
            assert socket.control()["event"] == "auth_error"


def test_cancel_over_the_socket_stops_a_background_run(live_api, worker, fake_openai, jwt_server) -> None:
    gate = threading.Event()
    fake_openai.default = Reply(text="never finished", gate=gate)
    headers = {"Authorization": f"Bearer {token('alice')}"}
    body = httpx.post(f"{live_api}/agents/openai-agent/runs", headers=headers, data={
        "message": "stop me", "background": "true", "stream": "false", "session_id": "ws-cancel",
    }, timeout=30).json()
    run_id = body["run_id"]
    fake_openai.wait_for_requests(1, timeout=20)  # the run is in its model call
    with Socket(live_api, Authorization=f"Bearer {token('alice')}") as socket:
        socket.send(action="cancel", run_id=run_id, session_id="ws-cancel")
        assert socket.control() == {"event": "cancel_requested", "run_id": run_id}
        gate.set()
        assert wait_for(lambda: finished(run_id)) == "CANCELLED"
        assert Job.objects.for_user("alice").get(pk=run_id).status == JobStatus.CANCELLED


class TestGuest:
    """make run's default: anonymous guests name the user they act for, as on REST (user_id)."""

    def test_a_guest_follows_and_cancels_the_run_of_the_user_it_names(self, live_api, settings, django_user_model) -> None:
        settings.ANONYMOUS_ACCESS, settings.AGENT_OS_AUTH_MODE = "guests", "none"
        django_user_model.objects.create_user("carol", password="pw-carol-123")
        session = make_session("ada", session_id="ws-ada", component_id="assistant")
        run = make_run("ada", session=session, run_id="ws-ada-run", status="COMPLETED")
        make_event("ada", run=run, event_index=0, payload={"event": "RunCompleted", "run_id": run.pk, "content": "ADA-ONLY"})
        not_found = {"event": "error", "error": "Run not found", "error_type": "run_not_found", "run_id": run.pk}
        with Socket(live_api) as socket:
            socket.send(action="reconnect", run_id=run.pk, session_id="ws-ada", user_id="ada")
            _controls, events = socket.events_until_end()
            assert events == [("RunCompleted", {"event": "RunCompleted", "run_id": run.pk, "content": "ADA-ONLY", "event_index": 0})]
            # Another guest name, or none, finds nothing of ada's: ownerless runs only.
            for other in ({"user_id": "bea"}, {}):
                socket.send(action="reconnect", run_id=run.pk, session_id="ws-ada", **other)
                assert socket.control() == not_found
                socket.send(action="cancel", run_id=run.pk, session_id="ws-ada", **other)
                assert socket.control() == not_found
            socket.send(action="reconnect", run_id=run.pk, session_id="ws-ada", user_id=7)
            assert socket.control() == {"event": "error", "error": "user_id must be a string", "error_type": "invalid_message"}
            # A user who signs in is theirs alone: refused as REST refuses it (403), and the socket stays.
            socket.send(action="reconnect", run_id=run.pk, session_id="ws-ada", user_id="carol")
            refused = socket.control()
            assert (refused["error_type"], refused["run_id"]) == ("forbidden", run.pk) and "belongs to someone who signs in" in refused["error"]
            socket.send(action="cancel", run_id=run.pk, session_id="ws-ada", user_id="ada")
            assert socket.control() == {"event": "cancel_requested", "run_id": run.pk}
            socket.send(action="ping")
            assert socket.control() == {"event": "pong"}


class TestBrowser:
    def test_the_login_cookie_works_from_this_site_and_not_from_another(self, live_api, django_user_model, client) -> None:
        user = django_user_model.objects.create_user("carol", password="pw-carol-123")
        client.force_login(user)
        cookie = f"sessionid={client.cookies['sessionid'].value}"
        session = make_session("carol", session_id="ws-carol", component_id="assistant")
        run = make_run("carol", session=session, run_id="ws-carol-run", status="COMPLETED")
        make_event("carol", run=run, event_index=0, payload={"event": "RunCompleted", "run_id": run.pk})
        with Socket(live_api, Cookie=cookie, Origin=live_api) as socket:
            socket.send(action="reconnect", run_id=run.pk, session_id="ws-carol")
            _controls, events = socket.events_until_end()
            assert [name for name, _ in events] == ["RunCompleted"]

    def test_another_sites_page_cannot_open_a_socket(self, live_api, settings) -> None:
        settings.ALLOWED_HOSTS = ["127.0.0.1"]
        settings.CORS_CONFIGURED_ORIGINS = ["https://app.example.com"]
        with pytest.raises(InvalidStatus) as refused:
            Socket(live_api, Origin="https://evil.example.net").__enter__()
        assert refused.value.response.status_code == 403
        for origin in ("https://app.example.com", live_api):
            with Socket(live_api, Origin=origin) as socket:
                assert socket.hello["event"] == "connected"
