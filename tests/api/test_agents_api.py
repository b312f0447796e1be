"""The /agents family over HTTP: catalogue, runs (JSON and SSE), HITL, errors, isolation."""
from __future__ import annotations

import json
import threading

import httpx
import pytest

from sessions.models import Run, RunEvent, Session, UserMemory
from tests.api.sse import parse_sse
from tests.factories import make_session

pytestmark = pytest.mark.django_db(transaction=True)


def post_run(base: str, agent_id: str = "assistant", **form: str) -> httpx.Response:
    form.setdefault("stream", "false")
    return httpx.post(f"{base}/agents/{agent_id}/runs", data=form, timeout=30)


class TestCatalogue:
    def test_lists_code_agents_with_their_tools(self, live_api: str) -> None:
        agents = httpx.get(f"{live_api}/agents").json()
        assert [agent["id"] for agent in agents] == ["assistant", "hitl-agent", "openai-agent"]
        assistant = agents[0]
        assert assistant["model"] == {"name": "OfflineModel", "model": "demo", "provider": "Offline"}
        assert {tool["name"] for tool in assistant["tools"]["tools"]} >= {"add", "multiply", "divide"}
        add = next(tool for tool in assistant["tools"]["tools"] if tool["name"] == "add")
        assert add["parameters"]["required"] == ["a", "b"]
        # As AgentOS, only settings that differ from Agno's defaults (three runs of history is one).
        assert assistant["sessions"] == {"session_table": "agno_sessions", "add_history_to_context": True}
        assert agents[2]["sessions"] == {"session_table": "agno_sessions", "add_history_to_context": True, "num_history_runs": 2}
        assert assistant["system_message"] == {"description": "The offline test assistant"}
        assert "system_message" not in agents[1]
        assert assistant["is_component"] is False and assistant["sandboxed"] is False

    def test_tools_that_need_a_human_say_so_as_agentos_lists_them(self, live_api: str) -> None:
        detail = httpx.get(f"{live_api}/agents/hitl-agent").json()
        assert detail["tools"] == {"tools": [
            {
                "name": "delete_file",
                "description": "Delete a file (a test tool that needs confirmation).",
                "parameters": {"type": "object", "properties": {"path": {"type": "string", "description": "The file to delete."}}, "required": ["path"]},
                "requires_confirmation": True,
            },
            # Agno 3.1.10 serialises no user-input flag: the user's fields are left out of the schema.
            {
                "name": "wire_money",
                "description": "Wire money (a test tool that asks the user for the amount).",
                "parameters": {"type": "object", "properties": {"to": {"type": "string", "description": "The recipient."}}, "required": ["to"]},
            },
        ]}
        listed = {agent["id"]: agent for agent in httpx.get(f"{live_api}/agents").json()}
        assert listed["hitl-agent"]["tools"] == detail["tools"]
        assert {key for tool in listed["assistant"]["tools"]["tools"] for key in tool} == {"name", "description", "parameters"}

    def test_an_externally_executed_tool_says_so(self) -> None:
        from agents.api.presenters import agent_response
        from agents.registry import AgentEntry
        from engine import Agent, tool

        @tool(external_execution=True)
        def run_script(script: str) -> str:
            """Run a script on the caller's machine.

            Args:
                script: The script.
            """
            return script

        agent = Agent(id="ext", name="Ext", model="offline:demo", tools=[run_script])
        body = agent_response(AgentEntry(agent_id="ext", name="Ext", description=None, source="code", build=lambda user_id: agent, template=agent))
        assert body["tools"] == {"tools": [{
            "name": "run_script",
            "description": "Run a script on the caller's machine.",
            "parameters": {"type": "object", "properties": {"script": {"type": "string", "description": "The script."}}, "required": ["script"]},
            "external_execution": True,
        }]}

    def test_detail_and_missing_agent(self, live_api: str) -> None:
        assert httpx.get(f"{live_api}/agents/hitl-agent/").json()["name"] == "HITL Agent"
        missing = httpx.get(f"{live_api}/agents/nope")
        assert (missing.status_code, missing.json()) == (404, {"detail": "Agent not found"})


