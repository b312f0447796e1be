"""Human in the loop: pause, then continue from the stored RunOutput dict (as after a restart)."""
from __future__ import annotations

import json
from unittest.mock import ANY

import pytest

from engine import Agent, InvalidContinuation, approval, tool
from tests.fakes.openai_server import Call, Reply
from tests.engine.conftest import NOW
from tests.engine.helpers import common, drain, names, tool_execution

DELETED: list[str] = []


@tool(requires_confirmation=True)
def delete_file(path: str) -> str:
    """Delete a file.

    Args:
        path: The file to delete.
    """
    DELETED.append(path)
    return f"deleted {path}"


@tool(requires_user_input=True, user_input_fields=["to"])
def send_email(subject: str, to: str) -> str:
    """Send an email.

    Args:
        subject: The subject line.
        to: Who receives it.
    """
    return f"sent {subject!r} to {to}"


@tool(external_execution=True)
def run_shell(command: str) -> str:
    raise AssertionError("executed by the client, never here")


@tool
def add(a: int, b: int) -> int:
    return a + b


@pytest.fixture(autouse=True)
def _reset() -> None:
    DELETED.clear()


def hitl_agent(**options) -> Agent:
    # A fresh Agent per call: continuing must not depend on the instance that paused.
    return Agent(id="assistant", name="Assistant", tools=[delete_file, send_email, run_shell, add], **options)


def stored(output: dict) -> dict:
    """What a database gives back: a JSON round trip."""
    return json.loads(json.dumps(output))


def pause(make_ctx, message: str, **options) -> dict:
    run = hitl_agent(**options).start_run(message, make_ctx())
    drain(run)
    assert run.status == "PAUSED"
    return stored(run.output)


def test_confirmation_tool_pauses_the_run_before_executing(make_ctx):
    run = hitl_agent().start_run('Please delete the file\n/call delete_file {"path": "notes/x.txt"}', make_ctx())
    events = drain(run)

    paused_tool = tool_execution(tool_call_id=ANY, tool_name="delete_file", tool_args={"path": "notes/x.txt"}, requires_confirmation=True)
    assert names(events) == ["RunStarted", "ModelRequestStarted", "RunContent", "ModelRequestCompleted", "RunContentCompleted", "RunPaused"]
    assert events[-1] == common(
        "RunPaused",
        tools=[paused_tool],
        content="I have tools to execute, but I need confirmation.",
        requirements=[{"id": ANY, "created_at": "2026-11-30T09:42:53.000000+00:00", "tool_execution": paused_tool}],
    )
    output = run.output
    assert output["status"] == "PAUSED"
    assert output["tools"] == [paused_tool]
    assert output["requirements"] == events[-1]["requirements"]
    assert [m["role"] for m in output["messages"]] == ["user", "assistant"]
    assert output["messages"][1]["tool_calls"][0]["function"] == {"name": "delete_file", "arguments": '{"path": "notes/x.txt"}'}
    assert DELETED == []


