"""An agent's draft in the admin takes model options its provider has (checked, with the
provider's own message when not) and the compression flag; publishing makes them what runs."""
from __future__ import annotations

import pytest
from django.urls import reverse

from agents.models import AgentDefinition
from agents.registry import agent_get
from agents.services.definitions import publish_draft

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("op", "op@example.com", "pw"))
    return client


def _add_agent(operator_client, agent_id: str, **draft: str):
    page = operator_client.get(reverse("admin:agents_agentdefinition_add"))
    data = {"agent_id": agent_id, "name": agent_id.title(), "description": "", "is_active": "on"}
    for formset in page.context["inline_admin_formsets"]:
        management = formset.formset.management_form
        data.update({f"{management.prefix}-{name}": value for name, value in management.initial.items()})
    prefix = next(f.formset.prefix for f in page.context["inline_admin_formsets"] if f.formset.max_num == 1)
    fields = {"instructions": "", "num_history_runs": "3", "num_past_sessions_to_search": "2", "fallback_models": "[]", **draft}
    data.update({f"{prefix}-0-{name}": value for name, value in fields.items()})
    return operator_client.post(reverse("admin:agents_agentdefinition_add"), data)


def test_a_draft_saves_its_model_options_and_compression_and_they_run_once_published(operator_client) -> None:
    response = _add_agent(
        operator_client, "thinker", model="anthropic:claude-sonnet-4-5",
        model_options='{"thinking_budget": 2048, "max_tokens": 8000}', compress_tool_results="on",
    )
    assert response.status_code == 302
    definition = AgentDefinition.objects.get(agent_id="thinker")
    publish_draft(definition)
    agent = agent_get("thinker").build("alice")
    assert agent.model.options == {"thinking": {"type": "enabled", "budget_tokens": 2048}} and agent.model.max_tokens == 8000
    assert agent.compress_tool_results is True


@pytest.mark.parametrize(
    ("model", "options", "message"),
    [
        ("anthropic:claude-sonnet-4-5", '{"seed": 3}', "anthropic models do not take seed"),
        ("openai:gpt-5", '{"api_key": "sk-live"}', "openai models do not take api_key"),
        ("openai:gpt-5", '{"top_p": 7}', "top_p must be a number from 0 to 1"),
    ],
)
def test_a_draft_with_options_its_provider_does_not_take_is_refused(operator_client, model, options, message) -> None:
    response = _add_agent(operator_client, "wrong", model=model, model_options=options)
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not AgentDefinition.objects.filter(agent_id="wrong").exists()
