"""agent-ui (Agno's Next.js chat, served on http://localhost:3000) against our defaults: its
preflights, a new chat whose history it reloads while the first answer streams, and a team's
member runs listed before the team's, as AgentOS stores them."""
from __future__ import annotations

import json
import threading

import httpx
import pytest

from sessions.models import Run
from tests.api.sse import parse_sse
from tests.fakes.openai_server import Reply

pytestmark = pytest.mark.django_db(transaction=True)
UI = {"Origin": "http://localhost:3000"}


def preflight(base: str, method: str, path: str, headers: str) -> httpx.Response:
    return httpx.options(f"{base}{path}", headers={**UI, "Access-Control-Request-Method": method, "Access-Control-Request-Headers": headers}, timeout=10)


def session_runs(base: str, session_id: str, kind: str, db_id: str) -> httpx.Response:
    """agent-ui's getSessionAPI: GET /sessions/{id}/runs?type=…&db_id=…"""
    return httpx.get(f"{base}/sessions/{session_id}/runs", params={"type": kind, "db_id": db_id}, headers=UI, timeout=10)


def test_a_new_chats_first_answer_keeps_its_words(live_api: str, fake_openai) -> None:
    agents = httpx.get(f"{live_api}/agents", headers=UI, timeout=10)
    assert agents.headers["access-control-allow-origin"] == "http://localhost:3000"
    db_id = next(agent for agent in agents.json() if agent["id"] == "openai-agent")["db_id"]
    allowed = preflight(live_api, "POST", "/agents/openai-agent/runs", "content-type")
    assert (allowed.status_code, allowed.headers["access-control-allow-headers"]) == (200, "content-type")
    assert preflight(live_api, "GET", f"/sessions/x/runs", "authorization").status_code == 200

    gate = threading.Event()
    fake_openai.push(Reply(text="Paris is the capital of France", gate=gate, gate_after=2))
    seen: list[tuple[str, dict]] = []
    with httpx.stream("POST", f"{live_api}/agents/openai-agent/runs", data={"message": "capital of France?", "stream": "true", "session_id": ""}, headers=UI, timeout=30) as response:
        assert response.headers["access-control-allow-origin"] == "http://localhost:3000"
        buffer = ""
        chunks = response.iter_text()
        while not any(name == "RunContent" for name, _ in seen):
            buffer += next(chunks)
            while "\n\n" in buffer:
                block, buffer = buffer.split("\n\n", 1)
                seen += parse_sse(block + "\n\n")
        started = seen[0][1]
        session_id, run_id = started["session_id"], started["run_id"]
        # RunStarted named the session: agent-ui reloads its history now. AgentOS has stored
        # nothing yet (404), and agent-ui keeps the text it is streaming.
        during = session_runs(live_api, session_id, "agent", db_id)
        assert (during.status_code, during.json()) == (404, {"detail": f"Session with ID {session_id} not found"})
        assert httpx.get(f"{live_api}/sessions/{session_id}", params={"type": "agent"}, headers=UI, timeout=10).status_code == 404
        # The run exists from its first moment all the same, for whoever asks for it.
        assert Run.all_users.get(pk=run_id).status == "RUNNING"
        running = httpx.get(f"{live_api}/sessions/{session_id}/runs", params={"status": "RUNNING"}, timeout=10).json()
        assert [(run["run_id"], run["status"]) for run in running] == [(run_id, "RUNNING")]
        gate.set()
        for chunk in chunks:
            buffer += chunk
    seen += parse_sse(buffer)
    assert seen[-1][0] == "RunCompleted"
    after = session_runs(live_api, session_id, "agent", db_id)
    assert after.status_code == 200
    assert [(run["run_id"], run["status"], run["content"]) for run in after.json()] == [(run_id, "COMPLETED", "Paris is the capital of France")]


def test_a_teams_member_runs_come_before_its_answer(live_api: str) -> None:
    delegate = "/call delegate_task_to_member " + json.dumps({"member_id": "researcher", "task": "find the boiling point"})
    response = httpx.post(f"{live_api}/teams/research-team/runs", data={"message": delegate, "stream": "false", "session_id": "ui-team"}, headers=UI, timeout=30)
    assert response.status_code == 200, response.text
    team_run = response.json()
    [member] = team_run["member_responses"]
    db_id = next(team for team in httpx.get(f"{live_api}/teams", timeout=10).json() if team["id"] == "research-team")["db_id"]
    listed = session_runs(live_api, "ui-team", "team", db_id).json()
    assert [(run["run_id"], run.get("parent_run_id") or None) for run in listed] == [(member["run_id"], team_run["run_id"]), (team_run["run_id"], None)]
    # The team's answer last: agent-ui shows the member's reply above it.
    assert listed[-1]["content"] == team_run["content"]
