"""The memory manager writes through the caller's MemoryStore; memories reach the system prompt."""
from __future__ import annotations

from engine import Agent
from tests.fakes.openai_server import Call, Reply, is_memory_request, routed
from tests.engine.conftest import FakeMemoryStore
from tests.engine.helpers import common, drain, names


def test_offline_memory_model_adds_memories_through_the_store(make_ctx):
    store = FakeMemoryStore()
    agent = Agent(id="assistant", name="Assistant", update_memory_on_run=True)
    run = agent.start_run("Hi! My name is Ada and I like green tea.", make_ctx(memory_store=store))

    events = drain(run)

    expected = [
        {"memory_id": "mem-1", "memory": "User's name is Ada", "topics": ["name"], "input": "Hi! My name is Ada and I like green tea."},
        {"memory_id": "mem-2", "memory": "User likes green tea", "topics": ["preferences"], "input": "Hi! My name is Ada and I like green tea."},
    ]
    assert names(events)[-4:] == ["RunContentCompleted", "MemoryUpdateStarted", "MemoryUpdateCompleted", "RunCompleted"]
    assert events[-2] == common("MemoryUpdateCompleted", memories=expected)
    assert run.memories == expected
    assert list(store.memories.values()) == expected
    details = run.output["metrics"]["details"]
    (memory_usage,) = details["memory_model"]
    assert (memory_usage["id"], memory_usage["provider"], memory_usage["output_tokens"]) == ("demo", "Offline", 18)
    assert run.output["metrics"]["total_tokens"] == details["model"][0]["total_tokens"] + memory_usage["total_tokens"]


def test_memories_are_updated_and_deleted_and_shown_to_the_model(make_ctx):
    existing = [
        {"memory_id": "m1", "memory": "User's name is Ada", "topics": ["name"]},
        {"memory_id": "m2", "memory": "User likes green tea", "topics": ["preferences"]},
    ]
    store = FakeMemoryStore(existing)
    agent = Agent(id="assistant", update_memory_on_run=True)

    run = agent.start_run("My name is Grace. Forget that I like green tea.", make_ctx(memory_store=store, memories=existing))
    drain(run)

    assert store.calls == [("update", "m1"), ("delete", "m2")]
    assert run.memories == [{"memory_id": "m1", "memory": "User's name is Grace", "topics": ["name"]}]
    system = run.output["messages"][0]
    assert system["role"] == "system"
    assert "<memories_from_previous_interactions>\n- User's name is Ada\n- User likes green tea\n</memories_from_previous_interactions>" in system["content"]
    assert "I remember 2 things about you" in run.output["content"]


def test_nothing_worth_remembering_changes_nothing(make_ctx):
    store = FakeMemoryStore()
    run = Agent(id="assistant", update_memory_on_run=True).start_run("What time is it?", make_ctx(memory_store=store))
    drain(run)
    assert (store.calls, run.memories) == ([], [])


def test_memory_update_needs_a_store(make_ctx):
    events = drain(Agent(id="assistant", update_memory_on_run=True).start_run("my name is Ada", make_ctx()))
    assert "MemoryUpdateStarted" not in names(events)


def test_openai_compatible_memory_model_uses_the_memory_tools(make_ctx, openai_server):
    openai_server.push(*routed(
        is_memory_request,
        [Reply(tool_calls=[Call("add_memory", {"memory": "User's name is Ada", "topics": ["name"]})], usage=(50, 12)), Reply(text="Done.", usage=(60, 2))],
        [Reply(text="Nice to meet you, Ada.", usage=(20, 6))],
    ))
    store = FakeMemoryStore()
    agent = Agent(id="assistant", model="openai:gpt-4o-mini", update_memory_on_run=True)

    run = agent.start_run("I'm Ada.", make_ctx(memory_store=store))
    drain(run)

    assert run.output["content"] == "Nice to meet you, Ada."
    assert run.memories == [{"memory_id": "mem-1", "memory": "User's name is Ada", "topics": ["name"], "input": "I'm Ada."}]
    memory_request, follow_up_request = [r.body for r in openai_server.requests if is_memory_request(r)]
    assert [t["function"]["name"] for t in memory_request["tools"]] == ["add_memory", "update_memory", "delete_memory"]
    assert memory_request["messages"][0]["content"].endswith("<existing_memories>\n(none)\n</existing_memories>")
    assert memory_request["messages"][1] == {"role": "user", "content": "I'm Ada."}
    follow_up = follow_up_request["messages"]
    assert follow_up[-1] == {"role": "tool", "tool_call_id": follow_up[-2]["tool_calls"][0]["id"], "content": "Memory added successfully"}
    assert run.output["metrics"]["details"]["memory_model"] == [
        {"input_tokens": 110, "output_tokens": 14, "total_tokens": 124, "id": "gpt-4o-mini", "provider": "OpenAI"}
    ]
    assert run.output["metrics"]["input_tokens"] == 130
