"""Knowledge over the API: a run's references in its response, its events and the stored run;
``knowledge_filters``; admin-defined agents naming bases through the knowledge hook; /config."""
from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from agents.knowledge import KnowledgeBaseInfo, knowledge_bases_registered
from engine import StaticKnowledge
from agents.services.definitions import definition_create, team_definition_create
from tests.api.sse import parse_sse

# Runs execute on run threads with their own connections, which must see committed rows.
pytestmark = pytest.mark.django_db(transaction=True)

JOBS_HIT = {
    "content": "Background jobs are claimed with a lease and reaped when a worker dies.", "name": "jobs.md",
    "content_id": "c-jobs", "chunk_id": "handbook:0", "score": 1.0, "meta_data": {"topic": "jobs"},
}


class Bases:
    """The knowledge app's provider, as a test double: bases held in memory, by name."""

    def __init__(self, *sources: StaticKnowledge) -> None:
        self.sources = {source.name: source for source in sources}

    def bases(self) -> list[KnowledgeBaseInfo]:
        return [KnowledgeBaseInfo(id=s.id, name=s.name, description=s.description) for s in self.sources.values()]

    def source(self, name: str) -> StaticKnowledge | None:
        return self.sources.get(name)


FAQ = StaticKnowledge("FAQ", [{"content": "Schedules fire once: the claimer of a slot submits.", "name": "faq.md", "content_id": "c-faq"}], id="faq-1", description="Questions")


@pytest.fixture(autouse=True)
def knowledge_agents(settings):
    settings.AGENT_MODULES = [*settings.AGENT_MODULES, "tests.api.knowledge_agents"]


@pytest.fixture
def bases():
    provider = Bases(FAQ)
    with knowledge_bases_registered(provider):
        yield provider


def run(client: Client, agent_id: str = "kb-agent", kind: str = "agents", **form: str) -> dict[str, Any]:
    form.setdefault("stream", "false")
    form.setdefault("user_id", "alice")
    response = client.post(f"/{kind}/{agent_id}/runs", form)
    assert response.status_code == 200, response.content
    return response.json()


def test_a_runs_references_are_in_its_response_and_its_stored_run(client: Client) -> None:
    body = run(client, message="How are background jobs reaped?")

    expected = [{"query": "How are background jobs reaped?", "references": [JOBS_HIT], "time": body["references"][0]["time"]}]
    assert body["references"] == expected
    assert body["content"].startswith('(offline demo) From the knowledge base (1 passage), "jobs.md": Background jobs')
    stored = client.get(f"/sessions/{body['session_id']}/runs/{body['run_id']}").json()
    assert stored["references"] == expected
    (listed,) = client.get(f"/sessions/{body['session_id']}/runs").json()
    assert listed["references"] == expected


def test_a_streamed_run_carries_the_references_in_its_content_and_completed_events(live_api: str) -> None:
    response = httpx.post(f"{live_api}/agents/kb-agent/runs", data={"message": "How are background jobs reaped?", "user_id": "alice"}, timeout=30)
    frames = parse_sse(response.text)

    completed = frames[-1][1]
    assert frames[-1][0] == "RunCompleted"
    assert [r["references"] for r in completed["references"]] == [[JOBS_HIT]]
    contents = [data for name, data in frames if name == "RunContent"]
    assert "references" not in contents[0]  # before the search
    assert contents[-1]["references"] == completed["references"]


def test_the_search_is_for_the_runs_user(client: Client) -> None:
    alice = run(client, message="What is the launch code word?")
    bob = run(client, message="What is the launch code word?", user_id="bob")

    assert [r["name"] for r in alice["references"][0]["references"]] == ["alice.md"]
    assert "references" not in bob
    assert bob["content"] == "(offline demo) The knowledge base found nothing about that."


def test_knowledge_filters_narrow_the_search(client: Client) -> None:
    body = run(client, message="What is stored in order, and what is reaped?", knowledge_filters=json.dumps({"topic": "runs"}))

    assert [r["name"] for r in body["references"][0]["references"]] == ["runs.md"]
    # Not JSON: dropped, as AgentOS drops it.
    assert [r["name"] for r in run(client, message="What is reaped?", knowledge_filters="{nope")["references"][0]["references"]] == ["jobs.md"]


def test_filter_expressions_are_refused_rather_than_ignored(client: Client) -> None:
    response = client.post("/agents/kb-agent/runs", {"message": "What?", "stream": "false", "knowledge_filters": json.dumps({"op": "EQ", "key": "topic", "value": "runs"})})

    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert (error["loc"], error["msg"]) == (["body", "knowledge_filters"], "Filter expressions are not supported: pass a JSON object of metadata keys to values")


def test_add_knowledge_to_context_references_the_message(client: Client) -> None:
    body = run(client, "kb-context-agent", message="Where are runs stored?")

    assert [r["name"] for r in body["references"][0]["references"]] == ["runs.md"]
    assert body["input"] == {"input_content": "Where are runs stored?"}
    user = next(m for m in body["messages"] if m["role"] == "user")
    assert "<references>" in user["content"]
    assert "tools" not in body or body["tools"] == []


def test_a_teams_references_are_in_the_team_run(client: Client) -> None:
    body = run(client, "kb-team", kind="teams", message='/call search_knowledge_base {"query": "worker dies"}')

    assert body["team_id"] == "kb-team"
    assert [r["references"] for r in body["references"]] == [[JOBS_HIT]]
    stored = client.get(f"/sessions/{body['session_id']}/runs/{body['run_id']}?type=team").json()
    assert stored["references"] == body["references"]


