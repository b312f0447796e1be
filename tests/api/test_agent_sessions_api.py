"""An agent's runs and sessions continued over HTTP: session forks, the unified continue
(follow-ups, regeneration, message boundaries), checkpoints, compaction."""
from __future__ import annotations

import json

import httpx
import pytest

from sessions.models import Run, RunEvent, Session
from tests.api.agent_runs import post_run
from tests.api.sse import parse_sse
from tests.factories import make_session

pytestmark = pytest.mark.django_db(transaction=True)


class TestSessionFork:
    def fork(self, base: str, session_id: str, agent_id: str = "assistant", **query: str) -> httpx.Response:
        return httpx.post(f"{base}/agents/{agent_id}/sessions/{session_id}/fork", params=query, timeout=30)

    def test_a_fork_copies_the_conversation_and_goes_its_own_way(self, live_api: str) -> None:
        first = post_run(live_api, message="first message", user_id="alice", session_id="s-src").json()
        post_run(live_api, message="second", user_id="alice", session_id="s-src")
        httpx.patch(f"{live_api}/sessions/s-src", json={"session_state": {"step": 2}, "metadata": {"topic": "x"}}, params={"user_id": "alice"})
        response = self.fork(live_api, "s-src", user_id="alice")
        assert response.status_code == 200
        forked = response.json()
        assert forked["forked_from_session_id"] == "s-src" and forked["session_id"] != "s-src"
        new_id = forked["session_id"]

        source_runs = list(Run.objects.for_user("alice").filter(session_id="s-src").order_by("run_index"))
        copies = list(Run.objects.for_user("alice").filter(session_id=new_id).order_by("run_index"))
        assert [run.run_index for run in copies] == [0, 1] and [run.content for run in copies] == [run.content for run in source_runs]
        # The copy keeps the conversation's branches: its second turn follows its first.
        assert [run.previous_run_id for run in copies] == [None, copies[0].pk] and all(run.branch_active for run in copies)
        assert not {run.pk for run in copies} & {run.pk for run in source_runs}
        for copy, original in zip(copies, source_runs):
            assert copy.run_data["run_id"] == copy.pk and copy.run_data["session_id"] == new_id
            assert copy.run_data["forked_from_session_id"] == "s-src" and "forked_from_session_id" not in original.run_data
            assert list(RunEvent.objects.for_user("alice").filter(run=copy).order_by("event_index").values_list("event", flat=True)) == \
                list(RunEvent.objects.for_user("alice").filter(run=original).order_by("event_index").values_list("event", flat=True))
            assert {event.payload.get("run_id") for event in RunEvent.objects.for_user("alice").filter(run=copy)} <= {copy.pk, None}
        session = Session.objects.for_user("alice").get(pk=new_id)
        assert (session.session_name, session.session_state, session.metadata, session.component_id) == ("first message", {"step": 2}, {"topic": "x"}, "assistant")

        # The copy reads through the API like any session, with the lineage on its runs.
        run = httpx.get(f"{live_api}/sessions/{new_id}/runs/{copies[0].pk}", params={"user_id": "alice"}).json()
        assert run["forked_from_session_id"] == "s-src" and run["run_input"] == first["input"]["input_content"]
        # The fork has the history: its next run sees both earlier messages; the source is untouched.
        third = post_run(live_api, message="third", user_id="alice", session_id=new_id).json()
        assert "I can see 2 earlier messages from you" in third["content"]
        assert Run.objects.for_user("alice").filter(session_id="s-src").count() == 2
        # A fork of a fork still names the root on its runs.
        again = self.fork(live_api, new_id, user_id="alice").json()
        roots = {run.run_data["forked_from_session_id"] for run in Run.objects.for_user("alice").filter(session_id=again["session_id"])}
        assert roots == {"s-src", new_id}  # the two copied runs name the root, the fork's own run its session

    def test_nothing_to_fork_and_other_agents_sessions(self, live_api: str) -> None:
        make_session("alice", session_id="s-empty", component_id="assistant")
        for session_id in ("s-empty", "no-such-session"):
            response = self.fork(live_api, session_id, user_id="alice")
            assert (response.status_code, response.json()) == (400, {"detail": "Source session has no runs to fork."})
        post_run(live_api, message="hello", user_id="alice", session_id="s-mine")
        other_agent = self.fork(live_api, "s-mine", agent_id="hitl-agent", user_id="alice")
        assert (other_agent.status_code, other_agent.json()) == (404, {"detail": "Session not found"})
        missing_agent = self.fork(live_api, "s-mine", agent_id="nope")
        assert (missing_agent.status_code, missing_agent.json()) == (404, {"detail": "Agent not found"})
        assert Session.objects.for_user("alice").count() == 2

    def test_a_run_in_flight_is_not_copied(self, live_api: str) -> None:
        post_run(live_api, message="done", user_id="alice", session_id="s-busy")
        Run.objects.for_user("alice").filter(session_id="s-busy").update(status="RUNNING")
        assert self.fork(live_api, "s-busy", user_id="alice").status_code == 400