class TestRuns:
    def test_non_streamed_run_is_recorded_as_one_row(self, live_api: str) -> None:
        response = post_run(live_api, message="hello there", user_id="alice", session_id="s-1")
        assert response.status_code == 200
        body = response.json()
        assert body["status"] == "COMPLETED"
        assert body["content"] == "(offline demo) You said: hello there This is the first message I see from you."
        assert (body["session_id"], body["user_id"], body["agent_id"]) == ("s-1", "alice", "assistant")
        assert body["input"] == {"input_content": "hello there"}
        assert body["metrics"]["total_tokens"] == body["metrics"]["input_tokens"] + body["metrics"]["output_tokens"] > 0
        run = Run.objects.for_user("alice").get(pk=body["run_id"])
        assert (run.run_index, run.status, run.session_id, run.total_tokens) == (0, "COMPLETED", "s-1", body["metrics"]["total_tokens"])
        assert run.run_data == body
        session = Session.objects.for_user("alice").get(pk="s-1")
        assert (session.session_name, session.component_id, session.next_run_index) == ("hello there", "assistant", 1)
        # Every event but the per-token deltas (RunCompleted carries the whole answer).
        stored = list(RunEvent.objects.for_user("alice").filter(run=run).order_by("event_index").values_list("event", flat=True))
        assert stored[0] == "RunStarted" and stored[-1] == "RunCompleted" and "RunContent" not in stored

    def test_history_is_read_across_turns(self, live_api: str) -> None:
        post_run(live_api, message="first message", user_id="alice", session_id="s-h")
        second = post_run(live_api, message="second", user_id="alice", session_id="s-h").json()
        assert second["content"].endswith('I can see 1 earlier message from you; the previous one was: "first message".')
        assert list(Run.objects.for_user("alice").filter(session_id="s-h").order_by("run_index").values_list("run_index", flat=True)) == [0, 1]

    def test_a_json_body_is_refused_like_agentos(self, live_api: str) -> None:
        response = httpx.post(f"{live_api}/agents/assistant/runs", json={"message": "hi"})
        assert response.status_code == 422
        assert response.json() == {"detail": [{"type": "missing", "loc": ["body", "message"], "msg": "Field required", "input": None}]}

    @pytest.mark.parametrize(
        ("form", "status", "detail"),
        [
            ({"message": "x", "stream": "maybe"}, 422, "Input should be a valid boolean, unable to interpret input"),
            ({"message": "x", "metadata": "[1, 2]"}, 400, "Invalid metadata parameter: expected a JSON object"),
            ({"message": "x", "images": "{\"a\": 1}"}, 422, "Invalid images: expected a JSON array of objects"),
            ({"message": "x", "output_schema": "{\"type\": \"array\"}"}, 422, "Invalid output_schema: the root must be a JSON schema with \"type\": \"object\""),
            ({"message": "x", "version": "two"}, 422, "Input should be a valid integer, unable to parse string as an integer"),
        ],
    )
    def test_bad_form_fields_are_client_errors(self, live_api: str, form: dict, status: int, detail: str) -> None:
        response = httpx.post(f"{live_api}/agents/assistant/runs", data=form)
        assert response.status_code == status
        body = response.json()["detail"]
        assert (body if isinstance(body, str) else body[0]["msg"]) == detail
        assert Run.objects.unscoped("test").count() == 0

    def test_unknown_agent(self, live_api: str) -> None:
        response = post_run(live_api, "nope", message="hi")
        assert (response.status_code, response.json()) == (404, {"detail": "Agent not found"})

    def test_another_users_session_is_not_found_and_unchanged(self, live_api: str) -> None:
        make_session("alice", session_id="alices")
        response = post_run(live_api, message="let me in", user_id="bob", session_id="alices")
        assert (response.status_code, response.json()) == (404, {"detail": "Session not found"})
        assert Run.objects.unscoped("test").count() == 0

    def test_tool_calls_with_the_offline_model(self, live_api: str) -> None:
        body = post_run(live_api, message='/call add {"a": 2, "b": 3}\n/call multiply {"a": 4, "b": 5}', user_id="alice").json()
        assert body["status"] == "COMPLETED"
        assert [(t["tool_name"], t["tool_args"], json.loads(t["result"])["result"]) for t in body["tools"]] == [("add", {"a": 2, "b": 3}, 5), ("multiply", {"a": 4, "b": 5}, 20)]
        assert "Tool add returned:" in body["content"] and "Tool multiply returned:" in body["content"]

    def test_memories_are_written_with_the_run(self, live_api: str) -> None:
        body = post_run(live_api, message="My name is Alice. I like green tea.", user_id="alice").json()
        assert body["status"] == "COMPLETED"
        memories = sorted(UserMemory.objects.for_user("alice").values_list("memory", flat=True))
        assert len(memories) == 2 and any("Alice" in m for m in memories) and any("green tea" in m for m in memories)
        again = post_run(live_api, message="what do you know?", user_id="alice").json()
        assert "green tea" in again["content"]


