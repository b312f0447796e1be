"""Model options and tool-result compression end to end: an admin-defined agent's and team's
``model_options`` reach the provider's request body (the local OpenAI-compatible server), a
model's reasoning streams as its own events and is stored, and a compressing agent's long tool
result is shortened for the model while the run and its events keep it whole."""
from __future__ import annotations

import httpx
import pytest
from django.core.exceptions import ValidationError

from agents.models import AgentDefinition, AgentVersion, TeamDefinition
from agents.registry import agent_get
from tests.api.factory_agents import REPORT
from tests.api.sse import parse_sse
from tests.fakes._base import Reply

pytestmark = pytest.mark.django_db(transaction=True)

OPTIONS = {"reasoning_effort": "xhigh", "reasoning_summary": "auto", "service_tier": "flex", "verbosity": "low", "seed": 7, "top_p": 0.5, "stop": ["END"]}


@pytest.fixture(autouse=True)
def factory_module(settings):
    settings.AGENT_MODULES = [*settings.AGENT_MODULES, "tests.api.factory_agents"]


def published_agent(agent_id: str, **fields) -> AgentVersion:
    definition = AgentDefinition.objects.create(agent_id=agent_id, name=agent_id.title())
    return definition.versions.create(version=1, stage="published", **fields)


def test_an_admin_defined_agents_options_reach_the_provider(live_api: str, fake_openai) -> None:
    published_agent("thinker", model="openai:gpt-5", model_options=OPTIONS)
    fake_openai.push(Reply(text="Forty-two."))
    response = httpx.post(f"{live_api}/agents/thinker/runs", data={"message": "think", "stream": "false", "user_id": "alice"}, timeout=30)
    assert response.status_code == 200, response.text

    body = fake_openai.requests[0].body
    assert body["model"] == "gpt-5"
    assert {key: body[key] for key in ("reasoning_effort", "service_tier", "verbosity", "seed", "top_p", "stop")} == {
        "reasoning_effort": "xhigh", "service_tier": "flex", "verbosity": "low", "seed": 7, "top_p": 0.5, "stop": ["END"],
    }
    assert body["reasoning"] == {"summary": "auto"}


def test_a_models_reasoning_streams_as_its_own_events_and_is_stored(live_api: str, fake_openai) -> None:
    published_agent("reasoner", model="openai:o4-mini", model_options={"reasoning_effort": "high"})
    fake_openai.push(Reply(text="It is 4.", reasoning="Two plus two is four."))
    response = httpx.post(f"{live_api}/agents/reasoner/runs", data={"message": "2+2?", "user_id": "alice"}, timeout=30)
    frames = parse_sse(response.text)

    thinking = [data for name, data in frames if name == "RunContent" and data.get("reasoning_content")]
    assert "".join(data["reasoning_content"] for data in thinking) == "Two plus two is four."
    assert all(not data.get("content") for data in thinking)
    completed = next(data for name, data in frames if name == "RunCompleted")
    assert completed["reasoning_content"] == "Two plus two is four." and completed["content"] == "It is 4."
    stored = httpx.get(f"{live_api}/agents/reasoner/runs/{completed['run_id']}", params={"session_id": completed["session_id"], "user_id": "alice"}, timeout=30)
    assert stored.json()["reasoning_content"] == "Two plus two is four."


def test_an_admin_defined_team_leaders_options_reach_the_provider(live_api: str, fake_openai) -> None:
    definition = TeamDefinition.objects.create(team_id="opt-team", name="Opt team")
    definition.versions.create(version=1, stage="published", model="openai:gpt-5", model_options={"verbosity": "high"}, members=["assistant"])
    fake_openai.push(Reply(text="Answered by the leader."))
    response = httpx.post(f"{live_api}/teams/opt-team/runs", data={"message": "hi", "stream": "false", "user_id": "alice"}, timeout=30)
    assert response.status_code == 200, response.text
    assert fake_openai.requests[0].body["verbosity"] == "high"


def test_a_version_refuses_options_its_provider_does_not_take() -> None:
    version = AgentVersion(definition=AgentDefinition.objects.create(agent_id="bad", name="Bad"), version=1, model="anthropic:claude-sonnet-4-5", model_options={"seed": 1})
    with pytest.raises(ValidationError, match="anthropic models do not take seed"):
        version.clean()
    version.model_options = {"api_key": "sk-live"}
    with pytest.raises(ValidationError, match="do not take api_key"):
        version.clean()
    version.model_options = {"thinking_budget": 2048, "max_tokens": 8000}
    version.clean()


def test_a_compressing_agent_shortens_long_results_for_the_model_and_keeps_them_whole(live_api: str) -> None:
    response = httpx.post(f"{live_api}/agents/compressing/runs", data={"message": "/call report", "user_id": "alice"}, timeout=30)
    frames = parse_sse(response.text)
    names = [name for name, _ in frames]
    assert names.index("ToolCallCompleted") < names.index("CompressionStarted") < names.index("CompressionCompleted")
    assert next(data for name, data in frames if name == "ToolCallCompleted")["tool"]["result"] == REPORT
    completed = next(data for name, data in frames if name == "RunCompleted")
    assert "characters of this tool result left out" in completed["content"]

    stored = httpx.get(f"{live_api}/agents/compressing/runs/{completed['run_id']}", params={"session_id": completed["session_id"], "user_id": "alice"}, timeout=30).json()
    tool_message = next(m for m in stored["messages"] if m["role"] == "tool")
    assert tool_message["content"] == REPORT and len(tool_message["compressed_content"]) < 2100
    assert stored["tools"][0]["result"] == REPORT


def test_an_admin_defined_agent_compresses_when_its_version_says_so() -> None:
    published_agent("compact", model="offline:demo", compress_tool_results=True)
    assert agent_get("compact").build("alice").compress_tool_results is True
    published_agent("verbose", model="offline:demo")
    assert agent_get("verbose").build("alice").compress_tool_results is False
