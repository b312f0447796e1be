"""An agent with learning on reads the user's learnings into its context and records new ones when
the run completes (the offline model plays the memory model: ``my name is X``, ``I like X``)."""
from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from engine import Agent
from engine.learning import DEFAULT_MACHINE, LearningMachine
from learnings.models import Learning
from sessions.models import UserMemory

pytestmark = pytest.mark.django_db(transaction=True)  # runs execute in their own threads and connections


@pytest.fixture(autouse=True)
def learning_agents(settings):
    settings.AGENT_MODULES = [*settings.AGENT_MODULES, "tests.learnings.learning_agents"]


def run(client: Client, agent_id: str, message: str, user_id: str = "alice") -> dict[str, Any]:
    response = client.post(f"/agents/{agent_id}/runs", {"message": message, "stream": "false", "user_id": user_id})
    assert response.status_code == 200, response.content
    return response.json()


def learned(user_id: str) -> list[str]:
    row = Learning.objects.for_user(user_id).filter(pk=f"memories_{user_id}").first()
    return [entry["content"] for entry in row.content["memories"]] if row else []


def test_a_run_records_what_it_learned_and_the_next_chat_reads_it(client: Client) -> None:
    run(client, "learner", "Hello, my name is Ada")
    row = Learning.objects.for_user("alice").get(pk="memories_alice")
    assert (row.learning_type, row.agent_id, row.content["user_id"]) == ("user_memory", "learner", "alice")
    assert learned("alice") == ["User's name is Ada"]
    profile = Learning.objects.for_user("alice").get(pk="user_profile_alice")
    assert (profile.learning_type, profile.content) == ("user_profile", {"name": "Ada", "user_id": "alice"})
    run(client, "learner", "I like green tea")
    assert learned("alice") == ["User's name is Ada", "User likes green tea"]
    # A new session: the learnings come with the user, not the conversation.
    answer = run(client, "learner", "What do you know about me?")
    assert "I remember 2 things about you: User's name is Ada; User likes green tea." in answer["content"]
    assert not UserMemory.objects.for_user("alice").exists()  # nothing in the legacy memory table


def test_what_alice_taught_is_never_in_bobs_context(client: Client) -> None:
    run(client, "learner", "my name is Ada")
    answer = run(client, "learner", "What do you know about me?", user_id="bob")
    assert "Ada" not in answer["content"]
    assert learned("bob") == []


def test_a_learning_edited_over_the_api_is_what_the_agent_reads(client: Client) -> None:
    run(client, "learner", "my name is Ada")
    row = Learning.objects.for_user("alice").get(pk="memories_alice")
    content = {**row.content, "memories": [{**row.content["memories"][0], "content": "User's name is Ada Lovelace"}]}
    assert client.patch("/learnings/memories_alice", {"content": content}, content_type="application/json").status_code == 200
    assert "User's name is Ada Lovelace" in run(client, "learner", "What do you know about me?")["content"]


def test_turning_learning_on_clears_the_legacy_memory_pair(client: Client) -> None:
    run(client, "learner-legacy-off", "my name is Ada")
    assert not UserMemory.objects.for_user("alice").exists()
    assert learned("alice") == ["User's name is Ada"]


def test_the_engine_builds_the_default_machine_or_takes_a_named_one() -> None:
    assert Agent(enable_learning=True).learning == DEFAULT_MACHINE
    entities = LearningMachine(name="entities", entity_namespace="user")
    agent = Agent(learning=entities, update_memory_on_run=True, add_memories_to_context=True)
    assert (agent.learning, agent.update_memory_on_run, agent.add_memories_to_context, agent.records_memories) == (entities, False, False, True)
    assert Agent(update_memory_on_run=True).learning is None


def test_a_machine_without_the_profile_keeps_none(client: Client) -> None:
    run(client, "learner-memories-only", "my name is Ada")
    assert learned("alice") == ["User's name is Ada"]
    assert not Learning.objects.for_user("alice").filter(learning_type="user_profile").exists()


def test_the_learned_profile_is_in_the_system_prompt() -> None:
    from engine import RunContext

    out = Agent(id="a", enable_learning=True).run("hello", RunContext(run_id="r", session_id="s", user_id="alice", learned_profile={"name": "Ada", "user_id": "alice"}))
    system = out["messages"][0]["content"]
    assert "<user_profile>\n- name: Ada\n</user_profile>" in system
    legacy = Agent(id="b", update_memory_on_run=True).run("hello", RunContext(run_id="r2", session_id="s", learned_profile={"name": "Ada"}))
    assert "<user_profile>" not in json.dumps(legacy["messages"])


def test_a_team_with_learning_on_learns_through_its_leader(client: Client) -> None:
    response = client.post("/teams/learning-team/runs", {"message": "my name is Ada", "stream": "false", "user_id": "alice"})
    assert response.status_code == 200, response.content
    assert learned("alice") == ["User's name is Ada"]
    assert not UserMemory.objects.for_user("alice").exists()
