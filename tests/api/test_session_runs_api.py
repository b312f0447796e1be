"""The /sessions family over HTTP, a session's runs: listings, previews, one run, and what is
never found or refused.

``client`` is an open server's caller (AgentOS without auth: every user's rows, ``user_id``
honoured as a filter); ``alice``/``bob`` are logged-in browser users, bound to their own rows
(user isolation).
"""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from sessions.models import Run, Session
from tests.api.sessions_data import ISO_T0, NO_MEDIA, OURS, T0, agent_session, stamp, streamed
from tests.factories import make_run, make_session

pytestmark = pytest.mark.django_db


# --- Runs of a session -----------------------------------------------------------------------------

def team_session() -> Session:
    """A team session: one team run led by 'crew' with a member run of 'researcher'."""
    session = stamp(make_session("alice", session_id="s-team", session_type="team", component_id="crew"))
    make_run("alice", session=session, run_id="lead", run_type="team", component_id="crew", status="COMPLETED",
             input={"input_content": "Research tea"}, created_at=T0 + timedelta(seconds=1),
             run_data={"content": "Tea is good.", "metrics": {"total_tokens": 9}, "events": [{"event": "TeamRunStarted"}]})
    make_run("alice", session=session, run_id="member", run_type="agent", component_id="researcher", parent_run_id="lead",
             status="COMPLETED", input={"input_content": "Find facts"}, created_at=T0 + timedelta(seconds=2),
             run_data={"content": {"facts": ["green"]}, "content_type": "Facts"})
    return session