class TestStreaming:
    def test_stream_is_framed_as_agentos_and_events_are_stored(self, live_api: str) -> None:
        with httpx.stream("POST", f"{live_api}/agents/assistant/runs", data={"message": "stream me please", "user_id": "alice"}) as response:
            assert response.status_code == 200
            assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
            raw = "".join(response.iter_text())
        frames = parse_sse(raw)
        names = [name for name, _ in frames]
        assert names[0] == "RunStarted" and names[-1] == "RunCompleted"
        assert names.count("RunContent") >= 3
        # Each frame carries the index its event is stored under (AgentOS numbers only streams
        # it buffers; the extra field is what a client resumes from, on any replica).
        for index, (name, data) in enumerate(frames):
            assert data["event"] == name and data["event_index"] == index
        first_line = raw.split("\n")[1]
        assert first_line.startswith("data: {") and ", " not in first_line.split('"content"')[0]  # compact JSON
        completed = frames[-1][1]
        run = Run.objects.for_user("alice").get(pk=completed["run_id"])
        assert run.content == completed["content"] == "(offline demo) You said: stream me please This is the first message I see from you."
        stored = list(RunEvent.objects.for_user("alice").filter(run=run).order_by("event_index").values_list("event", flat=True))
        assert stored == names

    def test_client_disconnect_cancels_and_records_the_run(self, live_api: str, fake_openai) -> None:
        from tests.fakes._base import Reply

        gate = threading.Event()
        fake_openai.push(Reply(text="one two three four five six", gate=gate, gate_after=2))
        with httpx.stream("POST", f"{live_api}/agents/openai-agent/runs", data={"message": "talk slowly", "user_id": "alice", "session_id": "s-dc"}) as response:
            seen = []
            run_id = None
            for line in response.iter_lines():
                if line.startswith("data: ") and run_id is None:
                    run_id = json.loads(line[6:])["run_id"]
                if line.startswith("event: RunContent"):
                    seen.append(line)
                if len(seen) >= 2:
                    break
        # The client is gone. Once the server has noticed, let the model go on: the run stops at
        # its next step (releasing it sooner would race the disconnect against the answer).
        from jobs.services.cancellation import cancelled_locally

        wait_for(lambda: cancelled_locally(run_id))
        gate.set()
        # The run was stored RUNNING from its first moment; it ends CANCELLED.
        run = wait_for(lambda: Run.objects.for_user("alice").filter(session_id="s-dc").exclude(status="RUNNING").first())
        assert run.status == "CANCELLED"
        assert run.run_data["cancellation_stage"] == "EXECUTING"


