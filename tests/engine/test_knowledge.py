"""Agents and teams with ``knowledge``: the search_knowledge_base tool, add_knowledge_to_context,
filters, and the run's ``references`` in the output, the events and a stored run's round trip."""
from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import yaml

from engine import Agent, CombinedKnowledge, KnowledgeHit, StaticKnowledge, Team, get_model
from engine.output import RunState
from tests.engine.helpers import drain, names

PASSAGES = [
    {"content": "Agno Site stores every run in one row; events are kept in order.", "name": "runs.md", "content_id": "c-runs", "meta_data": {"topic": "runs"}},
    {"content": "Background jobs are claimed with a lease and reaped when a worker dies.", "name": "jobs.md", "content_id": "c-jobs", "meta_data": {"topic": "jobs"}},
    {"content": "Alice's private note: the launch code word is heron.", "name": "alice.md", "user_id": "alice", "meta_data": {"topic": "notes"}},
]


class Recording:
    """A real StaticKnowledge, with the arguments of each search kept for the test to read."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls: list[dict[str, Any]] = []

    @property
    def filter_keys(self) -> set[str]:
        return self.inner.filter_keys

    async def asearch(self, query: str, *, user_id: str | None, limit: int = 5, filters: dict[str, Any] | None = None) -> list[KnowledgeHit]:
        self.calls.append({"query": query, "user_id": user_id, "limit": limit, "filters": filters})
        return await self.inner.asearch(query, user_id=user_id, limit=limit, filters=filters)


class Broken:
    name = "broken"

    async def asearch(self, query: str, *, user_id: str | None, limit: int = 5, filters: dict[str, Any] | None = None) -> list[KnowledgeHit]:
        raise ConnectionError("vector store at 10.0.0.5 refused the connection")


def docs() -> Recording:
    return Recording(StaticKnowledge("Docs", PASSAGES))


def search(source: Any, query: str, **kwargs: Any) -> list[KnowledgeHit]:
    kwargs.setdefault("user_id", None)
    return asyncio.run(source.asearch(query, **kwargs))


# ---- StaticKnowledge ----------------------------------------------------------------------------


def test_static_knowledge_ranks_by_the_share_of_query_words_a_passage_has():
    hits = search(StaticKnowledge("Docs", PASSAGES), "how are background jobs reaped?")

    assert [(h.name, h.content_id) for h in hits] == [("jobs.md", "c-jobs")]
    assert hits[0].score == 1.0  # "background", "jobs", "reaped": all three
    assert hits[0].chunk_id == "Docs:1"
    assert search(StaticKnowledge("Docs", PASSAGES), "reaped runs")[0].score == pytest.approx(0.5, abs=0.01)
    assert search(StaticKnowledge("Docs", PASSAGES), "penguins") == []


def test_static_knowledge_shows_a_users_passages_to_that_user_only():
    base = StaticKnowledge("Docs", PASSAGES)

    assert [h.name for h in search(base, "launch code word", user_id="alice")] == ["alice.md"]
    assert search(base, "launch code word", user_id="bob") == []
    assert search(base, "launch code word", user_id=None) == []


def test_static_knowledge_filters_on_metadata():
    base = StaticKnowledge("Docs", PASSAGES)

    assert [h.name for h in search(base, "run row jobs lease", filters={"topic": "jobs"})] == ["jobs.md"]
    assert [h.name for h in search(base, "run row jobs lease", filters={"topic": ["jobs", "runs"]})] == ["runs.md", "jobs.md"]
    assert base.filter_keys == {"topic"}


def test_combined_knowledge_keeps_the_best_hits_of_all_sources():
    extra = StaticKnowledge("FAQ", ["Jobs are reaped by the reaper.", "Unrelated text about tea."])
    hits = search(CombinedKnowledge([StaticKnowledge("Docs", PASSAGES), extra]), "jobs reaped lease", limit=2)

    assert [(h.name, h.score) for h in hits] == [("jobs.md", 1.0), ("FAQ", 0.7602)]  # idf-weighted: "lease" is the rare word it lacks


# ---- the search_knowledge_base tool ---------------------------------------------------------------


def test_a_question_searches_the_knowledge_base_for_the_runs_user_and_answers_from_it(make_ctx):
    source = docs()
    agent = Agent(id="assistant", name="Assistant", knowledge=source, knowledge_filters={"topic": "jobs"})
    run = agent.start_run("How are background jobs reaped?", make_ctx())
    events = drain(run)
    out = run.output

    assert source.calls == [{"query": "How are background jobs reaped?", "user_id": "alice", "limit": 5, "filters": {"topic": "jobs"}}]
    hit = {
        "content": "Background jobs are claimed with a lease and reaped when a worker dies.", "name": "jobs.md",
        "content_id": "c-jobs", "chunk_id": "Docs:1", "score": 1.0, "meta_data": {"topic": "jobs"},
    }
    assert out["references"] == [{"query": "How are background jobs reaped?", "references": [hit], "time": 0.0}]
    assert out["content"] == (
        '(offline demo) From the knowledge base (1 passage), "jobs.md": '
        "Background jobs are claimed with a lease and reaped when a worker dies."
    )
    tool = out["tools"][0]
    assert (tool["tool_name"], tool["tool_args"], tool["tool_call_error"]) == ("search_knowledge_base", {"query": "How are background jobs reaped?"}, False)
    assert json.loads(tool["result"]) == [{"content": hit["content"], "name": "jobs.md", "meta_data": {"topic": "jobs"}}]
    assert "<knowledge_base>\nYou have a knowledge base you can search using the search_knowledge_base tool." in out["messages"][0]["content"]

    # As AgentOS: content events carry the references once there are some, and so does RunCompleted.
    contents = [e for e in events if e["event"] == "RunContent"]
    assert "references" not in contents[0]
    assert contents[-1]["references"] == out["references"]
    assert events[-1]["event"] == "RunCompleted" and events[-1]["references"] == out["references"]


def test_the_run_filters_update_the_agents_and_a_search_with_nothing_found_records_nothing(make_ctx):
    source = docs()
    agent = Agent(id="assistant", knowledge=source, knowledge_filters={"topic": "jobs", "lang": "en"})
    run = agent.start_run("What is a penguin?", make_ctx(knowledge_filters={"topic": "runs"}))
    drain(run)

    assert source.calls[0]["filters"] == {"topic": "runs", "lang": "en"}
    assert "references" not in run.output
    assert run.output["tools"][0]["result"] == "No documents found"
    assert run.output["content"] == "(offline demo) The knowledge base found nothing about that."


def test_a_statement_is_not_a_question_so_the_offline_model_does_not_search(make_ctx):
    source = docs()
    run = Agent(id="assistant", knowledge=source).start_run("Thanks, that helps.", make_ctx())
    drain(run)

    assert source.calls == []
    assert run.output["content"].startswith("(offline demo) You said: Thanks, that helps.")


def test_search_knowledge_false_offers_no_tool(make_ctx):
    agent = Agent(id="assistant", knowledge=docs(), search_knowledge=False)

    assert "search_knowledge_base" not in agent.run_functions(make_ctx())
    run = agent.start_run("What is stored in one row?", make_ctx())
    drain(run)
    assert "knowledge_base" not in json.dumps(run.output["messages"])


def test_a_failing_source_is_a_tool_error_for_the_model_not_a_failed_run(make_ctx):
    run = Agent(id="assistant", knowledge=Broken()).start_run("What is stored?", make_ctx())
    events = drain(run)
    out = run.output

    assert out["status"] == "COMPLETED"
    tool = out["tools"][0]
    # The error's type only: its message names storage internals the model has no use for.
    assert (tool["tool_call_error"], tool["result"]) == (True, "Error searching knowledge base: ConnectionError")
    assert "ToolCallError" in names(events)
    assert out["content"] == "Tool search_knowledge_base failed: Error searching knowledge base: ConnectionError"
    assert "references" not in out


def test_agentic_filters_are_the_models_unless_the_user_or_agent_set_some(make_ctx):
    call = '/call search_knowledge_base {"query": "row lease", "filters": [{"key": "topic", "value": "jobs"}]}'
    source = docs()
    agent = Agent(id="assistant", knowledge=source, enable_agentic_knowledge_filters=True)
    run = agent.start_run(call, make_ctx())
    drain(run)

    assert source.calls[0]["filters"] == {"topic": "jobs"}
    assert [r["name"] for r in run.output["references"][0]["references"]] == ["jobs.md"]
    assert "metadata filters: topic." in run.output["messages"][0]["content"]
    assert "filters" in agent.run_functions(make_ctx())["search_knowledge_base"].parameters["properties"]

    drain(agent.start_run(call, make_ctx(knowledge_filters={"topic": "runs"})))
    assert source.calls[1]["filters"] == {"topic": "runs"}


def test_references_format_yaml_is_what_the_model_reads(make_ctx):
    run = Agent(id="assistant", knowledge=docs(), references_format="yaml").start_run("What is kept in order?", make_ctx())
    drain(run)

    assert yaml.safe_load(run.output["tools"][0]["result"])[0]["name"] == "runs.md"
    with pytest.raises(ValueError, match="references_format"):
        Agent(id="x", references_format="xml")


def test_knowledge_must_be_a_source():
    with pytest.raises(TypeError, match="asearch"):
        Agent(id="x", knowledge=["not a source"])


# ---- add_knowledge_to_context ----------------------------------------------------------------------


def test_add_knowledge_to_context_adds_the_best_passages_to_the_message_before_the_model_call(make_ctx):
    source = docs()
    agent = Agent(id="assistant", knowledge=source, search_knowledge=False, add_knowledge_to_context=True)
    run = agent.start_run("Where are runs stored?", make_ctx())
    events = drain(run)
    out = run.output

    assert source.calls == [{"query": "Where are runs stored?", "user_id": "alice", "limit": 5, "filters": None}]
    user = next(m for m in out["messages"] if m["role"] == "user")
    assert user["content"].startswith(
        "Where are runs stored?\n\nUse the following references from the knowledge base if it helps:\n<references>\n["
    )
    assert user["content"].endswith("]\n</references>")
    assert [r["name"] for r in out["references"][0]["references"]] == ["runs.md"]
    assert not out.get("tools")
    assert out["content"] == (
        '(offline demo) You said: Where are runs stored? This is the first message I see from you. '
        'The knowledge base gave me 1 passage; the best, from "runs.md": '
        "Agno Site stores every run in one row; events are kept in order."
    )
    # The references are there from the first content event on.
    assert next(e for e in events if e["event"] == "RunContent")["references"] == out["references"]
    assert out["input"] == {"input_content": "Where are runs stored?"}


def test_add_knowledge_to_context_with_a_failing_source_answers_without_references(make_ctx):
    run = Agent(id="assistant", knowledge=Broken(), search_knowledge=False, add_knowledge_to_context=True).start_run("Where?", make_ctx())
    drain(run)

    assert run.output["status"] == "COMPLETED"
    assert "references" not in run.output
    assert run.output["messages"][-2]["content"] == "Where?"


def test_references_survive_the_stored_run_round_trip(make_ctx):
    run = Agent(id="assistant", knowledge=docs()).start_run("What is kept in order?", make_ctx())
    drain(run)

    again = RunState.from_dict(json.loads(json.dumps(run.output))).to_dict()
    assert again["references"] == run.output["references"]


# ---- teams ---------------------------------------------------------------------------------------


def test_a_team_leader_searches_its_own_knowledge_and_the_team_events_carry_the_references(make_ctx):
    member = Agent(id="writer", name="Writer")
    source = docs()
    team = Team([member], id="assistant", name="Assistant", knowledge=source)
    run = team.start_run('/call search_knowledge_base {"query": "worker dies"}', make_ctx())
    events = drain(run)
    out = run.output

    assert source.calls[0]["user_id"] == "alice"
    assert out["team_id"] == "assistant"
    assert [r["name"] for r in out["references"][0]["references"]] == ["jobs.md"]
    assert events[-1]["event"] == "TeamRunCompleted" and events[-1]["references"] == out["references"]
    assert [e for e in events if e["event"] == "TeamRunContent"][-1]["references"] == out["references"]


def test_a_member_with_knowledge_keeps_its_references_in_its_own_run(make_ctx):
    source = docs()
    member = Agent(id="librarian", name="Librarian", knowledge=source)
    team = Team([member], id="assistant", name="Assistant")
    run = team.start_run("What does a lease do to background jobs?", make_ctx(knowledge_filters={"topic": "jobs"}))
    drain(run)
    out = run.output

    assert source.calls[0]["filters"] == {"topic": "jobs"}
    librarian = out["member_responses"][0]
    assert [r["name"] for r in librarian["references"][0]["references"]] == ["jobs.md"]
    assert "references" not in out


@pytest.mark.django_db  # it searches the user's documents too (none here), then its handbook
def test_the_demo_docs_agent_answers_from_its_handbook_with_references(make_ctx):
    from agents.demo import AGENTS

    docs_agent = next(agent for agent in AGENTS if agent.id == "demo-docs")
    docs_agent = docs_agent.with_options(model=get_model("offline:demo"))  # whatever key the environment has
    run = docs_agent.start_run("How does a schedule avoid firing twice?", make_ctx())
    drain(run)

    assert run.output["content"].startswith('(offline demo) From the knowledge base (')
    assert run.output["references"][0]["references"][0]["name"] == "Schedules"


def test_a_retry_from_before_the_search_drops_its_references_and_one_after_keeps_them(make_ctx):
    agent = Agent(id="assistant", knowledge=docs())
    run = agent.start_run("What is kept in order?", make_ctx())
    drain(run)
    out = run.output
    tool_message = next(i for i, m in enumerate(out["messages"]) if m["role"] == "tool")

    before = agent.branch_run(out, make_ctx(run_id="run-2"), keep=tool_message - 1, fork=True, input="And the jobs?")
    assert before.state.references is None
    after = agent.branch_run(out, make_ctx(run_id="run-3"), keep=tool_message + 1, fork=True)
    assert after.state.references == out["references"]


def test_a_retry_keeps_the_references_added_to_the_message_it_keeps(make_ctx):
    agent = Agent(id="assistant", knowledge=docs(), search_knowledge=False, add_knowledge_to_context=True)
    run = agent.start_run("Where are runs stored?", make_ctx())
    drain(run)
    out = run.output
    user = next(i for i, m in enumerate(out["messages"]) if m["role"] == "user")

    assert agent.branch_run(out, make_ctx(run_id="run-2"), keep=user + 1, fork=False).state.references == out["references"]
    assert agent.branch_run(out, make_ctx(run_id="run-3"), keep=user, fork=True, input="Other").state.references is None
