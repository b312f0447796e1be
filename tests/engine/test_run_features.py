"""tool_call_limit, output_schema, reasoning_model, session summaries, session_state, built-in tools."""
from __future__ import annotations

import json
from unittest.mock import ANY

import pydantic
import pytest

from engine import Agent, tool
from tests.fakes.openai_server import Call, Reply
from tests.engine.helpers import common, drain, names


@tool
def add(a: int, b: int) -> int:
    return a + b


def test_tool_call_limit_stops_further_calls_and_asks_for_an_answer(make_ctx):
    run = Agent(id="assistant", tools=[add], tool_call_limit=1).start_run(
        '/call add {"a": 2, "b": 3}\n/call add {"a": 1, "b": 1}', make_ctx()
    )
    drain(run)

    assert run.output["content"] == (
        "Tool add returned: 5\n"
        "Tool add failed: Tool call limit reached. Tool call add not executed. Don't try to execute it again."
    )
    assert [t["tool_args"] for t in run.output["tools"]] == [{"a": 2, "b": 3}]


def test_tool_call_limit_turns_tools_off_for_the_provider(make_ctx, openai_server):
    openai_server.push(Reply(tool_calls=[Call("add", {"a": 1, "b": 2}), Call("add", {"a": 3, "b": 4})]), Reply(text="3 and nothing more"))

    output = Agent(id="assistant", model="openai:gpt-4o-mini", tools=[add], tool_call_limit=1).run("go", make_ctx())

    assert output["content"] == "3 and nothing more"
    assert openai_server.requests[1].body["tool_choice"] == "none"
    assert [m.get("content") for m in openai_server.requests[1].body["messages"] if m["role"] == "tool"] == [
        "3", "Tool call limit reached. Tool call add not executed. Don't try to execute it again.",
    ]


