"""The pure parts of the agentic learning stores (engine.learning_tools) and the offline model's
learning grammar (engine.models.offline_learning)."""
from __future__ import annotations

import json

from engine.learning import LearningMachine
from engine.learning_tools import entity_forget, entity_remember, learning_context, slugify
from engine.models.offline_learning import known_entities, learning_calls


def test_names_slug_as_agnos_do() -> None:
    assert [slugify(name) for name in ("Acme, Inc.", "Acme Inc", "Sofía Muñoz", "C++", "C#")] == [
        "acme_inc", "acme_inc", "sofia_munoz", "c_plus_plus", "c_sharp"]


def remember(content, facts, **extra):
    return entity_remember(
        content, name="Acme", entity_id="acme", entity_type="company", namespace="user", user_id="alice",
        agent_id="a", team_id=None, description=extra.get("description"), facts=facts, events=extra.get("events", []),
    )


def test_remember_creates_then_merges_without_repeating_a_fact() -> None:
    first, created, duplicates = remember(None, ["uses PostgreSQL"], events=["launched v2"])
    assert (created, duplicates, first["user_id"], first["namespace"], first["archived_at"]) == (True, 0, "alice", "user", None)
    second, created, duplicates = remember(first, ["Uses  postgresql", "sells rockets"], description="A rocket maker")
    assert (created, duplicates, second["description"]) == (False, 1, "A rocket maker")
    assert [f["content"] for f in second["facts"]] == ["uses PostgreSQL", "sells rockets"]
    assert [e["content"] for e in second["events"]] == ["launched v2"]
    assert [f["content"] for f in first["facts"]] == ["uses PostgreSQL"]  # the stored content is not changed in place


def test_forget_retires_one_fact_or_archives_and_remember_revives() -> None:
    entity, _, _ = remember(None, ["uses PostgreSQL", "uses Redis"])
    unchanged, answer = entity_forget(entity, "uses")
    assert unchanged is None and answer.startswith("No single fact on company/acme matches 'uses'")
    retired, answer = entity_forget(entity, "redis")
    assert answer == "Retired fact on company/acme: uses Redis"
    assert [f["content"] for f in retired["facts"] if not f.get("superseded_at")] == ["uses PostgreSQL"]
    archived, answer = entity_forget(retired, None)
    assert archived["archived_at"] and answer.startswith("Archived company/acme.")
    assert remember(archived, [])[0]["archived_at"] is None


def test_the_system_prompt_lists_entities_and_recent_decisions() -> None:
    class Records:
        user_id = "alice"
        entity_directory = [remember(None, ["uses PostgreSQL"])[0]]
        recent_decisions = [{"id": "dec_1", "decision": "use PostgreSQL", "reasoning": "reliable", "outcome": None}]

    entities, decisions = learning_context(LearningMachine(entity_namespace="user", decision_log=True), Records())
    assert entities.startswith("<entity_memory>\n- Acme (company) | facts: uses PostgreSQL\n</entity_memory>")
    assert decisions.startswith("<decision_log>\nRecent decisions:\n- [dec_1] use PostgreSQL (reasoning: reliable)\n</decision_log>")
    assert known_entities([{"role": "system", "content": entities}]) == "I know about 1 entity: Acme (company)."
    assert learning_context(LearningMachine(), Records()) == []


def test_the_offline_model_calls_the_learning_tools_a_message_asks_for() -> None:
    calls = learning_calls("Acme is a company that uses PostgreSQL. We decided to use it because it is reliable.", {"remember_about", "log_decision"}, 1)
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("remember_about", {"entity": "Acme", "entity_type": "company", "facts": ["uses PostgreSQL"]}),
        ("log_decision", {"decision": "use it", "reasoning": "it is reliable"}),
    ]
    assert learning_calls("Acme is a company that uses PostgreSQL.", {"log_decision"}, 1) == []
    assert learning_calls("Hello, my name is Ada", {"remember_about", "log_decision"}, 1) == []