class TestHumanInTheLoop:
    def pause(self, base: str) -> dict:
        body = post_run(base, "hitl-agent", message='/call delete_file {"path": "notes/x.txt"}', user_id="alice", session_id="s-hitl").json()
        assert body["status"] == "PAUSED"
        return body

    def test_pause_confirm_and_continue(self, live_api: str) -> None:
        paused = self.pause(live_api)
        (tool,) = paused["tools"]
        assert tool["requires_confirmation"] is True and tool["confirmed"] is None and tool["result"] is None
        assert paused["requirements"][0]["tool_execution"]["tool_call_id"] == tool["tool_call_id"]
        assert Run.objects.for_user("alice").get(pk=paused["run_id"]).status == "PAUSED"

        tool["confirmed"] = True
        response = httpx.post(
            f"{live_api}/agents/hitl-agent/runs/{paused['run_id']}/continue",
            data={"tools": json.dumps([tool]), "session_id": "s-hitl", "stream": "false"},
        )
        assert response.status_code == 200
        done = response.json()
        assert (done["run_id"], done["status"]) == (paused["run_id"], "COMPLETED")
        assert done["tools"][0]["result"] == "deleted notes/x.txt"
        assert "Tool delete_file returned: deleted notes/x.txt" in done["content"]
        run = Run.objects.for_user("alice").get(pk=paused["run_id"])
        assert (run.status, run.run_index) == ("COMPLETED", 0)

        again = httpx.post(f"{live_api}/agents/hitl-agent/runs/{paused['run_id']}/continue", data={"tools": json.dumps([tool]), "session_id": "s-hitl", "stream": "false"})
        assert again.status_code == 409

    def test_rejection_is_reported_and_the_tool_never_runs(self, live_api: str) -> None:
        paused = self.pause(live_api)
        tool = {**paused["tools"][0], "confirmed": False, "confirmation_note": "nope"}
        done = httpx.post(
            f"{live_api}/agents/hitl-agent/runs/{paused['run_id']}/continue",
            data={"tools": json.dumps([tool]), "session_id": "s-hitl", "stream": "false"},
        ).json()
        assert done["status"] == "COMPLETED"
        assert done["tools"][0]["result"] != "deleted notes/x.txt"
        assert "rejected" in done["content"] and "nope" in done["content"]

    def test_user_input_is_filled_in_and_streamed_with_event_indexes(self, live_api: str) -> None:
        paused = post_run(live_api, "hitl-agent", message='/call wire_money {"to": "bob"}', user_id="alice", session_id="s-in").json()
        (tool,) = paused["tools"]
        fields = {field["name"]: field for field in tool["user_input_schema"]}
        assert (fields["to"]["value"], fields["amount"]["value"]) == ("bob", None)
        fields["amount"]["value"] = 100
        with httpx.stream("POST", f"{live_api}/agents/hitl-agent/runs/{paused['run_id']}/continue", data={"tools": json.dumps([tool]), "session_id": "s-in"}) as response:
            frames = parse_sse("".join(response.iter_text()))
        assert frames[0][0] == "RunContinued" and frames[-1][0] == "RunCompleted"
        # Indexes carry on after the events the paused run already stored.
        start = frames[0][1]["event_index"]
        assert start == RunEvent.objects.for_user("alice").filter(run_id=paused["run_id"], event_index__lt=start).count() > 0
        assert [data["event_index"] for _, data in frames] == list(range(start, start + len(frames)))
        assert "wired 100 to bob" in frames[-1][1]["content"]

    @pytest.mark.parametrize(
        ("form", "status", "detail"),
        [
            ({"tools": "[]"}, 400, "session_id is required for this action"),
            ({"tools": "not json", "session_id": "s-hitl"}, 400, "Invalid JSON in tools field"),
            ({"tools": '{"a": 1}', "session_id": "s-hitl"}, 400, "Invalid structure or content for tools: expected a JSON array of tool execution objects"),
            ({"tools": "[]", "session_id": "other"}, 404, "Run not found"),
        ],
    )
    def test_bad_continuations(self, live_api: str, form: dict, status: int, detail: str) -> None:
        paused = self.pause(live_api)
        response = httpx.post(f"{live_api}/agents/hitl-agent/runs/{paused['run_id']}/continue", data={**form, "stream": "false"})
        assert (response.status_code, response.json()) == (status, {"detail": detail})
        assert Run.objects.for_user("alice").get(pk=paused["run_id"]).status == "PAUSED"

    def test_unknown_tool_call_id_is_a_400(self, live_api: str) -> None:
        paused = self.pause(live_api)
        tool = {**paused["tools"][0], "tool_call_id": "made-up", "confirmed": True}
        response = httpx.post(f"{live_api}/agents/hitl-agent/runs/{paused['run_id']}/continue", data={"tools": json.dumps([tool]), "session_id": "s-hitl", "stream": "false"})
        assert response.status_code == 400


