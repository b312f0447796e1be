"""The /agents family over HTTP: catalogue, runs (JSON and SSE), HITL, errors, isolation."""
from __future__ import annotations

import json
import threading

import httpx
import pytest

from sessions.models import Run, RunEvent, Session, UserMemory
from tests.api.agent_runs import post_run
from tests.api.sse import parse_sse
from tests.factories import make_session

pytestmark = pytest.mark.django_db(transaction=True)


def wait_for(probe, timeout: float = 15.0):
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


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
