"""Database agents: editing a draft never changes the live agent until it is published."""
from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.urls import reverse

from agents.models import AgentDefinition, Stage
from agents.registry import agent_get, agent_list, agent_version_get
from agents.services.definitions import definition_create, draft_for, publish_draft

pytestmark = pytest.mark.django_db


def make_definition(**fields) -> AgentDefinition:
    fields.setdefault("model", "offline:demo")
    fields.setdefault("instructions", "Be brief.")
    fields.setdefault("tools", ["calculator"])
    return definition_create(agent_id="support", name="Support", **fields)


def test_a_published_database_agent_is_listed_after_the_code_agents() -> None:
    make_definition()
    entries = agent_list()
    assert [entry.agent_id for entry in entries] == ["assistant", "hitl-agent", "openai-agent", "support"]
    support = entries[-1]
    assert (support.source, support.version, support.stage) == ("db", 1, "published")
    agent = support.build("alice")
    assert agent.instructions == "Be brief." and "add" in agent.functions


def test_editing_the_draft_does_not_change_the_live_agent_until_published() -> None:
    definition = make_definition()
    draft = draft_for(definition)
    assert (draft.version, draft.stage) == (2, Stage.DRAFT)
    draft.instructions = "Be thorough."
    draft.model = "openai:gpt-4o-mini"
    draft.save()

    live = agent_get("support")
    assert live is not None and live.version == 1 and live.build(None).instructions == "Be brief."
    assert agent_get("support", version=2) is None  # a draft is not found, as a missing version
    pinned = agent_version_get("support", version=2)
    assert pinned is not None and pinned.build(None).instructions == "Be thorough."

    published = publish_draft(definition)
    assert published is not None and published.version == 2
    live = agent_get("support")
    assert live.version == 2 and live.build(None).model.id == "gpt-4o-mini"
    assert list(definition.versions.order_by("version").values_list("version", "stage")) == [(1, "published"), (2, "published"), (3, "draft")]


def test_inactive_agents_are_hidden() -> None:
    definition = make_definition()
    AgentDefinition.objects.filter(pk=definition.pk).update(is_active=False)
    assert agent_get("support") is None


def test_bad_model_strings_and_unknown_toolkits_are_refused() -> None:
    with pytest.raises(ValidationError, match="provider:model_id"):
        make_definition(model="gpt-4o")
    with pytest.raises(ValidationError, match="Unknown toolkits: teleport"):
        definition_create(agent_id="x", name="X", tools=["teleport"])


def test_workspace_folders_are_per_user(settings, tmp_path) -> None:
    settings.WORKSPACE_ROOT = str(tmp_path)
    definition_create(agent_id="files", name="Files", tools=["workspace"])
    alice = agent_get("files").build("alice")
    bob = agent_get("files").build("bob")
    alice_ws = next(tool for tool in alice.tools if getattr(tool, "id", "") == "workspace")
    bob_ws = next(tool for tool in bob.tools if getattr(tool, "id", "") == "workspace")
    assert alice_ws.root != bob_ws.root and alice_ws.root.parent == bob_ws.root.parent == tmp_path


def test_bootstrap_seeds_a_demo_agent_on_the_offline_model(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    call_command("bootstrap")
    demo = agent_get("demo")
    assert demo is not None and demo.version == 1
    agent = demo.build("alice")
    assert agent.model.id == "demo" and {"send_email", "book_meeting", "add"} <= set(agent.functions)
    call_command("bootstrap")
    assert AgentDefinition.objects.count() == 1


def test_publishing_from_the_admin(client, django_user_model) -> None:
    client.force_login(django_user_model.objects.create_superuser("op", password="pw"))
    definition = make_definition()
    draft = draft_for(definition)
    draft.instructions = "New rules."
    draft.save()
    url = reverse("admin:agents_agentdefinition_changelist")
    response = client.post(url, {"action": "publish_drafts", "_selected_action": [definition.pk]})
    assert response.status_code == 302
    assert agent_get("support").build(None).instructions == "New rules."
    page = client.get(reverse("admin:agents_agentdefinition_change", args=[definition.pk]))
    assert page.status_code == 200 and b"Draft (not live until published)" in page.content


def test_creating_an_agent_in_the_admin_starts_a_draft(client, django_user_model) -> None:
    client.force_login(django_user_model.objects.create_superuser("op", password="pw"))
    response = client.post(reverse("admin:agents_agentdefinition_add"), {
        "agent_id": "fresh", "name": "Fresh", "description": "", "is_active": "on", "created_at_0": "2026-11-30", "created_at_1": "10:00:00",
        "updated_at_0": "2026-11-30", "updated_at_1": "10:00:00",
        "versions-TOTAL_FORMS": "0", "versions-INITIAL_FORMS": "0", "versions-MIN_NUM_FORMS": "0", "versions-MAX_NUM_FORMS": "1",
        "versions-2-TOTAL_FORMS": "0", "versions-2-INITIAL_FORMS": "0", "versions-2-MIN_NUM_FORMS": "0", "versions-2-MAX_NUM_FORMS": "1000",
    })
    assert response.status_code == 302, response.content[:2000]
    definition = AgentDefinition.objects.get(agent_id="fresh")
    assert list(definition.versions.values_list("version", "stage")) == [(1, "draft")]
    assert agent_get("fresh") is None  # not live until published