class TestSessionRuns:
    def test_lists_an_agent_sessions_runs_without_nulls(self, client: Client) -> None:
        agent_session()
        response = client.get("/sessions/s-agent/runs")
        assert response.status_code == 200
        run = Run.all_users.get(pk="s-agent-r1")
        assert response.json() == [
            {
                "run_id": "s-agent-r1",
                "parent_run_id": "",
                "agent_id": "assistant",
                "user_id": "alice",
                "status": "COMPLETED",
                "run_input": "What tools do you have?",
                "content": "I can add numbers.",
                "run_response_format": "text",
                "reasoning_content": "",
                "reasoning_steps": [],
                "metrics": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
                "messages": run.run_data["messages"],
                "created_at": "2026-11-30T09:42:54Z",
                "references": [],
                "reasoning_messages": [],
                "images": [],
                "videos": [],
                "audio": [],
                "files": [],
                "input_media": NO_MEDIA,
                **OURS,
            }
        ]

    def test_a_streamed_runs_events_are_listed_without_the_content_deltas(self, client: Client) -> None:
        agent_session()
        kept = streamed(Run.all_users.get(pk="s-agent-r1"))
        listed = client.get("/sessions/s-agent/runs").json()
        assert [run["events"] for run in listed] == [kept]

    def test_a_team_session_lists_member_runs_before_the_team_run(self, client: Client) -> None:
        """As AgentOS stores them (a member's run ends first): agent-ui shows the member's reply above the team's answer."""
        team_session()
        assert client.get("/sessions/s-team/runs").json() == [
            {
                "run_id": "member",
                "parent_run_id": "lead",
                "agent_id": "researcher",
                "user_id": "alice",
                "status": "COMPLETED",
                "run_input": "Find facts",
                "content": {"facts": ["green"]},
                "run_response_format": "json",
                "reasoning_content": "",
                "reasoning_steps": [],
                "metrics": {},
                "created_at": "2026-11-30T09:42:55Z",
                "references": [],
                "reasoning_messages": [],
                "images": [],
                "videos": [],
                "audio": [],
                "files": [],
                "input_media": NO_MEDIA,
                **OURS,
            },
            {
                "run_id": "lead",
                "parent_run_id": "",
                "team_id": "crew",
                "user_id": "alice",
                "status": "COMPLETED",
                "content": "Tea is good.",
                "reasoning_content": "",
                "reasoning_steps": [],
                "run_input": "Research tea",
                "run_response_format": "text",
                "metrics": {"total_tokens": 9},
                "events": [{"event": "TeamRunStarted"}],
                "created_at": "2026-11-30T09:42:54Z",
                "references": [],
                "reasoning_messages": [],
                "input_media": NO_MEDIA,
                "images": [],
                "videos": [],
                "audio": [],
                "files": [],
                **OURS,
            },
        ]

    def test_a_workflow_run_is_listed_in_the_workflow_run_schema(self, client: Client) -> None:
        session = stamp(make_session("alice", session_id="s-flow", session_type="workflow", component_id="flow"))
        make_run("alice", session=session, run_id="wf", run_type="workflow", component_id="flow", status="PAUSED",
                 input={"input_content": {"topic": "tea"}}, created_at=T0,
                 run_data={"step_results": [{"step_name": "draft"}], "pause_kind": "step", "paused_step_index": 0})
        assert client.get("/sessions/s-flow/runs").json() == [
            {
                "run_id": "wf",
                "run_input": '{\n  "topic": "tea"\n}',
                "events": [],
                "workflow_id": "flow",
                "user_id": "alice",
                "content": "",
                "content_type": "",
                "status": "PAUSED",
                "step_results": [{"step_name": "draft"}],
                "step_executor_runs": [],
                "pause_kind": "step",
                "paused_step_index": 0,
                "metrics": {},
                "created_at": ISO_T0,
                "reasoning_content": "",
                "reasoning_steps": [],
                "references": [],
                "reasoning_messages": [],
                "images": [],
                "videos": [],
                "audio": [],
                "files": [],
                **OURS,
            }
        ]

    def test_type_agent_lists_every_run_as_an_agent_run(self, client: Client) -> None:
        team_session()
        runs = client.get("/sessions/s-team/runs?type=agent").json()
        assert [(run["run_id"], run["agent_id"], "team_id" in run) for run in runs] == [("member", "researcher", False), ("lead", "", False)]

    def test_status_filter_is_repeatable_and_case_insensitive(self, client: Client) -> None:
        session = make_session("alice", session_id="s")
        for index, status in enumerate(["COMPLETED", "RUNNING", "PAUSED", "ERROR"]):
            make_run("alice", session=session, run_id=f"r{index}", status=status)
        runs = client.get("/sessions/s/runs?status=running&status=Paused").json()
        assert [run["run_id"] for run in runs] == ["r1", "r2"]

    def test_an_unknown_status_is_400(self, client: Client) -> None:
        make_session("alice", session_id="s")
        response = client.get("/sessions/s/runs?status=done&status=running")
        assert (response.status_code, response.json()) == (
            400,
            {"detail": "Invalid status value(s) ['DONE']; expected one of ['CANCELLED', 'COMPLETED', 'ERROR', 'PAUSED', 'PENDING', 'REGENERATED', 'RUNNING']"},
        )

    def test_created_after_and_before_are_inclusive_whole_seconds(self, client: Client) -> None:
        session = make_session("alice", session_id="s")
        base = int(T0.timestamp())
        for index in range(4):
            make_run("alice", session=session, run_id=f"r{index}", created_at=T0 + timedelta(seconds=index, milliseconds=500))
        runs = client.get(f"/sessions/s/runs?created_after={base + 1}&created_before={base + 2}").json()
        assert [run["run_id"] for run in runs] == ["r1", "r2"]

    @pytest.mark.parametrize("query", [f"created_after={10**30}", f"created_before=-{10**30}", "created_after=99999999999999"])
    def test_out_of_range_times_match_nothing_rather_than_fail(self, client: Client, query: str) -> None:
        make_run("alice", session=make_session("alice", session_id="s"))
        response = client.get(f"/sessions/s/runs?{query}")
        assert (response.status_code, response.json()) == (200, [])

    def test_a_non_integer_time_is_422(self, client: Client) -> None:
        make_session("alice", session_id="s")
        response = client.get("/sessions/s/runs?created_after=yesterday")
        assert response.status_code == 422
        assert response.json()["detail"][0]["loc"] == ["query", "created_after"]

    @pytest.mark.parametrize("count", [1, 50])
    def test_runs_three_queries_whatever_the_number_of_runs(self, client: Client, count: int) -> None:
        session = make_session("alice", session_id="s")
        kept = [streamed(make_run("alice", session=session, run_data={"messages": [{"role": "user", "content": "x"}]})) for _ in range(count)]
        with CaptureQueriesContext(connection) as queries:
            runs = client.get("/sessions/s/runs").json()
        assert [run["events"] for run in runs] == kept
        assert len(queries.captured_queries) == 3  # the session, its runs, their events

    def test_missing_session_is_404(self, client: Client) -> None:
        response = client.get("/sessions/nope/runs")
        assert (response.status_code, response.json()) == (404, {"detail": "Session with ID nope not found"})

    def test_outsider_gets_404(self, bob: Client) -> None:
        agent_session("alice")
        assert bob.get("/sessions/s-agent/runs").status_code == 404
        assert bob.get("/sessions/s-agent/run-previews").status_code == 404


