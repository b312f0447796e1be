from __future__ import annotations

import pytest

from engine import Agent, CalculatorTools, get_model, tool
from engine.models.anthropic import Claude
from engine.models.offline import OfflineModel
from engine.models.openai import OpenAIChat


@pytest.mark.parametrize(
    ("v2_name", "value", "message"),
    [
        ("enable_user_memories", True, "enable_user_memories was removed in v3; use update_memory_on_run"),
        ("search_session_history", True, "search_session_history was removed in v3; use search_past_sessions"),
        ("num_history_sessions", 2, "num_history_sessions was removed in v3; use num_past_sessions_to_search"),
        ("num_past_session_runs", 2, "num_past_session_runs was removed in v3; use num_past_session_runs_in_search"),
        ("reasoning", True, "reasoning=True was removed in v3; set reasoning_model=<model>"),
    ],
)
def test_removed_v2_parameter_fails_naming_its_replacement(v2_name, value, message):
    with pytest.raises(TypeError) as excinfo:
        Agent(**{v2_name: value})
    assert str(excinfo.value) == message


def test_unknown_parameter_is_a_type_error():
    with pytest.raises(TypeError, match="unexpected keyword argument 'temperature'"):
        Agent(temperature=0.2)


def test_v3_names_are_accepted():
    agent = Agent(
        name="Research Assistant",
        update_memory_on_run=True,
        search_past_sessions=True,
        num_past_sessions_to_search=5,
        num_past_session_runs_in_search=2,
        reasoning_model="offline:thinker",
    )
    assert agent.id == "research-assistant"
    assert agent.add_memories_to_context is True
    assert agent.reasoning_model.to_dict() == {"name": "OfflineModel", "model": "thinker", "provider": "Offline"}


@pytest.mark.parametrize(
    ("spec", "cls", "model_dict"),
    [
        ("openai:gpt-4o-mini", OpenAIChat, {"name": "OpenAIChat", "model": "gpt-4o-mini", "provider": "OpenAI"}),
        ("anthropic:claude-test", Claude, {"name": "Claude", "model": "claude-test", "provider": "Anthropic"}),
        ("offline:demo", OfflineModel, {"name": "OfflineModel", "model": "demo", "provider": "Offline"}),
        ("OpenAI:gpt-4o", OpenAIChat, {"name": "OpenAIChat", "model": "gpt-4o", "provider": "OpenAI"}),
    ],
)
def test_get_model_builds_the_named_provider(spec, cls, model_dict):
    model = get_model(spec)
    assert isinstance(model, cls)
    assert model.to_dict() == model_dict


@pytest.mark.parametrize("spec", ["gpt-4o", "openai:", ":gpt-4o", "", "  :  "])
def test_malformed_model_string_is_a_clear_value_error(spec):
    with pytest.raises(ValueError, match="provider:model_id"):
        get_model(spec)


def test_unknown_provider_is_a_clear_value_error():
    with pytest.raises(ValueError, match="Unknown model provider 'mistral'.*known providers: openai, anthropic, offline"):
        get_model("mistral:large")


def test_duplicate_tool_names_are_refused():
    @tool(name="add")
    def my_add(a: int, b: int) -> int:
        return a + b

    with pytest.raises(ValueError, match="Two tools are named 'add'"):
        Agent(tools=[CalculatorTools(), my_add])
