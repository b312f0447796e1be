"""The /teams family over HTTP: catalogue, team runs (JSON, SSE, background), member runs stored
as child rows, HITL in a member, poll, list, cancel, resume, checkpoints, forks, isolation."""
from __future__ import annotations

import json
import time

import httpx
import pytest

from sessions.models import Run, RunEvent, Session
from tests.api.sse import parse_sse

pytestmark = pytest.mark.django_db(transaction=True)


def delegate(member_id: str, task: str) -> str:
    """The offline leader's message that delegates ``task`` to ``member_id``."""
    return "/call delegate_task_to_member " + json.dumps({"member_id": member_id, "task": task})


def post_team_run(base: str, team_id: str = "research-team", **form: str) -> httpx.Response:
    form.setdefault("stream", "false")
    return httpx.post(f"{base}/teams/{team_id}/runs", data=form, timeout=30)


class TestCatalogue:
    def test_teams_list_with_mode_members_and_the_delegation_tool(self, live_api: str) -> None:
        teams = httpx.get(f"{live_api}/teams").json()
        assert [(team["id"], team["mode"]) for team in teams] == [("research-team", "coordinate"), ("hitl-team", "route")]
        research = httpx.get(f"{live_api}/teams/research-team").json()
        assert research == teams[0]
        assert [member["id"] for member in research["members"]] == ["researcher", "writer"]
        assert research["members"][1]["tools"]["tools"][0]["name"] == "add"
        assert research["streaming"] == {"stream_member_events": True}
        assert [tool["name"] for tool in research["tools"]["tools"]] == ["delegate_task_to_member"]
        assert research["model"] == {"name": "OfflineModel", "model": "demo", "provider": "Offline"}
        assert research["sessions"] == {"session_table": "agno_sessions", "add_history_to_context": True}

    def test_a_missing_team_is_agentos_404(self, live_api: str) -> None:
        assert httpx.get(f"{live_api}/teams/crew").json() == {"detail": "Team not found"}
        response = post_team_run(live_api, "crew", message="hi")
        assert (response.status_code, response.json()) == (404, {"detail": "Team not found"})
        # An agent is not a team, nor a team an agent.
        assert post_team_run(live_api, "assistant", message="hi").status_code == 404
        assert httpx.post(f"{live_api}/agents/research-team/runs", data={"message": "hi", "stream": "false"}).status_code == 404


