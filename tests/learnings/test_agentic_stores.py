"""Entity memory and decision logs, written by the agent through its learning tools
(engine/learning_tools.py; the offline model calls them: ``<Name> is a <type> that <fact>``,
``we decided to <X> because <Y>``), kept per user in agno_learnings (learnings/records.py)."""
from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from engine.learning import user_key_segment
from learnings.models import Learning
from tests.security.conftest import auth, jwt_server, token  # noqa: F401 (jwt_server: a fixture)

pytestmark = pytest.mark.django_db(transaction=True)  # runs execute in their own threads and connections

MESSAGE = "Acme is a company that uses PostgreSQL. We decided to use PostgreSQL because it is reliable."


@pytest.fixture(autouse=True)
def learning_agents(settings):
    settings.AGENT_MODULES = [*settings.AGENT_MODULES, "tests.learnings.learning_agents"]


def run(client: Client, message: str, *, user_id: str = "alice", agent_id: str = "learner-full") -> dict[str, Any]:
    response = client.post(f"/agents/{agent_id}/runs", {"message": message, "stream": "false", "user_id": user_id})
    assert response.status_code == 200, response.content
    return response.json()


def entity_key(user_id: str) -> str:
    return f"entity_user_{user_key_segment(user_id)}_company_acme"


def facts(row: Learning) -> list[str]:
    return [fact["content"] for fact in row.content["facts"] if not fact.get("superseded_at")]


def test_the_agent_records_an_entity_and_a_decision_as_the_users_rows(client: Client) -> None:
    answer = run(client, MESSAGE)
    assert answer["content"].splitlines()[0] == "Tool remember_about returned: Created company/acme. Recorded 1 fact(s)."
    decision_id = answer["content"].splitlines()[1].removeprefix("Tool log_decision returned: Decision logged: ")
    entity = Learning.objects.for_user("alice").get(pk=entity_key("alice"))
    assert (entity.learning_type, entity.namespace, entity.entity_id, entity.entity_type, entity.agent_id) == (
        "entity_memory", "user", "acme", "company", "learner-full")
    assert {key: entity.content[key] for key in ("entity_id", "entity_type", "name", "namespace", "user_id")} == {
        "entity_id": "acme", "entity_type": "company", "name": "Acme", "namespace": "user", "user_id": "alice"}
    assert facts(entity) == ["uses PostgreSQL"]
    decision = Learning.objects.for_user("alice").get(pk=decision_id)
    assert (decision.learning_type, decision.agent_id, decision.session_id, decision.namespace) == (
        "decision_log", "learner-full", answer["session_id"], None)
    assert {key: decision.content[key] for key in ("id", "decision", "reasoning", "user_id", "agent_id", "session_id")} == {
        "id": decision_id, "decision": "use PostgreSQL", "reasoning": "it is reliable", "user_id": "alice",
        "agent_id": "learner-full", "session_id": answer["session_id"]}
    # /learnings lists both as alice's; the next chat's context names the entity and the decision.
    listed = client.get("/learnings", {"user_id": "alice", "learning_type": "entity_memory"}).json()["data"]
    assert [(row["learning_id"], row["user_id"], row["content"]["facts"][0]["content"]) for row in listed] == [
        (entity_key("alice"), "alice", "uses PostgreSQL")]
    assert [row["learning_id"] for row in client.get("/learnings", {"user_id": "alice", "learning_type": "decision_log"}).json()["data"]] == [decision_id]
    later = run(client, "What do you know about me?")
    assert "I know about 1 entity: Acme (company)." in later["content"]


