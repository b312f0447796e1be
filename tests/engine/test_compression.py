"""``compress_tool_results``: a long tool result is shortened before it re-enters the model's
context (summarised by a model that can, compacted otherwise), while the run keeps it whole."""
from __future__ import annotations

import pytest

from engine import Agent, Team, get_model, tool
from engine.compression import compact
from tests.fakes.openai_server import Call, Failure, Reply

LONG = "".join(f"line {n}: the quarterly figure was {n * 7} units.\n" for n in range(400))  # ~17,000 characters


@tool
def report() -> str:
    """Fetch the long report."""
    return LONG


def _tool_messages(body):
    return [m for m in body["messages"] if m["role"] == "tool"]


def test_the_offline_model_gets_a_compaction_and_the_run_keeps_the_whole_result(make_ctx):
    agent = Agent(tools=[report], compress_tool_results=True, compress_tool_results_above=1000)
    run = agent.start_run("/call report", make_ctx())
    events = list(run)
    out = run.output

    names = [e["event"] for e in events]
    assert names.index("ToolCallCompleted") < names.index("CompressionStarted") < names.index("CompressionCompleted")
    completed = next(e for e in events if e["event"] == "CompressionCompleted")
    assert completed["tool_results_compressed"] == 1 and completed["original_size"] == len(LONG)
    assert completed["compressed_size"] < 1100
    # The model answered from the compaction: the head and the tail, and what was left out.
    assert "line 0:" in out["content"] and "line 399:" in out["content"] and "characters of this tool result left out" in out["content"]
    assert "line 200:" not in out["content"]
    # Stored whole: the tool message's content, the ToolExecution and the ToolCallCompleted event.
    tool_message = next(m for m in out["messages"] if m["role"] == "tool")
    assert tool_message["content"] == LONG and len(tool_message["compressed_content"]) < 1100
    assert out["tools"][0]["result"] == LONG
    assert next(e for e in events if e["event"] == "ToolCallCompleted")["tool"]["result"] == LONG


def test_short_results_and_agents_without_it_are_left_alone(make_ctx):
    names = [e["event"] for e in Agent(tools=[report]).start_run("/call report", make_ctx())]
    assert "CompressionStarted" not in names

    @tool
    def short() -> str:
        """A short answer."""
        return "42"

    out = Agent(tools=[short], compress_tool_results=True).run("/call short", make_ctx())
    assert "compressed_content" not in next(m for m in out["messages"] if m["role"] == "tool")


def test_many_tool_calls_keep_the_context_bounded(make_ctx):
    calls = "\n".join("/call report" for _ in range(6))
    agent = Agent(tools=[report], compress_tool_results=True, compress_tool_results_above=500)
    out = agent.run(calls, make_ctx())
    tool_messages = [m for m in out["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 6
    assert all(len(m["compressed_content"]) <= 600 for m in tool_messages)
    assert len(out["content"]) < 6 * 650  # six compactions, not six reports (~100,000 characters)


def test_a_model_that_can_summarise_is_asked_to_and_its_summary_goes_to_the_next_turn(openai_server, make_ctx):
    openai_server.push(
        Reply(tool_calls=[Call("report", {})], usage=(10, 2)),
        Reply(text="Figures: 0 to 2793 units over 400 lines.", usage=(4000, 9)),
        Reply(text="The report shows 400 lines of figures.", usage=(30, 8)),
    )
    agent = Agent(model="openai:gpt-4o-mini", tools=[report], compress_tool_results=True)
    out = agent.run("summarise the report", make_ctx())

    summary_request = openai_server.requests[1].body
    assert summary_request["messages"][0]["role"] == "system" and "compress the result of a tool call" in summary_request["messages"][0]["content"]
    assert summary_request["messages"][1]["content"] == f"Tool: report\n{LONG}"
    assert "tools" not in summary_request
    assert _tool_messages(openai_server.requests[2].body)[0]["content"] == "Figures: 0 to 2793 units over 400 lines."
    assert out["content"] == "The report shows 400 lines of figures."
    assert out["metrics"]["details"]["compression_model"][0]["input_tokens"] == 4000


def test_a_failed_summary_falls_back_to_the_compaction(openai_server, make_ctx):
    openai_server.push(Reply(tool_calls=[Call("report", {})]), Failure(400, "context too long"), Reply(text="done"))
    agent = Agent(model="openai:gpt-4o-mini", tools=[report], compress_tool_results=True)
    out = agent.run("go", make_ctx())

    assert out["status"] == "COMPLETED"
    assert _tool_messages(openai_server.requests[2].body)[0]["content"] == compact(LONG, 2000)


def test_a_separate_compression_model_does_the_summaries(openai_server, make_ctx):
    openai_server.push(Reply(text="short"))
    agent = Agent(tools=[report], compress_tool_results=True, compression_model=get_model("openai:gpt-4o-mini"))
    out = agent.run("/call report", make_ctx())
    assert openai_server.requests[0].body["model"] == "gpt-4o-mini"
    assert "Tool report returned: short" in out["content"]


def test_a_team_leader_compresses_its_own_tool_results(make_ctx):
    member = Agent(id="helper", name="Helper")
    team = Team([member], tools=[report], compress_tool_results=True, compress_tool_results_above=1000)
    names = [e["event"] for e in team.start_run("/call report", make_ctx())]
    assert "TeamCompressionStarted" in names and "TeamCompressionCompleted" in names


def test_the_limit_has_a_floor():
    with pytest.raises(ValueError, match="compress_tool_results_above"):
        Agent(compress_tool_results=True, compress_tool_results_above=10)