class TestPollCancelResume:
    def test_poll_needs_the_session_and_the_right_agent(self, live_api: str) -> None:
        run_id = post_run(live_api, message="hello", user_id="alice", session_id="s-p").json()["run_id"]
        url = f"{live_api}/agents/assistant/runs/{run_id}"
        assert httpx.get(url).status_code == 422
        assert httpx.get(url, params={"session_id": "nope"}).json() == {"detail": "Run not found"}
        assert httpx.get(f"{live_api}/agents/hitl-agent/runs/{run_id}", params={"session_id": "s-p"}).json() == {"detail": "Run not found"}
        body = httpx.get(url, params={"session_id": "s-p"}).json()
        assert (body["run_id"], body["status"]) == (run_id, "COMPLETED")
        assert [event["event"] for event in body["events"]][-1] == "RunCompleted"
        assert "tools" not in body  # as AgentOS reads back a run that called none
        with_tools = post_run(live_api, message='/call add {"a": 1, "b": 2}', user_id="alice", session_id="s-p").json()["run_id"]
        polled = httpx.get(f"{live_api}/agents/assistant/runs/{with_tools}", params={"session_id": "s-p"}).json()
        assert [tool["tool_name"] for tool in polled["tools"]] == ["add"]

    def test_a_streamed_runs_poll_and_listing_keep_its_events_but_not_the_content_deltas(self, live_api: str) -> None:
        with httpx.stream("POST", f"{live_api}/agents/assistant/runs", data={"message": "stream me", "user_id": "alice", "session_id": "s-ps"}) as response:
            frames = parse_sse("".join(response.iter_text()))
        run_id = frames[0][1]["run_id"]
        # As stored: the frame's event_index is the row's, not part of the event a poll lists.
        kept = [{key: value for key, value in data.items() if key != "event_index"} for name, data in frames if name != "RunContent"]
        assert [data["event"] for data in kept] == ["RunStarted", "ModelRequestStarted", "ModelRequestCompleted", "RunContentCompleted", "MemoryUpdateStarted", "MemoryUpdateCompleted", "RunCompleted"]
        polled = httpx.get(f"{live_api}/agents/assistant/runs/{run_id}", params={"session_id": "s-ps"}).json()
        assert polled["events"] == kept
        listed = httpx.get(f"{live_api}/agents/assistant/runs", params={"session_id": "s-ps"}).json()
        assert [run["events"] for run in listed] == [kept]

    def test_list_runs_of_an_agent_in_a_session(self, live_api: str) -> None:
        first = post_run(live_api, message="one", user_id="alice", session_id="s-l").json()["run_id"]
        second = post_run(live_api, message="two", user_id="alice", session_id="s-l").json()["run_id"]
        listed = httpx.get(f"{live_api}/agents/assistant/runs", params={"session_id": "s-l"}).json()
        assert [item["run_id"] for item in listed] == [first, second]
        assert listed[0]["run_input"] == "one" and listed[0]["parent_run_id"] == ""
        assert httpx.get(f"{live_api}/agents/assistant/runs", params={"session_id": "s-l", "status": "ERROR"}).json() == []
        assert httpx.get(f"{live_api}/agents/assistant/runs", params={"session_id": "nope"}).json() == {"detail": "Session not found"}

    def test_cancel_always_answers_empty_and_records_intent(self, live_api: str) -> None:
        from jobs.models import CancelIntent

        response = httpx.post(f"{live_api}/agents/assistant/runs/does-not-exist/cancel")
        assert (response.status_code, response.json()) == (200, {})
        assert CancelIntent.objects.unscoped("test").filter(run_id="does-not-exist", user_id=None).exists()
        assert httpx.post(f"{live_api}/agents/nope/runs/x/cancel").status_code == 404

    def test_resume_replays_stored_events_after_an_index(self, live_api: str) -> None:
        with httpx.stream("POST", f"{live_api}/agents/assistant/runs", data={"message": "replay me", "user_id": "alice", "session_id": "s-r"}) as response:
            original = parse_sse("".join(response.iter_text()))
        run_id = original[0][1]["run_id"]
        with httpx.stream("POST", f"{live_api}/agents/assistant/runs/{run_id}/resume", data={"session_id": "s-r", "last_event_index": "2"}) as response:
            frames = parse_sse("".join(response.iter_text()))
        assert frames[0][0] == "replay" and frames[0][1]["status"] == "COMPLETED"
        replayed = frames[1:]
        assert [data["event_index"] for _, data in replayed] == list(range(3, len(original)))
        assert [name for name, _ in replayed] == [name for name, _ in original[3:]]

    def test_resume_of_unknown_and_non_streamed_runs(self, live_api: str) -> None:
        with httpx.stream("POST", f"{live_api}/agents/assistant/runs/unknown/resume", data={}) as response:
            assert response.status_code == 200
            assert parse_sse("".join(response.iter_text())) == [("error", {"event": "error", "error": "Run unknown not found in buffer or database"})]
        run_id = post_run(live_api, message="quiet", user_id="alice", session_id="s-q").json()["run_id"]
        with httpx.stream("POST", f"{live_api}/agents/assistant/runs/{run_id}/resume", data={"session_id": "s-q"}) as response:
            frames = parse_sse("".join(response.iter_text()))
        # A non-streamed run replays its structural events; RunCompleted carries the answer.
        assert frames[0][0] == "replay" and frames[-1][0] == "RunCompleted" and "RunContent" not in [name for name, _ in frames]