def test_a_second_mention_merges_into_the_entity_and_skips_a_known_fact(client: Client) -> None:
    run(client, "Acme is a company that uses PostgreSQL.")
    answer = run(client, "Acme is a company that uses PostgreSQL. Acme is a company that sells rockets.")
    assert answer["content"].splitlines() == [
        "Tool remember_about returned: Updated company/acme. Skipped 1 already-recorded fact(s).",
        "Tool remember_about returned: Updated company/acme. Recorded 1 fact(s).",
    ]
    assert facts(Learning.objects.for_user("alice").get(pk=entity_key("alice"))) == ["uses PostgreSQL", "sells rockets"]
    forgot = run(client, '/call forget {"entity": "Acme", "fact": "uses PostgreSQL"}')
    assert forgot["content"] == "Tool forget returned: Retired fact on company/acme: uses PostgreSQL"
    assert facts(Learning.objects.for_user("alice").get(pk=entity_key("alice"))) == ["sells rockets"]


def test_two_users_who_record_one_entity_never_share_a_row(client: Client) -> None:
    run(client, "Acme is a company that uses PostgreSQL.", user_id="alice")
    run(client, "Acme is a company that uses MySQL.", user_id="bob")
    assert facts(Learning.objects.for_user("alice").get(pk=entity_key("alice"))) == ["uses PostgreSQL"]
    assert facts(Learning.objects.for_user("bob").get(pk=entity_key("bob"))) == ["uses MySQL"]
    assert entity_key("alice") != entity_key("bob")
    # Each one's agent reads only their own entities and decisions.
    found = run(client, '/call search_entities {"query": "acme"}', user_id="bob")["content"]
    assert found == "Tool search_entities returned: - Acme (company) | facts: uses MySQL"
    assert "PostgreSQL" not in json.dumps(run(client, "What do you know about me?", user_id="bob"))


def test_another_users_decision_can_be_neither_found_nor_changed(client: Client) -> None:
    answer = run(client, "We decided to ship on Friday because the tests pass.")
    decision_id = answer["content"].removeprefix("Tool log_decision returned: Decision logged: ")
    before = Learning.objects.for_user("alice").get(pk=decision_id).content
    call = json.dumps({"decision_id": decision_id, "outcome": "it broke"})
    assert run(client, f"/call record_outcome {call}", user_id="bob")["content"] == f"Tool record_outcome returned: Decision {decision_id} not found"
    assert Learning.objects.for_user("alice").get(pk=decision_id).content == before
    assert run(client, "/call search_decisions {}", user_id="bob")["content"] == "Tool search_decisions returned: No matching decisions found."
    # Its owner's agent records the outcome, and finds it.
    assert run(client, f"/call record_outcome {call}")["content"] == f"Tool record_outcome returned: Outcome recorded for decision {decision_id}"
    assert Learning.objects.for_user("alice").get(pk=decision_id).content["outcome"] == "it broke"
    assert run(client, '/call search_decisions {"query": "friday"}')["content"] == (
        f"Tool search_decisions returned: [{decision_id}] ship on Friday - the tests pass -> it broke")


def test_a_shared_namespace_row_is_everyones_but_another_users_row_is_never_overwritten(client: Client) -> None:
    run(client, "Acme is a company that uses PostgreSQL.", agent_id="learner-global", user_id="alice")
    shared = Learning.all_users.get(pk="entity_global_company_acme")
    assert (shared.user_id, shared.namespace, shared.content["user_id"]) == (None, "global", None)
    run(client, "Acme is a company that sells rockets.", agent_id="learner-global", user_id="bob")
    assert facts(Learning.all_users.get(pk="entity_global_company_acme")) == ["uses PostgreSQL", "sells rockets"]
    # A row alice owns under the shared namespace (made over the API) is hers: bob's agent may not write it.
    created = client.post("/learnings", {"learning_type": "entity_memory", "namespace": "global", "entity_id": "globex", "entity_type": "company",
                                         "user_id": "alice", "content": {"facts": []}}, content_type="application/json")
    assert created.status_code == 201, created.content
    refused = run(client, "Globex is a company that sells everything.", agent_id="learner-global", user_id="bob")["content"]
    assert refused == "Tool remember_about returned: Nothing was recorded on company/globex: that record is not this user's to change"
    assert Learning.all_users.get(pk="entity_global_company_globex").content == {"facts": []}
    assert run(client, '/call search_entities {}', agent_id="learner-global", user_id="bob")["content"] == (
        "Tool search_entities returned: - Acme (company) | facts: uses PostgreSQL; sells rockets")


