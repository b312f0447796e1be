"""An agent's draft in the admin picks post-hooks out of those the code modules offer
(POST_HOOKS), as it picks guardrails; publishing makes them what runs."""
from __future__ import annotations

import pytest
from django.urls import reverse

from agents.models import AgentDefinition
from agents.registry import agent_get
from agents.services.definitions import publish_draft
from tests.admin.test_model_options_admin import _add_agent

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator_client(client, django_user_model, settings):
    settings.AGENT_MODULES = [*settings.AGENT_MODULES, "tests.api.hooked_agents"]
    client.force_login(django_user_model.objects.create_superuser("op", "op@example.com", "pw"))
    return client


def test_the_draft_offers_the_modules_post_hooks_and_they_run_once_published(operator_client) -> None:
    page = operator_client.get(reverse("admin:agents_agentdefinition_add")).content.decode()
    assert 'value="sign"' in page and "audit (in the background)" in page
    response = _add_agent(operator_client, "signer", model="offline:demo", post_hooks=["sign", "audit"])
    assert response.status_code == 302
    publish_draft(AgentDefinition.objects.get(agent_id="signer"))
    agent = agent_get("signer").build("alice")
    assert [hook.__name__ for hook in agent.post_hooks] == ["sign", "audit"]