def test_the_agent_detail_shows_its_knowledge_and_search_tool(client: Client) -> None:
    detail = client.get("/agents/kb-agent").json()

    assert detail["knowledge"] == {"db_id": "agno-site-db", "knowledge_table": "agno_knowledge"}
    search = next(tool for tool in detail["tools"]["tools"] if tool["name"] == "search_knowledge_base")
    assert search["parameters"] == {
        "type": "object", "properties": {"query": {"type": "string", "description": "The query to search for."}}, "required": ["query"],
    }
    assert "knowledge" not in client.get("/agents/assistant").json()


def test_config_lists_the_registered_bases_and_the_code_agents_sources(client: Client, bases) -> None:
    knowledge = client.get("/config").json()["knowledge"]

    assert knowledge == {
        "dbs": [{"db_id": "agno-site-db", "domain_config": {"display_name": "agno-site-db"}, "tables": ["agno_knowledge"]}],
        "knowledge_instances": [
            {"id": "faq-1", "name": "FAQ", "description": "Questions", "db_id": "agno-site-db", "table": "agno_knowledge"},
            {"id": "handbook", "name": "Handbook", "description": "How Agno Site works", "db_id": "agno-site-db", "table": "agno_knowledge"},
        ],
    }


def test_config_lists_the_knowledge_apps_bases_then_the_code_sources(client: Client) -> None:
    assert [base["name"] for base in client.get("/config").json()["knowledge"]["knowledge_instances"]] == ["documents", "Handbook"]


def test_config_without_a_knowledge_app_lists_the_code_sources_only(client: Client) -> None:
    with knowledge_bases_registered(None):
        assert [base["name"] for base in client.get("/config").json()["knowledge"]["knowledge_instances"]] == ["Handbook"]


def test_an_admin_agent_searches_the_bases_it_names(client: Client, bases) -> None:
    definition_create(agent_id="faq-agent", name="FAQ Agent", knowledge=["FAQ"])

    body = run(client, "faq-agent", message="When do schedules fire?")

    assert [(r["name"], r["content_id"]) for r in body["references"][0]["references"]] == [("faq.md", "c-faq")]
    assert client.get("/agents/faq-agent").json()["knowledge"] == {"db_id": "agno-site-db", "knowledge_table": "agno_knowledge"}


def test_an_admin_agent_cannot_name_a_base_that_does_not_exist(bases) -> None:
    with pytest.raises(ValidationError) as raised:
        definition_create(agent_id="lost-agent", name="Lost", knowledge=["Nope"])

    assert raised.value.message_dict == {"knowledge": ["No knowledge base named Nope."]}


def test_a_base_removed_after_publishing_is_a_tool_error_not_a_failed_run(client: Client, bases) -> None:
    definition_create(agent_id="faq-agent", name="FAQ Agent", knowledge=["FAQ"])
    del bases.sources["FAQ"]

    body = run(client, "faq-agent", message="When do schedules fire?")

    assert body["status"] == "COMPLETED"
    assert (body["tools"][0]["tool_call_error"], body["tools"][0]["result"]) == (True, "Error searching knowledge base: KnowledgeBaseNotFound")


def test_an_admin_team_leader_searches_the_bases_it_names(client: Client, bases) -> None:
    team_definition_create(team_id="faq-team", name="FAQ Team", members=["assistant"], knowledge=["FAQ"], add_knowledge_to_context=True, search_knowledge=False)

    body = run(client, "faq-team", kind="teams", message="When do schedules fire?")

    assert [r["references"][0]["content_id"] for r in body["references"]] == ["c-faq"]
    assert "search_knowledge_base" not in {tool["name"] for tool in client.get("/teams/faq-team").json()["tools"]["tools"]}
    with pytest.raises(ValidationError) as raised:
        team_definition_create(team_id="lost-team", name="Lost", members=["assistant"], knowledge=["FAQ", "FAQ"])
    assert raised.value.message_dict == {"knowledge": ["A knowledge base is listed twice."]}


def test_the_admins_version_forms_offer_the_registered_bases(bases) -> None:
    from agents.admin import AgentVersionForm, TeamVersionForm

    assert list(AgentVersionForm().fields["knowledge"].choices) == [("FAQ", "FAQ (Questions)")]
    assert list(TeamVersionForm().fields["knowledge"].choices) == [("FAQ", "FAQ (Questions)")]


def test_agnos_own_client_reads_the_references_and_sends_knowledge_filters(live_api: str) -> None:
    from agno.client.os import AgentOSClient
    from agno.models.message import MessageReferences
    from agno.run.agent import RunCompletedEvent

    from tests.api.test_agents_conformance import run as client_run

    client = AgentOSClient(base_url=live_api, timeout=30)
    output = client_run(client.run_agent("kb-agent", "What is stored, and what is reaped?", user_id="alice", knowledge_filters={"topic": "runs"}))
    (found,) = output.references
    assert isinstance(found, MessageReferences)
    assert (found.query, [hit["name"] for hit in found.references]) == ("What is stored, and what is reaped?", ["runs.md"])

    async def collect():
        return [event async for event in client.run_agent_stream("kb-agent", "How are background jobs reaped?", user_id="alice")]

    completed = client_run(collect())[-1]
    assert isinstance(completed, RunCompletedEvent)
    assert [hit["content_id"] for hit in completed.references[0].references] == ["c-jobs"]