class TestProviderPath:
    def test_openai_compatible_server_multi_turn_with_tools(self, live_api: str, fake_openai) -> None:
        from tests.fakes._base import Call, Reply

        fake_openai.push(Reply(text="Hello from the fake model."))
        first = post_run(live_api, "openai-agent", message="hi", user_id="alice", session_id="s-o").json()
        assert (first["status"], first["content"], first["model_provider"]) == ("COMPLETED", "Hello from the fake model.", "OpenAI")
        fake_openai.push(Reply(tool_calls=[Call("add", {"a": 1, "b": 2})]))
        fake_openai.push(Reply(text="The sum is 3."))
        second = post_run(live_api, "openai-agent", message="add 1 and 2", user_id="alice", session_id="s-o").json()
        assert second["content"] == "The sum is 3." and json.loads(second["tools"][0]["result"])["result"] == 3
        sent = fake_openai.requests[-2].messages
        assert [m["role"] for m in sent if m["role"] in ("user", "assistant")][:2] == ["user", "assistant"]  # history came first
        assert any(m.get("content") == "Hello from the fake model." for m in sent)

    def test_provider_failure_is_a_recorded_error_run(self, live_api: str, fake_openai) -> None:
        from tests.fakes._base import Failure

        fake_openai.push(Failure(401, "bad key"))
        response = post_run(live_api, "openai-agent", message="hi", user_id="alice", session_id="s-e")
        assert response.status_code == 200
        body = response.json()
        assert body["status"] == "ERROR" and "bad key" in body["content"]
        run = Run.objects.for_user("alice").get(pk=body["run_id"])
        assert run.status == "ERROR" and "bad key" in run.error


def wait_for(probe, timeout: float = 15.0):
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


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