class TestRunPreviews:
    def test_previews_carry_ids_status_and_truncated_texts(self, client: Client) -> None:
        team_session()
        long_input = "word " * 100
        make_run("alice", session=Session.all_users.get(pk="s-team"), run_id="long", run_type="team", component_id="crew",
                 status="RUNNING", input={"input_content": long_input}, created_at=T0 + timedelta(seconds=3),
                 run_data={"content": "y" * 300})
        assert client.get("/sessions/s-team/run-previews").json() == [
            {"run_id": "member", "parent_run_id": "lead", "agent_id": "researcher", "user_id": "alice", "status": "COMPLETED",
             "run_input": "Find facts", "content_preview": '{"facts": ["green"]}', "created_at": "2026-11-30T09:42:55Z"},
            {"run_id": "lead", "parent_run_id": "", "team_id": "crew", "user_id": "alice", "status": "COMPLETED",
             "run_input": "Research tea", "content_preview": "Tea is good.", "created_at": "2026-11-30T09:42:54Z"},
        ]
        assert client.get("/sessions/s-team/run-previews?status=running").json() == [
            {"run_id": "long", "parent_run_id": "", "team_id": "crew", "user_id": "alice", "status": "RUNNING",
             "run_input": long_input[:280], "content_preview": "y" * 280, "created_at": "2026-11-30T09:42:56Z"},
        ]

    def test_previews_take_the_same_filters(self, client: Client) -> None:
        session = make_session("alice", session_id="s")
        make_run("alice", session=session, run_id="done", status="COMPLETED")
        make_run("alice", session=session, run_id="live", status="RUNNING")
        assert [p["run_id"] for p in client.get("/sessions/s/run-previews?status=running").json()] == ["live"]

    @pytest.mark.parametrize("count", [1, 50])
    def test_runs_two_queries_whatever_the_number_of_runs(self, client: Client, count: int) -> None:
        session = make_session("alice", session_id="s")
        for _ in range(count):
            make_run("alice", session=session)
        with CaptureQueriesContext(connection) as queries:
            previews = client.get("/sessions/s/run-previews").json()
        assert len(previews) == count
        assert len(queries.captured_queries) == 2


