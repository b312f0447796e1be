"""Pre- and post-hooks, background post-hooks, and the per-run token budget."""
from __future__ import annotations

import asyncio

import pytest

from engine import Agent, Team, tool
from engine.errors import OutputCheckError
from engine.hooks import hook, run_background_hooks
from tests.engine.helpers import common, drain, names


@tool
def add(a: int, b: int) -> int:
    return a + b


def test_pre_hooks_run_in_order_with_the_arguments_they_name_before_the_model(make_ctx):
    seen = []

    def shout(run_input):
        run_input.input_content = run_input.input_content.upper()

    def note(run_input, user_id, session_id, agent):
        seen.append((run_input.input_content, user_id, session_id, agent.id))

    run = Agent(id="assistant", name="Assistant", pre_hooks=[shout, note]).start_run("hello", make_ctx())
    events = drain(run)

    assert names(events)[:6] == ["RunStarted", "PreHookStarted", "PreHookCompleted", "PreHookStarted", "PreHookCompleted", "ModelRequestStarted"]
    assert events[2] == common("PreHookCompleted", pre_hook_name="shout", guardrail=False, run_input={"input_content": "HELLO"})
    assert seen == [("HELLO", "alice", "sess-1", "assistant")]
    assert run.output["content"].startswith("(offline demo) You said: HELLO")


def test_a_failing_hook_is_reported_and_the_run_goes_on(make_ctx):
    def broken():
        raise RuntimeError("no database")

    run = Agent(id="assistant", name="Assistant", pre_hooks=[broken], post_hooks=[broken]).start_run("hi", make_ctx())
    events = drain(run)

    assert events[2] == common("PreHookCompleted", pre_hook_name="broken", guardrail=False, error="RuntimeError: no database")
    assert [e.get("error") for e in events if e["event"] == "PostHookCompleted"] == ["RuntimeError: no database"]
    assert run.output["status"] == "COMPLETED"


def test_post_hooks_see_the_answer_and_may_change_it(make_ctx):
    seen = []

    async def sign(run_output):
        seen.append(run_output["status"])
        run_output["content"] += " -- checked"

    run = Agent(id="assistant", name="Assistant", post_hooks=[sign]).start_run("hi", make_ctx())
    events = drain(run)

    assert names(events)[-4:] == ["RunContentCompleted", "PostHookStarted", "PostHookCompleted", "RunCompleted"]
    assert events[-3] == common("PostHookStarted", post_hook_name="sign")
    assert seen == ["RUNNING"]
    assert run.output["content"].endswith("-- checked") and events[-1]["content"] == run.output["content"]


def test_an_output_check_refuses_the_answer(make_ctx):
    def no_secrets(run_output):
        if "secret" in run_output["content"]:
            raise OutputCheckError("The answer mentioned a secret.", additional_data={"word": "secret"})

    run = Agent(id="assistant", name="Assistant", post_hooks=[no_secrets]).start_run("the secret is 42", make_ctx())
    events = drain(run)

    assert events[-1] == common(
        "RunError", content="The answer mentioned a secret.", error_type="output_check_error", error_id="output_not_allowed",
        additional_data={"word": "secret"}, metrics=run.output["metrics"],
    )
    assert (run.output["status"], run.output["content"]) == ("ERROR", "The answer mentioned a secret.")


def test_background_post_hooks_are_left_to_the_caller_then_run_with_the_stored_output(make_ctx):
    calls = []

    def audit(run_output, user_id):
        calls.append((run_output["run_id"], run_output["status"], user_id))

    @hook(run_in_background=True)
    def notify(run_output):
        calls.append(("notify", run_output["content"]))

    def inline(run_output):
        calls.append(("inline",))

    agent = Agent(id="assistant", name="Assistant", post_hooks=[audit, notify, inline])
    run = agent.start_run("hi", make_ctx())
    events = drain(run)

    assert run.background_hooks == ["notify"]
    assert [e["post_hook_name"] for e in events if e["event"] == "PostHookStarted"] == ["audit", "inline"]
    calls.clear()

    everything = agent.with_options(run_hooks_in_background=True)
    run = everything.start_run("hi", make_ctx())
    events = drain(run)
    assert run.background_hooks == ["audit", "notify", "inline"] and calls == []
    assert not [e for e in events if e["event"].startswith("PostHook")]

    outcomes = asyncio.run(
        run_background_hooks(everything, ["audit", "notify", "gone"], run_output=run.output, user_id="alice", session_id="sess-1")
    )
    assert [(o.name, o.error) for o in outcomes] == [("audit", None), ("notify", None)]
    assert calls == [("run-1", "COMPLETED", "alice"), ("notify", run.output["content"])]


def test_hooks_are_checked_when_the_agent_is_built():
    def same(): ...

    with pytest.raises(ValueError, match="Two post_hooks are named 'same'"):
        Agent(post_hooks=[same, same])
    with pytest.raises(TypeError, match="pre_hooks are functions or guardrails"):
        Agent(pre_hooks=["pii"])


def test_team_post_hooks_see_the_team_answer(make_ctx):
    seen = []

    def record(run_output, team):
        seen.append((team.id, run_output["content"]))

    team = Team([Agent(id="helper", name="Helper")], id="crew", name="Crew", post_hooks=[record])
    run = team.start_run("hi", make_ctx())
    events = drain(run)

    assert "TeamPostHookCompleted" in names(events)
    assert seen == [("crew", run.output["content"])]


# ---- token budget -----------------------------------------------------------------------------


def test_a_run_over_its_token_budget_stops_before_the_next_model_call(make_ctx):
    run = Agent(id="assistant", name="Assistant", tools=[add], token_budget=5).start_run('/call add {"a": 2, "b": 3}', make_ctx())
    events = drain(run)

    spent = run.output["metrics"]["total_tokens"]
    assert names(events)[-3:] == ["ToolCallStarted", "ToolCallCompleted", "RunError"]
    assert names(events).count("ModelRequestStarted") == 1
    message = f"Token budget exhausted: this run used {spent} tokens of its budget of 5, and was stopped before calling the model again."
    assert events[-1] == common("RunError", content=message, error_type="token_budget_exceeded", metrics=run.output["metrics"])
    assert spent >= 5 and run.output["status"] == "ERROR"


def test_a_run_within_its_budget_completes(make_ctx):
    run = Agent(id="assistant", tools=[add], token_budget=10_000).start_run('/call add {"a": 2, "b": 3}', make_ctx())
    drain(run)
    assert run.output["status"] == "COMPLETED" and run.output["content"] == "Tool add returned: 5"


def test_token_budget_must_be_positive():
    with pytest.raises(ValueError, match="token_budget must be >= 1"):
        Agent(token_budget=0)
