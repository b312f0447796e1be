"""The OS's own configuration as AgentOS has it: its description and version (environment
variables) in /config and /info, and quick prompts per agent, team and workflow (code modules'
QUICK_PROMPTS, then the admin's QuickPrompt rows) in /config's chat.quick_prompts, for the
components the caller may see."""
from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from agents.models import QuickPrompt
from tests.security.conftest import auth, jwt_server, token  # noqa: F401 (jwt_server: a fixture)

pytestmark = pytest.mark.django_db


def test_the_version_and_description_come_from_the_environment(client, settings) -> None:
    assert "description" not in client.get("/config").json()
    settings.AGENT_OS_VERSION = "2.4.0"
    settings.AGENT_OS_DESCRIPTION = "Research assistants for the lab"
    assert client.get("/info").json()["os_version"] == "2.4.0"
    assert client.get("/config").json()["description"] == "Research assistants for the lab"


def test_quick_prompts_are_the_codes_then_the_admins_for_live_components(client) -> None:
    QuickPrompt.objects.create(component_type="agent", component_id="assistant", prompt="Tell me a fact", position=2)
    QuickPrompt.objects.create(component_type="agent", component_id="assistant", prompt="Say hello", position=1)  # the code has it
    QuickPrompt.objects.create(component_type="team", component_id="research-team", prompt="Research tea")
    assert client.get("/config").json()["chat"] == {"quick_prompts": {
        "assistant": ["Say hello", "What is 6 times 7?", "Tell me a fact"],
        "research-team": ["Research tea"],
        "review-flow": ["Ship it"],
    }}


def test_quick_prompts_follow_what_the_caller_may_see(client, jwt_server) -> None:
    only_assistant = auth(token("alice", ["config:read", "agents:assistant:read"]))
    assert client.get("/config", **only_assistant).json()["chat"] == {"quick_prompts": {"assistant": ["Say hello", "What is 6 times 7?"]}}
    no_agents = auth(token("alice", ["config:read", "workflows:read"]))
    assert client.get("/config", **no_agents).json()["chat"] == {"quick_prompts": {"review-flow": ["Ship it"]}}


def test_a_quick_prompt_names_a_component_that_exists() -> None:
    with pytest.raises(ValidationError) as caught:
        QuickPrompt(component_type="team", component_id="assistant", prompt="Hi").full_clean()
    assert caught.value.message_dict == {"component_id": ["No team 'assistant', in code or in the admin."]}
    with pytest.raises(ValidationError) as blank:
        QuickPrompt(component_type="agent", component_id="assistant", prompt="   ").full_clean()
    assert blank.value.message_dict["prompt"] == ["A prompt has some text."]
    QuickPrompt(component_type="workflow", component_id="draft-flow", prompt="Two drafts").full_clean()


@pytest.mark.django_db(transaction=True)
def test_agentos_client_reads_the_description_and_quick_prompts(live_api, settings) -> None:
    from agno.client.os import AgentOSClient

    settings.AGENT_OS_DESCRIPTION = "Lab OS"
    config = AgentOSClient(base_url=live_api, timeout=30).get_config()
    assert (config.description, config.chat.quick_prompts["review-flow"]) == ("Lab OS", ["Ship it"])