def test_a_machine_without_agentic_stores_offers_no_learning_tools(client: Client) -> None:
    answer = run(client, MESSAGE, agent_id="learner")
    assert answer["content"].startswith("(offline demo) You said: ")
    assert not Learning.all_users.filter(learning_type__in=["entity_memory", "decision_log"]).exists()


def test_the_demo_learning_agent_records_the_readmes_entity_and_decision(client: Client, settings, offline_demo) -> None:
    import re
    from pathlib import Path

    settings.AGENT_MODULES = [*settings.AGENT_MODULES, "agents.demo"]
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    row = re.search(r"^\| entity memory, decision log \| Learning Agent \| `([^`]+)`", readme, re.M)
    assert row, "the README's demo row for entity memory and decision logs"
    answer = run(client, row.group(1), agent_id="demo-learner")
    lines = answer["content"].splitlines()
    assert lines[0] == "Tool remember_about returned: Created company/acme. Recorded 1 fact(s)."
    assert re.fullmatch(r"Tool log_decision returned: Decision logged: dec_[0-9a-f]{12}", lines[1])
    kinds = sorted(Learning.objects.for_user("alice").values_list("learning_type", "agent_id"))
    assert kinds == [("decision_log", "demo-learner"), ("entity_memory", "demo-learner")]
    assert "I know about 1 entity: Acme (company)." in run(client, "What do you know about me?", agent_id="demo-learner")["content"]


def test_agnos_own_schemas_read_what_the_agent_recorded(client: Client) -> None:
    """AgentOS's response model reads /learnings, and agno's EntityMemory and DecisionLog read the
    records' content (Agno 3.1.10's AgentOSClient has no learning calls: these are what it would parse)."""
    from agno.learn.schemas import DecisionLog, EntityMemory
    from agno.os.routers.learnings.schema import LearningResponse
    from agno.os.schema import PaginatedResponse

    run(client, MESSAGE)
    body = client.get("/learnings", {"user_id": "alice", "sort_by": "created_at", "sort_order": "asc"}).json()
    page = PaginatedResponse[LearningResponse].model_validate(body)
    by_type = {row.learning_type: row for row in page.data}
    entity = EntityMemory.from_dict(by_type["entity_memory"].content)
    assert (entity.entity_id, entity.entity_type, entity.name, [f["content"] for f in entity.facts]) == ("acme", "company", "Acme", ["uses PostgreSQL"])
    decision = DecisionLog.from_dict(by_type["decision_log"].content)
    assert (decision.id, decision.decision, decision.reasoning, decision.user_id) == (
        by_type["decision_log"].learning_id, "use PostgreSQL", "it is reliable", "alice")


def test_another_user_gets_404_for_what_the_agent_recorded_for_alice(client: Client, request) -> None:
    answer = run(client, MESSAGE)
    decision_id = answer["content"].splitlines()[1].removeprefix("Tool log_decision returned: Decision logged: ")
    request.getfixturevalue("jwt_server")  # from here on, callers are signed in and isolated
    scopes = ["learnings:read", "learnings:write", "learnings:delete"]
    bob, alice = auth(token("bob", scopes)), auth(token("alice", scopes))
    for learning_id in (entity_key("alice"), decision_id):
        assert client.get(f"/learnings/{learning_id}", **bob).status_code == 404
        assert client.patch(f"/learnings/{learning_id}", {"content": {}}, content_type="application/json", **bob).status_code == 404
        assert client.delete(f"/learnings/{learning_id}", **bob).status_code == 404
        assert client.get(f"/learnings/{learning_id}", **alice).json()["user_id"] == "alice"
    assert client.get("/learnings", **bob).json()["data"] == []
