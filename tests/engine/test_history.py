"""Multi-turn history: earlier runs' messages reach the model, bounded and marked from_history."""
from __future__ import annotations

import json

from engine import Agent
from tests.fakes.openai_server import Reply
from tests.engine.helpers import drain


def test_offline_model_sees_earlier_turns(make_ctx):
    agent = Agent(id="assistant", add_history_to_context=True)
    first = agent.run("My favourite colour is teal", make_ctx(run_id="r1"))
    second = agent.run("What did I say before?", make_ctx(run_id="r2", history=[json.loads(json.dumps(first))]))

    assert second["content"] == (
        "(offline demo) You said: What did I say before? "
        'I can see 1 earlier message from you; the previous one was: "My favourite colour is teal".'
    )
    # History goes to the model, not into this run's stored messages.
    assert [m["role"] for m in second["messages"]] == ["user", "assistant"]
    assert all(m["from_history"] is False for m in second["messages"])


def test_history_is_off_unless_enabled(make_ctx):
    first = Agent(id="assistant").run("one", make_ctx(run_id="r1"))
    second = Agent(id="assistant").run("two", make_ctx(run_id="r2", history=[first]))
    assert "This is the first message I see from you." in second["content"]


def test_history_sent_to_the_provider_is_bounded_by_num_history_runs(make_ctx, openai_server):
    agent = Agent(id="assistant", model="openai:gpt-4o-mini", instructions="Be brief.", add_history_to_context=True, num_history_runs=2)
    history = []
    for index in range(4):
        openai_server.push(Reply(text=f"answer {index}"))
        history.append(agent.run(f"question {index}", make_ctx(run_id=f"r{index}", history=history[-2:])))

    openai_server.push(Reply(text="final"))
    drain(agent.start_run("question 4", make_ctx(run_id="r4", history=history)))  # the caller passed too many

    assert openai_server.requests[-1].body["messages"] == [
        {"role": "system", "content": "<instructions>\nBe brief.\n</instructions>"},
        {"role": "user", "content": "question 2"},
        {"role": "assistant", "content": "answer 2"},
        {"role": "user", "content": "question 3"},
        {"role": "assistant", "content": "answer 3"},
        {"role": "user", "content": "question 4"},
    ]


def test_tool_turns_in_history_are_replayed_and_dangling_calls_dropped(make_ctx, openai_server):
    complete_run = {
        "messages": [
            {"role": "user", "content": "add"},
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "tool_name": "add", "content": "5"},
            {"role": "assistant", "content": "It is 5."},
        ]
    }
    abandoned_pause = {
        "messages": [
            {"role": "user", "content": "delete it"},
            {"role": "assistant", "tool_calls": [{"id": "c2", "type": "function", "function": {"name": "rm", "arguments": "{}"}}]},
        ]
    }
    agent = Agent(id="assistant", model="openai:gpt-4o-mini", add_history_to_context=True)

    drain(agent.start_run("next", make_ctx(history=[complete_run, abandoned_pause])))

    assert openai_server.requests[0].body["messages"] == [
        {"role": "user", "content": "add"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "5"},
        {"role": "assistant", "content": "It is 5."},
        {"role": "user", "content": "delete it"},
        {"role": "user", "content": "next"},
    ]