def test_confirmed_tool_runs_on_continue_after_a_restart(make_ctx):
    paused = pause(make_ctx, '/call delete_file {"path": "notes/x.txt"}')
    decisions = [{**t, "confirmed": True} for t in paused["tools"]]

    run = hitl_agent().continue_run(paused, decisions, ctx=make_ctx())
    events = drain(run)

    assert names(events) == [
        "RunContinued", "ToolCallStarted", "ToolCallCompleted", "ModelRequestStarted", "RunContent", "RunContent",
        "RunContent", "RunContent", "RunContent", "RunContent", "ModelRequestCompleted", "RunContentCompleted", "RunCompleted",
    ]
    assert events[0] == common("RunContinued")
    output = run.output
    assert (output["run_id"], output["status"]) == ("run-1", "COMPLETED")
    assert output["content"] == "Tool delete_file returned: deleted notes/x.txt"
    assert DELETED == ["notes/x.txt"]
    assert output["tools"] == [
        tool_execution(
            tool_call_id=paused["tools"][0]["tool_call_id"], tool_name="delete_file", tool_args={"path": "notes/x.txt"},
            tool_call_error=False, result="deleted notes/x.txt", metrics={"start_time": NOW, "end_time": NOW, "duration": 0.0},
            requires_confirmation=False, confirmed=True,
        )
    ]
    assert output["requirements"] == [{**paused["requirements"][0], "confirmation": True, "tool_execution": output["tools"][0]}]
    assert [m["role"] for m in output["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert output["metrics"]["input_tokens"] == paused["metrics"]["input_tokens"] + output["messages"][3]["metrics"]["input_tokens"]


def test_rejected_tool_is_not_run_and_the_model_gets_the_note(make_ctx, openai_server):
    openai_server.push(Reply(tool_calls=[Call("delete_file", {"path": "notes/x.txt"}, id="call_del")]), Reply(text="Tool said: nope"))
    paused = pause(make_ctx, "Please delete the file", model="openai:gpt-4o-mini")
    decisions = [{**paused["tools"][0], "confirmed": False, "confirmation_note": "nope"}]

    run = hitl_agent(model="openai:gpt-4o-mini").continue_run(paused, decisions, ctx=make_ctx())
    events = drain(run)

    assert DELETED == []
    assert "ToolCallStarted" not in names(events)
    assert openai_server.requests[-1].body["messages"][-2:] == [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_del", "type": "function", "function": {"name": "delete_file", "arguments": '{"path": "notes/x.txt"}'}}]},
        {"role": "tool", "tool_call_id": "call_del", "content": "Function call was rejected by the user: nope"},
    ]
    output = run.output
    assert output["content"] == "Tool said: nope"
    assert output["tools"][0] == tool_execution(
        tool_call_id="call_del", tool_name="delete_file", tool_args={"path": "notes/x.txt"}, tool_call_error=True,
        requires_confirmation=False, confirmed=False, confirmation_note="nope",
    )


def test_rejection_without_note_uses_the_plain_message(make_ctx):
    paused = pause(make_ctx, '/call delete_file {"path": "a"}')
    output = hitl_agent().continue_run(paused, [{**paused["tools"][0], "confirmed": False}], ctx=make_ctx())
    drain(output)
    assert output.output["content"] == "Tool delete_file was rejected by the user."
    assert output.output["tools"][0]["confirmation_note"] == "Tool call was rejected"


def test_user_input_fills_the_missing_arguments(make_ctx):
    paused = pause(make_ctx, '/call send_email {"subject": "Hi"}')
    schema = [
        {"name": "subject", "field_type": "str", "description": "The subject line.", "value": "Hi"},
        {"name": "to", "field_type": "str", "description": "Who receives it.", "value": None},
    ]
    assert paused["content"] == "I have tools to execute, but I need user input."
    assert paused["tools"][0]["requires_user_input"] is True
    assert paused["tools"][0]["user_input_schema"] == schema
    assert paused["requirements"][0]["user_input_schema"] == schema

    filled = [{**paused["tools"][0], "user_input_schema": [schema[0], {**schema[1], "value": "ada@example.com"}]}]
    run = hitl_agent().continue_run(paused, filled, ctx=make_ctx())
    drain(run)

    assert run.output["content"] == "Tool send_email returned: sent 'Hi' to ada@example.com"
    tool_dict = run.output["tools"][0]
    assert (tool_dict["tool_args"], tool_dict["requires_user_input"], tool_dict["answered"]) == (
        {"subject": "Hi", "to": "ada@example.com"}, False, True,
    )


def test_external_execution_uses_the_supplied_result(make_ctx):
    paused = pause(make_ctx, '/call run_shell {"command": "ls"}')
    assert paused["content"] == "I have tools to execute, but it needs external execution."

    run = hitl_agent().continue_run(paused, [{**paused["tools"][0], "result": "README.md"}], ctx=make_ctx())
    events = drain(run)

    assert run.output["content"] == "Tool run_shell returned: README.md"
    assert run.output["tools"][0]["external_execution_required"] is False
    assert run.output["tools"][0]["result"] == "README.md"
    assert run.output["requirements"][0]["external_execution_result"] == "README.md"
    assert "ToolCallStarted" not in names(events)


def test_requirements_can_carry_the_decisions(make_ctx):
    paused = pause(make_ctx, '/call delete_file {"path": "b"}')
    requirement = {**paused["requirements"][0], "confirmation": True}

    run = hitl_agent().continue_run(paused, ctx=make_ctx(), requirements=[requirement])
    drain(run)

    assert (run.status, DELETED) == ("COMPLETED", ["b"])


def test_ordinary_tools_in_the_same_turn_run_before_the_pause(make_ctx):
    paused = pause(make_ctx, '/call add {"a": 2, "b": 3}\n/call delete_file {"path": "c"}')

    assert [(t["tool_name"], t["result"]) for t in paused["tools"]] == [("add", "5"), ("delete_file", None)]
    assert len(paused["requirements"]) == 1
    run = hitl_agent().continue_run(paused, [{**paused["tools"][1], "confirmed": True}], ctx=make_ctx())
    drain(run)
    assert run.output["content"] == "Tool add returned: 5\nTool delete_file returned: deleted c"


def test_a_client_cannot_rewrite_the_arguments_it_approves(make_ctx):
    paused = pause(make_ctx, '/call delete_file {"path": "harmless.txt"}')
    forged = [{**paused["tools"][0], "confirmed": True, "tool_args": {"path": "/etc/passwd"}}]

    drain(hitl_agent().continue_run(paused, forged, ctx=make_ctx()))

    assert DELETED == ["harmless.txt"]


@pytest.mark.parametrize(
    ("decisions", "message"),
    [
        (lambda t: [{**t, "tool_call_id": "call_nope", "confirmed": True}], "Unknown tool_call_id call_nope"),
        (lambda t: [], "No decision for paused tool call"),
        (lambda t: [t], "needs a decision: set confirmed to true or false"),
        (lambda t: [{**t, "confirmed": "yes"}], "needs a decision"),
        (lambda t: [{"confirmed": True}], "must be a ToolExecution object with a tool_call_id"),
    ],
)
def test_invalid_decisions_are_rejected_before_anything_runs(make_ctx, decisions, message):
    paused = pause(make_ctx, '/call delete_file {"path": "d"}')
    with pytest.raises(InvalidContinuation, match=message):
        hitl_agent().continue_run(paused, decisions(paused["tools"][0]), ctx=make_ctx())
    assert DELETED == []


def test_missing_user_input_is_rejected(make_ctx):
    paused = pause(make_ctx, '/call send_email {"subject": "Hi"}')
    with pytest.raises(InvalidContinuation, match="needs user input for: to"):
        hitl_agent().continue_run(paused, paused["tools"], ctx=make_ctx())


def test_missing_external_result_is_rejected(make_ctx):
    paused = pause(make_ctx, '/call run_shell {"command": "ls"}')
    with pytest.raises(InvalidContinuation, match="supply its result"):
        hitl_agent().continue_run(paused, paused["tools"], ctx=make_ctx())


def test_only_paused_runs_of_this_agent_can_continue(make_ctx):
    completed = hitl_agent().run("hello", make_ctx())
    with pytest.raises(InvalidContinuation, match="is not paused"):
        hitl_agent().continue_run(completed, [], ctx=make_ctx())
    paused = pause(make_ctx, '/call delete_file {"path": "e"}')
    other = Agent(id="other", tools=[delete_file])
    with pytest.raises(InvalidContinuation, match="belongs to agent assistant"):
        other.continue_run(paused, [{**paused["tools"][0], "confirmed": True}], ctx=make_ctx())
    assert issubclass(InvalidContinuation, ValueError)


@pytest.mark.parametrize("message", ['/call send_email {"subject": "Hi"}', '/call run_shell {"command": "ls"}'])
def test_a_user_input_or_external_call_can_be_rejected_too(make_ctx, message):
    paused = pause(make_ctx, message)
    run = hitl_agent().continue_run(paused, [{**paused["tools"][0], "confirmed": False, "confirmation_note": "no"}], ctx=make_ctx())
    drain(run)
    te = run.output["tools"][0]
    assert (run.output["status"], te["confirmed"], te["confirmation_note"], te["result"]) == ("COMPLETED", False, "no", None)
    assert not (te["requires_user_input"] or te["external_execution_required"])
    assert run.output["content"].endswith("was rejected by the user: no")


def test_approval_calls_of_one_pause_share_an_id_and_audited_ones_have_their_own(make_ctx):
    @approval
    @tool
    def pay(amount: int) -> str:
        return str(amount)

    @approval(type="audit")
    @tool(requires_confirmation=True)
    def erase(name: str) -> str:
        return name

    agent = Agent(id="assistant", name="Assistant", tools=[pay, erase])
    run = agent.start_run('/call pay {"amount": 1}\n/call pay {"amount": 2}\n/call erase {"name": "x"}', make_ctx())
    events = drain(run)
    first, second, audited = run.output["tools"]
    assert first["approval_id"] == second["approval_id"] != audited["approval_id"]
    assert [te["approval_type"] for te in (first, second, audited)] == ["required", "required", "audit"]
    assert [req["tool_execution"]["approval_id"] for req in run.output["requirements"]] == [first["approval_id"]] * 2 + [audited["approval_id"]]
    (paused_event,) = [event for event in events if event["event"] == "RunPaused"]
    assert [te["approval_id"] for te in paused_event["tools"]] == [te["approval_id"] for te in run.output["tools"]]