class TestTeamRuns:
    def test_a_delegation_is_one_team_run_and_one_member_run(self, live_api: str) -> None:
        response = post_team_run(live_api, message=delegate("researcher", "find the boiling point"), session_id="t-1", user_id="alice")
        assert response.status_code == 200, response.text
        body = response.json()
        assert (body["status"], body["team_id"], body["team_name"], body["session_id"]) == ("COMPLETED", "research-team", "Research Team", "t-1")
        [member] = body["member_responses"]
        assert (member["agent_id"], member["status"], member["parent_run_id"]) == ("researcher", "COMPLETED", body["run_id"])
        assert member["content"].startswith("(offline demo) You said: find the boiling point")
        # The leader was told the member's answer, and composed the team's from it.
        assert body["content"].startswith("(offline demo) The team answered: (offline demo) You said: find the boiling point")
        [call] = body["tools"]
        assert (call["tool_name"], call["child_run_id"]) == ("delegate_task_to_member", member["run_id"])

        session = Session.objects.for_user("alice").get(pk="t-1")
        assert (session.session_type, session.component_id) == ("team", "research-team")
        rows = {run.pk: run for run in Run.objects.for_user("alice").filter(session_id="t-1")}
        assert (rows[body["run_id"]].run_type, rows[body["run_id"]].parent_run_id) == ("team", None)
        child = rows[member["run_id"]]
        assert (child.run_type, child.component_id, child.parent_run_id, child.status) == ("agent", "researcher", body["run_id"], "COMPLETED")
        assert child.input == {"input_content": "find the boiling point"}
        # Where each came from: the team's run from an API client, the member's from inside it.
        assert (rows[body["run_id"]].origin, child.origin, session.origin) == ("api", "team_member", "api")
        # The session's tokens count the leader's and the member's.
        assert session.total_tokens == rows[body["run_id"]].total_tokens + child.total_tokens > child.total_tokens

    def test_a_stream_relays_the_members_events_between_the_teams(self, live_api: str) -> None:
        response = httpx.post(
            f"{live_api}/teams/research-team/runs", data={"message": delegate("writer", "/call add {\"a\": 2, \"b\": 3}"), "user_id": "alice"}, timeout=30,
        )
        frames = parse_sse(response.text)
        names = [name for name, _ in frames]
        assert names[0] == "TeamRunStarted" and names[-1] == "TeamRunCompleted"
        started = names.index("TeamToolCallStarted")
        member_events = [data for name, data in frames if name in ("RunStarted", "ToolCallCompleted", "RunCompleted")]
        team_run_id = frames[0][1]["run_id"]
        assert started < names.index("RunStarted") < names.index("RunCompleted") < names.index("TeamToolCallCompleted")
        assert {(data["agent_id"], data["parent_run_id"], data["nested_depth"]) for data in member_events} == {("writer", team_run_id, 1)}
        assert frames[-1][1]["member_responses"][0]["content"] == 'Tool add returned: {"operation": "addition", "result": 5.0}'
        assert all(data.get("team_id") == "research-team" for name, data in frames if name.startswith("Team"))
        # Stored once, as the team run's events; the member's row has none of its own.
        member_run_id = frames[-1][1]["member_responses"][0]["run_id"]
        stored = list(RunEvent.objects.for_user("alice").filter(run_id=team_run_id).order_by("event_index").values_list("event", flat=True))
        assert stored[0] == "TeamRunStarted" and "RunStarted" in stored and stored[-1] == "TeamRunCompleted"
        assert not RunEvent.objects.for_user("alice").filter(run_id=member_run_id).exists()

    def test_the_offline_leader_delegates_a_plain_message_to_the_member_it_names(self, live_api: str) -> None:
        body = post_team_run(live_api, message="writer, please draft a haiku", user_id="alice").json()
        assert [member["agent_id"] for member in body["member_responses"]] == ["writer"]
        assert body["content"].startswith("(offline demo) The team answered: (offline demo) You said: writer, please draft a haiku")

    def test_history_carries_the_members_earlier_answers(self, live_api: str) -> None:
        post_team_run(live_api, message=delegate("researcher", "first question"), session_id="t-h", user_id="alice")
        body = post_team_run(live_api, message=delegate("researcher", "second question"), session_id="t-h", user_id="alice").json()
        # The member sees its own earlier run of the session as history.
        assert 'the previous one was: "first question"' in body["member_responses"][0]["content"]

    def test_background_team_run_is_polled_to_its_end(self, live_api: str, worker) -> None:
        accepted = post_team_run(live_api, message=delegate("researcher", "in the background"), background="true", user_id="alice", session_id="t-bg")
        assert accepted.status_code == 202, accepted.text
        run_id = accepted.json()["run_id"]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            polled = httpx.get(f"{live_api}/teams/research-team/runs/{run_id}", params={"session_id": "t-bg"}).json()
            if polled["status"] not in ("PENDING", "RUNNING"):
                break
            time.sleep(0.2)
        assert polled["status"] == "COMPLETED", polled
        assert polled["member_responses"][0]["agent_id"] == "researcher"
        assert Run.objects.for_user("alice").filter(parent_run_id=run_id, component_id="researcher", status="COMPLETED").count() == 1
        assert Session.objects.for_user("alice").get(pk="t-bg").session_type == "team"

    def test_list_poll_cancel_resume_and_checkpoints(self, live_api: str) -> None:
        body = post_team_run(live_api, message=delegate("researcher", "list me"), session_id="t-l", user_id="alice").json()
        listed = httpx.get(f"{live_api}/teams/research-team/runs", params={"session_id": "t-l"}).json()
        assert [run["run_id"] for run in listed] == [body["run_id"]]  # the team's runs; members are the members'
        assert listed[0]["team_id"] == "research-team"
        polled = httpx.get(f"{live_api}/teams/research-team/runs/{body['run_id']}", params={"session_id": "t-l"}).json()
        assert (polled["status"], len(polled["member_responses"])) == ("COMPLETED", 1)
        assert httpx.get(f"{live_api}/teams/hitl-team/runs/{body['run_id']}", params={"session_id": "t-l"}).json() == {"detail": "Run not found"}
        assert httpx.post(f"{live_api}/teams/research-team/runs/{body['run_id']}/cancel", params={"session_id": "t-l"}).json() == {}
        checkpoints = httpx.get(f"{live_api}/teams/research-team/runs/{body['run_id']}/checkpoints", params={"session_id": "t-l"}).json()
        assert checkpoints["run_id"] == body["run_id"] and checkpoints["checkpoints"]
        index = checkpoints["checkpoints"][0]["message_index"]
        snapshot = httpx.get(f"{live_api}/teams/research-team/runs/{body['run_id']}/checkpoints/{index}", params={"session_id": "t-l"})
        assert snapshot.status_code == 200, snapshot.text
        resumed = parse_sse(httpx.post(f"{live_api}/teams/research-team/runs/{body['run_id']}/resume", data={"session_id": "t-l"}).text)
        # A non-streamed run replays its structural events, the members' included; its end carries the answer.
        names = [name for name, _ in resumed]
        assert names[0] == "replay" and names[-1] == "TeamRunCompleted" and "RunStarted" in names and "TeamRunContent" not in names

    def test_a_fork_of_a_team_session_copies_the_member_runs(self, live_api: str) -> None:
        body = post_team_run(live_api, message=delegate("researcher", "fork me"), session_id="t-f", user_id="alice").json()
        fork = httpx.post(f"{live_api}/teams/research-team/sessions/t-f/fork", params={"user_id": "alice"}).json()
        copies = {run.parent_run_id: run for run in Run.objects.for_user("alice").filter(session_id=fork["session_id"])}
        team_copy = copies[None]
        assert team_copy.run_type == "team" and team_copy.pk != body["run_id"]
        assert copies[team_copy.pk].component_id == "researcher"
        assert team_copy.run_data["member_responses"][0]["run_id"] == copies[team_copy.pk].pk
        assert httpx.post(f"{live_api}/agents/assistant/sessions/t-f/fork").status_code == 404


