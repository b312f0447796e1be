"""Quick prompts written in the admin: checked against the components that exist, and served in
/config's chat.quick_prompts after the code's."""
from __future__ import annotations

import pytest
from django.urls import reverse

from agents.models import QuickPrompt

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("op", "op@example.com", "pw"))
    return client


def test_an_operator_adds_a_quick_prompt_and_the_config_offers_it(operator_client) -> None:
    add = reverse("admin:agents_quickprompt_add")
    refused = operator_client.post(add, {"component_type": "workflow", "component_id": "ghost", "prompt": "Hi", "position": "0"})
    assert refused.status_code == 200
    assert refused.context["adminform"].form.errors == {"component_id": ["No workflow 'ghost', in code or in the admin."]}
    saved = operator_client.post(add, {"component_type": "workflow", "component_id": "draft-flow", "prompt": "Two drafts of a haiku", "position": "0"})
    assert saved.status_code == 302
    assert list(QuickPrompt.objects.values_list("component_id", "prompt")) == [("draft-flow", "Two drafts of a haiku")]
    listing = operator_client.get(reverse("admin:agents_quickprompt_changelist"))
    assert "Two drafts of a haiku" in listing.content.decode()
    assert operator_client.get("/config").json()["chat"]["quick_prompts"]["draft-flow"] == ["Two drafts of a haiku"]