class TestUnifiedContinue:
    """Continuing a finished or failed run: follow-ups, regeneration, message boundaries."""

    def cont(self, base: str, run_id: str, agent_id: str = "assistant", **form: str) -> httpx.Response:
        form.setdefault("session_id", "s-c")
        form.setdefault("stream", "false")
        return httpx.post(f"{base}/agents/{agent_id}/runs/{run_id}/continue", data=form, timeout=30)

    def test_a_follow_up_on_a_finished_run_is_a_new_run_beside_it(self, live_api: str) -> None:
        first = post_run(live_api, message="first message", user_id="alice", session_id="s-c").json()
        response = self.cont(live_api, first["run_id"], input="and then?")
        assert response.status_code == 200, response.text
        follow = response.json()
        assert follow["run_id"] != first["run_id"] and follow["status"] == "COMPLETED"
        assert follow["forked_from_run_id"] == first["run_id"] and follow["forked_from_message_index"] == len(first["messages"])
        assert follow["content"].startswith("(offline demo) You said: and then?")
        assert 'the previous one was: "first message"' in follow["content"]
        assert [m["role"] for m in follow["messages"]][-3:] == ["assistant", "user", "assistant"]
        assert follow["metrics"]["total_tokens"] < first["metrics"]["total_tokens"] + follow["metrics"]["output_tokens"] + 1000
        runs = list(Run.objects.for_user("alice").filter(session_id="s-c").order_by("run_index"))
        assert [(run.pk, run.status) for run in runs] == [(first["run_id"], "COMPLETED"), (follow["run_id"], "COMPLETED")]
        assert runs[0].run_data == first  # the original is untouched
        # The new run keeps what was asked this time (an edited or follow-up question), beside the first.
        assert runs[1].input == {**first["input"], "input_content": "and then?"} and runs[1].run_data == follow
        events = list(RunEvent.objects.for_user("alice").filter(run=runs[1]).order_by("event_index").values_list("event", flat=True))
        assert events[0] == "RunContinued" and events[-1] == "RunCompleted"
        # It is part of the session's history from now on.
        later = post_run(live_api, message="third", user_id="alice", session_id="s-c").json()
        assert 'the previous one was: "and then?"' in later["content"]

    def test_regenerate_answers_again_and_replaces_the_original(self, live_api: str) -> None:
        first = post_run(live_api, message="tell me", user_id="alice", session_id="s-c").json()
        again = self.cont(live_api, first["run_id"], regenerate="true").json()
        assert again["run_id"] != first["run_id"] and again["regenerated_from"] == first["run_id"]
        assert again["content"].startswith("(offline demo) You said: tell me")
        assert [m["role"] for m in again["messages"]].count("assistant") == 1  # the old answer was dropped
        assert Run.objects.for_user("alice").get(pk=first["run_id"]).status == "REGENERATED"
        listed = httpx.get(f"{live_api}/sessions/s-c/runs", params={"user_id": "alice", "branches": "all"}).json()
        assert {run["run_id"]: run["status"] for run in listed} == {first["run_id"]: "REGENERATED", again["run_id"]: "COMPLETED"}
        # The conversation itself has the new answer in the old one's place.
        listed = httpx.get(f"{live_api}/sessions/s-c/runs", params={"user_id": "alice"}).json()
        assert [run["run_id"] for run in listed] == [again["run_id"]]
        # The replaced answer no longer counts as history.
        later = post_run(live_api, message="next", user_id="alice", session_id="s-c").json()
        assert "I can see 1 earlier message from you" in later["content"]

    def test_regenerate_can_keep_the_original_and_take_instructions(self, live_api: str) -> None:
        first = post_run(live_api, message="tell me", user_id="alice", session_id="s-c").json()
        again = self.cont(live_api, first["run_id"], regenerate="true", replace_original="false", additional_instructions="shorter please").json()
        assert again["content"].startswith("(offline demo) You said: shorter please")
        assert Run.objects.for_user("alice").get(pk=first["run_id"]).status == "COMPLETED"

    def test_continue_from_a_boundary_and_streamed(self, live_api: str) -> None:
        first = post_run(live_api, message="tell me", user_id="alice", session_id="s-c").json()
        with httpx.stream("POST", f"{live_api}/agents/assistant/runs/{first['run_id']}/continue",
                          data={"session_id": "s-c", "continue_from": "last_user"}, timeout=30) as response:
            assert response.status_code == 200
            frames = parse_sse(response.read().decode())
        assert frames[0][0] == "RunContinued" and frames[-1][0] == "RunCompleted"
        new_id = frames[-1][1]["run_id"]
        assert new_id != first["run_id"] and frames[0][1]["run_id"] == new_id
        stored = Run.objects.for_user("alice").get(pk=new_id)
        assert stored.status == "COMPLETED" and stored.run_data["last_checkpoint_at_message_index"] == 2
        assert stored.run_data["content"].startswith("(offline demo) You said: tell me")

    @pytest.mark.parametrize(
        ("form", "status", "detail"),
        [
            ({"continue_from": "middle"}, 400, "Invalid continue_from. Use 'end', 'last_user', or a numeric message index."),
            ({"regenerate": "true", "fork": "true"}, 400, "`regenerate=True` derives the destructive/preserving choice from `replace_original`; do not pass `fork=True` directly."),
            ({"regenerate": "true", "continue_from": "1"}, 400, "`regenerate=True` derives the continuation boundary automatically."),
            ({"replace_original": "false"}, 400, "`replace_original` only makes sense with `regenerate=True`."),
            ({"input": "a", "additional_instructions": "b"}, 400, "Provide either `additional_instructions` or `input`, not both."),
            ({"fork": "true", "background": "true", "tools": json.dumps([{"tool_call_id": "c1"}])}, 400, "Tool decisions continue a paused run as it stands: fork, regenerate, continue_from and input cannot be combined with them"),
            ({"fork": "maybe"}, 422, "Input should be a valid boolean, unable to interpret input"),
        ],
    )
    def test_conflicting_options_are_client_errors(self, live_api: str, form: dict, status: int, detail: str) -> None:
        first = post_run(live_api, message="hi", user_id="alice", session_id="s-c").json()
        response = self.cont(live_api, first["run_id"], **form)
        assert response.status_code == status
        body = response.json()["detail"]
        assert (body if isinstance(body, str) else body[0]["msg"]) == detail
        assert Run.objects.for_user("alice").count() == 1

    def test_what_cannot_be_continued(self, live_api: str) -> None:
        first = post_run(live_api, message="hi", user_id="alice", session_id="s-c").json()
        Run.objects.for_user("alice").filter(pk=first["run_id"]).update(status="CANCELLED")
        cancelled = self.cont(live_api, first["run_id"], input="more")
        assert (cancelled.status_code, cancelled.json()) == (409, {"detail": f"Cannot continue run {first['run_id']}: run is cancelled"})
        Run.objects.for_user("alice").filter(pk=first["run_id"]).update(status="RUNNING")
        running = self.cont(live_api, first["run_id"], input="more")
        assert (running.status_code, running.json()) == (409, {"detail": f"Run {first['run_id']} is RUNNING: continue it once it has ended"})
        # A paused run takes its decisions, not a follow-up.
        paused = post_run(live_api, "hitl-agent", message='/call delete_file {"path": "x"}', user_id="alice", session_id="s-c").json()
        follow = self.cont(live_api, paused["run_id"], agent_id="hitl-agent", input="what now?")
        assert (follow.status_code, follow.json()) == (400, {"detail": "Run has unresolved HITL requirements. Provide the `tools` parameter."})
        mixed = self.cont(live_api, paused["run_id"], agent_id="hitl-agent", fork="true", tools=json.dumps([{**paused["tools"][0], "confirmed": True}]))
        assert mixed.status_code == 400 and "cannot be combined" in mixed.json()["detail"]
        assert Run.objects.for_user("alice").count() == 2

    def test_a_failed_run_is_retried_under_its_own_id(self, live_api: str, fake_openai) -> None:
        from tests.fakes._base import Failure, Reply

        fake_openai.push(Failure(401, "bad key"))
        failed = post_run(live_api, "openai-agent", message="hi", user_id="alice", session_id="s-c").json()
        assert failed["status"] == "ERROR"
        fake_openai.push(Reply(text="Back again."))
        retried = self.cont(live_api, failed["run_id"], agent_id="openai-agent").json()
        assert (retried["run_id"], retried["status"], retried["content"]) == (failed["run_id"], "COMPLETED", "Back again.")
        assert fake_openai.requests[-1].messages[-1] == {"role": "user", "content": "hi"}
        run = Run.objects.for_user("alice").get(pk=failed["run_id"])
        assert (run.status, run.error, Run.objects.for_user("alice").count()) == ("COMPLETED", "", 1)
        events = list(RunEvent.objects.for_user("alice").filter(run=run).order_by("event_index").values_list("event", flat=True))
        assert events[0] == "RunStarted" and "RunError" in events and events[-1] == "RunCompleted"