class TestSessionRun:
    def test_one_run_keeps_explicit_nulls(self, client: Client) -> None:
        agent_session()
        response = client.get("/sessions/s-agent/runs/s-agent-r1")
        assert response.status_code == 200
        body = response.json()
        assert body == {
            **client.get("/sessions/s-agent/runs").json()[0],
            "cancellation_stage": None,
            "metadata": None,
            "tools": None,
            "events": None,
            "citations": None,
            "session_state": None,
            "response_audio": None,
            "followups": None,
            "forked_from_run_id": None,
            "forked_from_message_index": None,
            "forked_from_session_id": None,
            "regenerated_from": None,
            "last_checkpoint_at_message_index": None,
            "previous_run_id": None,
        }
        assert list(body)[:4] == ["run_id", "parent_run_id", "agent_id", "user_id"]

    def test_a_streamed_run_carries_its_events_without_the_content_deltas(self, client: Client) -> None:
        agent_session()
        kept = streamed(Run.all_users.get(pk="s-agent-r1"))
        assert client.get("/sessions/s-agent/runs/s-agent-r1").json()["events"] == kept

    def test_the_schema_follows_the_runs_own_kind(self, client: Client) -> None:
        team_session()
        assert client.get("/sessions/s-team/runs/lead?type=agent").json()["team_id"] == "crew"
        member = client.get("/sessions/s-team/runs/member").json()
        assert (member["agent_id"], member["parent_run_id"], "team_id" in member) == ("researcher", "lead", False)

    def test_missing_session_run_and_runless_session_are_404s(self, client: Client) -> None:
        agent_session()
        make_session("alice", session_id="empty")
        cases = {
            "/sessions/nope/runs/x": "Session with ID nope not found",
            "/sessions/empty/runs/x": "Session with ID empty has no runs",
            "/sessions/s-agent/runs/x": "Run with ID x not found in session s-agent",
        }
        for url, detail in cases.items():
            response = client.get(url)
            assert (response.status_code, response.json()) == (404, {"detail": detail}), url

    def test_a_run_of_another_session_is_404(self, client: Client) -> None:
        agent_session("alice", "one")
        agent_session("alice", "two")
        assert client.get("/sessions/two/runs/one-r1").status_code == 404

    def test_outsider_gets_404(self, bob: Client) -> None:
        agent_session("alice")
        response = bob.get("/sessions/s-agent/runs/s-agent-r1")
        assert (response.status_code, response.json()) == (404, {"detail": "Session with ID s-agent not found"})


def test_media_is_never_found(client: Client) -> None:
    agent_session()
    response = client.get("/sessions/s-agent/media/images/a/b.png")
    assert (response.status_code, response.json()) == (404, {"detail": "Media not found"})


def test_wrong_method_is_405(client: Client) -> None:
    response = client.put("/sessions/s", {}, content_type="application/json")
    assert (response.status_code, response.json()) == (405, {"detail": "Method Not Allowed"})


def test_a_runs_own_component_ids_decide_its_schema(client: Client) -> None:
    """A member run recorded under the team's kind still lists as the agent run its output says it is."""
    session = make_session("alice", session_id="s", session_type="team", component_id="crew")
    make_run("alice", session=session, run_id="lead", run_type="team", component_id="crew")
    make_run("alice", session=session, run_id="member", run_type="team", component_id="crew", parent_run_id="lead",
             run_data={"agent_id": "researcher", "agent_name": "Researcher"})
    runs = client.get("/sessions/s/runs").json()
    assert [(run["run_id"], run.get("team_id"), run.get("agent_id")) for run in runs] == [("member", None, "researcher"), ("lead", "crew", None)]


@pytest.mark.parametrize(
    ("method", "url", "body", "loc"),
    [
        ("get", "/sessions/%00", None, ["path", "session_id"]),
        ("get", "/sessions?session_name=a%00", None, ["query", "session_name"]),
        ("get", "/sessions?user_id=%00", None, ["query", "user_id"]),
        ("get", "/sessions/s/runs/%00", None, ["path", "run_id"]),
        ("delete", "/sessions/%00", None, ["path", "session_id"]),
        ("post", "/sessions", '{"session_state": {"a": "\\u0000"}}', ["body", "session_state", "a"]),
        ("post", "/sessions", '{"metadata": {"k\\u0000": 1}}', ["body", "metadata"]),
        ("post", "/sessions", '{"session_state": {"a": [1e400]}}', ["body", "session_state", "a", 0]),
        ("patch", "/sessions/s", '{"session_state": {"deep": [[{"x": "\\u0000"}]]}}', ["body", "session_state", "deep", 0, 0, "x"]),
        ("post", "/sessions", '{"session_name": "a\\u0000"}', ["body", "session_name"]),
        ("post", "/sessions", '{"session_id": "' + "x" * 256 + '"}', ["body", "session_id"]),
        ("post", "/sessions", "[" * 100_000 + "]" * 100_000, ["body"]),
    ],
)
def test_input_the_database_cannot_take_is_422_not_a_server_error(client: Client, method: str, url: str, body: str | None, loc: list[str]) -> None:
    make_session("alice", session_id="s")
    response = getattr(client, method)(url, body, content_type="application/json") if body is not None else getattr(client, method)(url)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == loc