class TestMemberHumanInTheLoop:
    TASK = '/call delete_file {"path": "report.txt"}'

    def test_a_members_pause_pauses_the_team_and_continue_resumes_both(self, live_api: str) -> None:
        paused = post_team_run(live_api, "hitl-team", message=delegate("hitl-member", self.TASK), session_id="t-p", user_id="alice").json()
        assert paused["status"] == "PAUSED"
        [requirement] = paused["requirements"]
        assert requirement["member_agent_id"] == "hitl-member"
        member_run_id = requirement["member_run_id"]
        # As AgentOS (store_events on): a non-streamed team run keeps its pause as its one event.
        [pause] = paused["events"]
        assert (pause["event"], pause["run_id"], pause["requirements"]) == ("TeamRunPaused", paused["run_id"], paused["requirements"])
        assert Run.objects.for_user("alice").get(pk=member_run_id).status == "PAUSED"  # stored with the team's pause

        requirement["confirmation"] = True
        response = httpx.post(
            f"{live_api}/teams/hitl-team/runs/{paused['run_id']}/continue",
            data={"requirements": json.dumps([requirement]), "session_id": "t-p", "stream": "false"}, timeout=30,
        )
        assert response.status_code == 200, response.text
        done = response.json()
        assert done["status"] == "COMPLETED"
        # Route mode: the member's answer is the team's.
        assert done["content"] == "Tool delete_file returned: deleted report.txt"
        assert [event["event"] for event in done["events"]] == ["TeamRunPaused", "TeamRunContinued"]
        assert done["events"][0] == pause
        # As AgentOS: the member's requirement was answered in the member's run; the team keeps none.
        assert done["requirements"] == []
        assert done["member_responses"][0]["requirements"][0]["tool_execution"]["confirmed"] is True
        completed = post_team_run(live_api, message=delegate("researcher", "plain"), session_id="t-p2", user_id="alice").json()
        assert "events" not in completed  # Agno keeps none for a non-streamed run that simply ends
        member = Run.objects.for_user("alice").get(pk=member_run_id)
        assert (member.status, member.parent_run_id) == ("COMPLETED", paused["run_id"])
        assert Run.objects.for_user("alice").filter(session_id="t-p").count() == 2  # updated in place, not copied

    def test_bad_decisions_are_client_errors(self, live_api: str) -> None:
        paused = post_team_run(live_api, "hitl-team", message=delegate("hitl-member", self.TASK), session_id="t-b", user_id="alice").json()
        url = f"{live_api}/teams/hitl-team/runs/{paused['run_id']}/continue"
        bad = httpx.post(url, data={"requirements": "not json", "session_id": "t-b"})
        assert (bad.status_code, bad.json()) == (400, {"detail": "Invalid JSON in requirements field"})
        unknown = httpx.post(url, data={"tools": json.dumps([{"tool_call_id": "nope", "confirmed": True}]), "session_id": "t-b", "stream": "false"})
        assert unknown.status_code == 400 and "nope" in unknown.json()["detail"]
        assert Run.objects.for_user("alice").get(pk=paused["run_id"]).status == "PAUSED"