class TestCheckpoints:
    def get(self, base: str, run_id: str, suffix: str = "", **query: str) -> httpx.Response:
        query.setdefault("session_id", "s-k")
        return httpx.get(f"{base}/agents/assistant/runs/{run_id}/checkpoints{suffix}", params=query, timeout=30)

    def test_checkpoints_and_snapshots_of_a_run_with_tool_calls(self, live_api: str) -> None:
        run = post_run(live_api, message='/call add {"a": 2, "b": 3}', user_id="alice", session_id="s-k").json()
        roles = [m["role"] for m in run["messages"]]
        assert roles[-4:] == ["user", "assistant", "tool", "assistant"]
        listed = self.get(live_api, run["run_id"]).json()
        assert (listed["run_id"], listed["session_id"]) == (run["run_id"], "s-k")
        (end,) = listed["checkpoints"]
        assert end["checkpoint_id"] == "1" and end["reason"] == "end" and end["is_latest"] is True
        assert end["message_index"] == end["continue_from"] == len(roles)
        assert (end["message_role"], end["status"], end["created_at"]) == ("assistant", "COMPLETED", run["created_at"])
        text = run["messages"][-1]["content"].replace("\n", " ").strip()
        assert end["message_preview"] == (text if len(text) <= 120 else text[:119] + "...")

        # A snapshot between the tool call and its result snaps back before the call.
        call_at = len(roles) - 3  # after the user message
        cut = self.get(live_api, run["run_id"], f"/{call_at + 1}").json()
        assert cut["checkpoint"]["reason"] == "snapshot" and cut["checkpoint"]["checkpoint_id"] is None
        assert len(cut["snapshot"]["messages"]) == call_at and cut["snapshot"]["tools"] == []
        assert cut["snapshot"]["last_checkpoint_at_message_index"] == call_at
        whole = self.get(live_api, run["run_id"], f"/{len(roles)}").json()
        assert whole["checkpoint"]["checkpoint_id"] == "1" and len(whole["snapshot"]["tools"]) == 1

        # Continuing from a snapshot's index makes the run that begins there; its checkpoints show it.
        again = httpx.post(f"{live_api}/agents/assistant/runs/{run['run_id']}/continue",
                           data={"session_id": "s-k", "stream": "false", "continue_from": str(call_at)}).json()
        marks = self.get(live_api, again["run_id"]).json()["checkpoints"]
        assert [(mark["reason"], mark["message_index"]) for mark in marks] == [("checkpoint", call_at), ("end", len(again["messages"]))]

    def test_bad_indexes_and_unknown_runs(self, live_api: str) -> None:
        run = post_run(live_api, message="hi", user_id="alice", session_id="s-k").json()
        size = len(run["messages"])
        for index in (str(size + 1), "-1"):
            response = self.get(live_api, run["run_id"], f"/{index}")
            assert (response.status_code, response.json()) == (400, {"detail": f"message_index must be between 0 and {size}"})
        assert self.get(live_api, run["run_id"], "/two").status_code == 422
        assert self.get(live_api, run["run_id"], session_id="").status_code == 422
        for response in (self.get(live_api, "nope"), self.get(live_api, run["run_id"], session_id="other")):
            assert (response.status_code, response.json()) == (404, {"detail": "Run not found"})
        other_agent = httpx.get(f"{live_api}/agents/hitl-agent/runs/{run['run_id']}/checkpoints", params={"session_id": "s-k"})
        assert other_agent.status_code == 404


def test_compaction_is_not_enabled_on_any_agent(live_api: str) -> None:
    post_run(live_api, message="hello", user_id="alice", session_id="s-cmp")
    response = httpx.post(f"{live_api}/agents/assistant/sessions/s-cmp/compact", params={"user_id": "alice"})
    assert response.status_code == 200
    assert response.json() == {"status": "not_enabled", "message": "Compaction is not enabled on this agent.", "compacted": False, "record": None, "metrics": None}
    for agent_id, session_id in (("assistant", "no-such-session"), ("hitl-agent", "s-cmp")):
        missing = httpx.post(f"{live_api}/agents/{agent_id}/sessions/{session_id}/compact", params={"user_id": "alice"})
        assert (missing.status_code, missing.json()) == (404, {"detail": "Session not found"})
    assert httpx.post(f"{live_api}/agents/nope/sessions/s-cmp/compact").json() == {"detail": "Agent not found"}