RECIPE = {
    "title": "Recipe",
    "type": "object",
    "properties": {"name": {"type": "string"}, "servings": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
    "required": ["name", "servings"],
}


def test_output_schema_dict_makes_content_a_parsed_object(make_ctx):
    run = Agent(id="assistant", name="Assistant", output_schema=RECIPE).start_run("soup", make_ctx())
    events = drain(run)

    parsed = {"name": "example name", "servings": 1, "tags": ["example tags"]}
    assert (run.output["content"], run.output["content_type"]) == (parsed, "Recipe")
    assert [e for e in events if e["event"] == "RunContent"] == [
        common("RunContent", content="", workflow_agent=False, content_type="str", reasoning_content=""),
        common("RunContent", content=parsed, workflow_agent=False, content_type="Recipe"),
    ]
    assert events[-1]["content"] == parsed and events[-1]["content_type"] == "Recipe"
    assert run.output["messages"][0]["content"].startswith("Respond only with a JSON object")


class Movie(pydantic.BaseModel):
    title: str
    year: int


def test_output_schema_pydantic_model_is_validated(make_ctx, openai_server):
    openai_server.push(Reply(text='```json\n{"title": "Alien", "year": 1979}\n```'))

    output = Agent(id="assistant", model="openai:gpt-4o-mini", output_schema=Movie).run("a film", make_ctx())

    assert (output["content"], output["content_type"]) == ({"title": "Alien", "year": 1979}, "Movie")
    assert openai_server.requests[0].body["response_format"] == {
        "type": "json_schema", "json_schema": {"name": "Movie", "schema": Movie.model_json_schema()},
    }


def test_output_that_is_not_json_ends_with_run_error(make_ctx, openai_server):
    openai_server.push(Reply(text="Sorry, I cannot do JSON today."))

    run = Agent(id="assistant", model="openai:gpt-4o-mini", output_schema=RECIPE).start_run("soup", make_ctx())
    events = drain(run)

    assert events[-1]["event"] == "RunError"
    assert events[-1]["error_type"] == "output_schema_error"
    assert events[-1]["content"].startswith("The model's answer is not valid JSON for Recipe")
    assert run.output["status"] == "ERROR"


def test_reasoning_model_thinks_first_and_its_reasoning_reaches_the_main_model(make_ctx, openai_server):
    openai_server.push(Reply(text="Blue, because of Rayleigh scattering."))
    agent = Agent(id="assistant", name="Assistant", model="openai:gpt-4o-mini", reasoning_model="offline:thinker")

    run = agent.start_run("Why is the sky blue?", make_ctx())
    events = drain(run)

    reasoning = 'The user asks: "Why is the sky blue?". I will answer directly and call tools when the message asks for them.'
    assert names(events)[:2] == ["RunStarted", "ReasoningStarted"]
    deltas = [e["reasoning_content"] for e in events if e["event"] == "ReasoningContentDelta"]
    assert "".join(deltas) == reasoning and len(deltas) > 5
    step, completed = [e for e in events if e["event"] in ("ReasoningStep", "ReasoningCompleted")]
    assert step == common("ReasoningStep", content={"result": reasoning}, content_type="ReasoningStep", reasoning_content=reasoning)
    assert completed == common("ReasoningCompleted", content={"reasoning_steps": [{"result": reasoning}]}, content_type="ReasoningSteps")
    # The reasoning model's call is a model request of its own, inside the reasoning; the main model's comes after.
    requests = [(i, e["model"]) for i, e in enumerate(events) if e["event"] == "ModelRequestStarted"]
    assert [model for _, model in requests] == ["thinker", "gpt-4o-mini"]
    assert names(events).index("ReasoningStarted") < requests[0][0] < names(events).index("ReasoningCompleted") < requests[1][0]
    completed = next(e for e in events if e["event"] == "ModelRequestCompleted")
    assert (completed["model"], completed["model_provider"]) == ("thinker", "Offline") and completed["total_tokens"] > 0
    assert run.output["reasoning_content"] == reasoning
    assert run.output["reasoning_steps"] == [{"result": reasoning}]
    assert openai_server.requests[0].body["messages"][-1] == {"role": "assistant", "content": f"<thinking>\n{reasoning}\n</thinking>"}
    assert set(run.output["metrics"]["details"]) == {"reasoning_model", "model"}


def test_session_summary_is_returned_for_the_caller_to_persist(make_ctx, clock):
    agent = Agent(id="assistant", name="Assistant", enable_session_summaries=True, add_history_to_context=True)
    first = agent.run("Plan a trip to Lisbon", make_ctx(run_id="r0"))

    run = agent.start_run("Add museums please", make_ctx(history=[first]))
    events = drain(run)

    summary = {
        "summary": 'The user sent 2 messages. Most recently: "Add museums please".',
        "topics": ["lisbon", "museums", "please"],
        "updated_at": "2026-11-30T09:42:53+00:00",
    }
    assert names(events)[-4:] == ["RunContentCompleted", "SessionSummaryStarted", "SessionSummaryCompleted", "RunCompleted"]
    assert events[-2] == common("SessionSummaryCompleted", session_summary=summary)
    assert run.session_summary == summary
    assert "session_summary" not in run.output
    assert "session_summary_model" in run.output["metrics"]["details"]


def test_stored_summary_is_added_to_the_system_message(make_ctx):
    agent = Agent(id="assistant", enable_session_summaries=True)
    run = agent.start_run("hi", make_ctx(session_summary={"summary": "Talked about Lisbon.", "topics": ["lisbon"]}))
    drain(run)
    assert "<summary_of_previous_interactions>\nTalked about Lisbon.\n</summary_of_previous_interactions>" in run.output["messages"][0]["content"]


def test_tools_read_and_write_session_state(make_ctx):
    @tool
    def add_item(item: str, session_state: dict) -> str:
        """Add an item to the shopping list."""
        session_state.setdefault("items", []).append(item)
        return f"{len(session_state['items'])} items"

    agent = Agent(id="assistant", name="Assistant", tools=[add_item], session_state={"items": [], "owner": "default"}, add_session_state_to_context=True)
    run = agent.start_run('/call add_item {"item": "milk"}', make_ctx(session_state={"items": ["eggs"]}))
    events = drain(run)

    assert run.output["session_state"] == {"items": ["eggs", "milk"], "owner": "default"}
    assert events[-1]["session_state"] == {"items": ["eggs", "milk"], "owner": "default"}
    assert '<session_state>\n{"items": ["eggs"], "owner": "default"}\n</session_state>' in run.output["messages"][0]["content"]
    assert agent.session_state == {"items": [], "owner": "default"}  # the agent's default is untouched


def test_dependencies_are_injected_into_tools(make_ctx):
    @tool
    def whoami(dependencies: dict) -> str:
        return dependencies["tenant"]

    output = Agent(id="assistant", tools=[whoami]).run("/call whoami", make_ctx(dependencies={"tenant": "acme"}))
    assert output["content"] == "Tool whoami returned: acme"


def test_stop_after_tool_call_ends_the_run_with_the_tool_result(make_ctx):
    @tool(stop_after_tool_call=True)
    def final_answer(text: str) -> str:
        return text.upper()

    run = Agent(id="assistant", tools=[final_answer]).start_run('/call final_answer {"text": "done"}', make_ctx())
    events = drain(run)

    assert run.output["content"] == "DONE"
    assert names(events).count("ModelRequestStarted") == 1
    assert run.output["tools"][0]["stop_after_tool_call"] is True


class Docs:
    def __init__(self) -> None:
        self.queries: list[tuple[str, int]] = []

    def search(self, query: str, limit: int) -> list[dict]:
        self.queries.append((query, limit))
        return [{"content": "Agno Site runs agents.", "name": "readme.md", "meta_data": {"page": 1}}]


def test_retriever_is_exposed_as_search_knowledge_base(make_ctx):
    docs = Docs()
    run = Agent(id="assistant").start_run('/call search_knowledge_base {"query": "what runs?"}', make_ctx(retriever=docs))
    drain(run)

    assert docs.queries == [("what runs?", 5)]
    assert json.loads(run.output["tools"][0]["result"]) == [{"content": "Agno Site runs agents.", "name": "readme.md", "meta_data": {"page": 1}}]


class Sessions:
    def __init__(self) -> None:
        self.asked: list[tuple[int, int]] = []

    def recent_runs(self, num_sessions: int, num_runs_per_session: int) -> list[dict]:
        self.asked.append((num_sessions, num_runs_per_session))
        return [
            {"session_id": "old-1", "input": {"input_content": "Plan Lisbon"}, "content": "Sure"},
            {"session_id": "old-1", "messages": [{"role": "user", "content": "Museums?"}, {"role": "assistant", "content": "Yes"}]},
            {"session_id": "old-2", "input": {"input_content": "Hello"}, "content": "Hi"},
        ]


def test_search_past_sessions_tool(make_ctx):
    sessions = Sessions()
    agent = Agent(id="assistant", search_past_sessions=True, num_past_sessions_to_search=4, num_past_session_runs_in_search=2)

    run = agent.start_run("/call search_past_sessions", make_ctx(past_sessions=sessions))
    drain(run)

    assert sessions.asked == [(4, 2)]
    assert json.loads(run.output["tools"][0]["result"]) == [
        {"session_id": "old-1", "runs": [{"user": "Plan Lisbon", "assistant": "Sure"}, {"user": "Museums?", "assistant": "Yes"}]},
        {"session_id": "old-2", "runs": [{"user": "Hello", "assistant": "Hi"}]},
    ]
    # Without the option the tool is not offered even when the caller provides the protocol.
    assert "search_past_sessions" not in Agent(id="x").run_functions(make_ctx(past_sessions=sessions))


def test_metadata_from_agent_and_run_is_merged(make_ctx):
    output = Agent(id="assistant", metadata={"team": "a", "tier": 1}).run("hi", make_ctx(metadata={"tier": 2}))
    assert output["metadata"] == {"team": "a", "tier": 2}


@pytest.mark.parametrize("limit", [-1])
def test_negative_tool_call_limit_is_refused(limit):
    with pytest.raises(ValueError):
        Agent(tool_call_limit=limit)


def test_paused_then_completed_run_keeps_one_run_id_and_accumulated_duration(make_ctx, clock):
    @tool(requires_confirmation=True)
    def slow(n: int) -> int:
        clock.advance(2)
        return n

    agent = Agent(id="assistant", tools=[slow])
    first = agent.start_run('/call slow {"n": 1}', make_ctx())
    drain(first)
    paused = first.output
    clock.advance(60)  # the human takes a minute; that is not run time
    second = agent.continue_run(paused, [{**paused["tools"][0], "confirmed": True}], ctx=make_ctx())
    drain(second)

    assert second.output["run_id"] == paused["run_id"]
    assert second.output["metrics"]["duration"] == 2.0
    assert second.output["created_at"] == paused["created_at"]
    assert second.output["messages"][0]["id"] == paused["messages"][0]["id"] == ANY


def test_a_model_that_never_stops_calling_tools_is_cut_off(make_ctx, openai_server):
    openai_server.default = Reply(tool_calls=[Call("add", {"a": 1, "b": 1})])

    run = Agent(id="assistant", model="openai:gpt-4o-mini", tools=[add]).start_run("loop", make_ctx())
    events = drain(run)

    choices = [r.body["tool_choice"] for r in openai_server.requests]
    assert choices == ["auto"] * 31 + ["none", "none"]
    assert events[-1]["content"] == "The model kept calling tools after 32 turns"
