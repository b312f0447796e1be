"""Authoring learning on a stored agent: the component API and the admin take ``enable_learning``
and ``learning_name``; turning learning on clears the legacy memory pair; the registry lists the
learning machines."""
from __future__ import annotations

import json

import pytest

from agents.models import AgentVersion
from agents.registry import agent_get
from engine.learning import DEFAULT_MACHINE
from learnings.machines import LEARNING_MACHINES
from tests.security.conftest import auth, jwt_server, token  # noqa: F401 (jwt_server: a fixture)

pytestmark = pytest.mark.django_db

ADMIN = auth(token("root", ["agent_os:admin"]))


def create(client, config: dict):
    body = {"name": "Learner", "component_id": "learner", "component_type": "agent", "stage": "published", "config": config}
    return client.post("/components", data=json.dumps(body), content_type="application/json", **ADMIN)


def test_the_component_api_turns_learning_on_and_clears_the_legacy_pair(client, jwt_server) -> None:
    response = create(client, {"enable_learning": True, "update_memory_on_run": True, "add_memories_to_context": True})
    assert response.status_code == 201, response.content
    version = AgentVersion.objects.get(definition__agent_id="learner", version=1)
    assert (version.enable_learning, version.update_memory_on_run, version.add_memories_to_context) == (True, False, False)
    assert agent_get("learner").build(None).learning == DEFAULT_MACHINE
    config = client.get("/components/learner/configs/1", **ADMIN).json()
    assert (config["config"]["enable_learning"], config["config"]["update_memory_on_run"]) == (True, False)


def test_a_named_machine_from_the_registry_or_a_400(client, jwt_server) -> None:
    assert create(client, {"learning_name": "entities"}).status_code == 201
    version = AgentVersion.objects.get(definition__agent_id="learner", version=1)
    assert (version.learning_name, version.update_memory_on_run) == ("entities", False)
    assert agent_get("learner").build(None).learning == LEARNING_MACHINES["entities"][0]
    refused = client.post(
        "/components", data=json.dumps({"name": "Other", "component_id": "other", "component_type": "agent", "config": {"learning_name": "nope"}}),
        content_type="application/json", **ADMIN,
    )
    assert refused.status_code == 400
    assert refused.json()["detail"].startswith("learning_name: Unknown learning machine 'nope'. Known: default, entities, full, memories.")


def test_setting_learning_off_leaves_the_legacy_pair_alone(client, jwt_server) -> None:
    assert create(client, {"enable_learning": False, "learning_name": "", "update_memory_on_run": True}).status_code == 201
    version = AgentVersion.objects.get(definition__agent_id="learner", version=1)
    assert (version.enable_learning, version.update_memory_on_run) == (False, True)


def test_the_registry_lists_the_learning_machines(client, jwt_server) -> None:
    body = client.get("/registry", {"resource_type": "learning"}, **ADMIN).json()
    assert [entry["name"] for entry in body["data"]] == list(LEARNING_MACHINES)
    assert body["data"][0]["metadata"] == {"referenced_as": "learning_name"}


@pytest.fixture
def operator_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("op", password="pw-for-tests"))
    return client


def test_the_admins_draft_form_turns_learning_on_and_clears_the_legacy_pair(operator_client) -> None:
    from django.urls import reverse

    from agents.models import AgentDefinition

    page = operator_client.get(reverse("admin:agents_agentdefinition_add"))
    prefix = next(f.formset.prefix for f in page.context["inline_admin_formsets"] if f.formset.max_num == 1)
    data = {"agent_id": "learner", "name": "Learner", "description": "", "is_active": "on"}
    for formset in page.context["inline_admin_formsets"]:
        management = formset.formset.management_form
        data.update({f"{management.prefix}-{name}": value for name, value in management.initial.items()})
    data.update({f"{prefix}-0-model": "offline:demo", f"{prefix}-0-num_history_runs": "3", f"{prefix}-0-num_past_sessions_to_search": "2",
                 f"{prefix}-0-fallback_models": "[]", f"{prefix}-0-update_memory_on_run": "on", f"{prefix}-0-add_memories_to_context": "on",
                 f"{prefix}-0-learning_name": "memories"})
    response = operator_client.post(reverse("admin:agents_agentdefinition_add"), data)
    assert response.status_code == 302, response.context and response.context["adminform"].form.errors
    (draft,) = AgentDefinition.objects.get(agent_id="learner").versions.all()
    assert (draft.learning_name, draft.update_memory_on_run, draft.add_memories_to_context) == ("memories", False, False)

    data.update({"agent_id": "other", "name": "Other", f"{prefix}-0-learning_name": "telepathy"})
    refused = operator_client.post(reverse("admin:agents_agentdefinition_add"), data)
    assert refused.status_code == 200 and not AgentDefinition.objects.filter(agent_id="other").exists()


def test_a_team_component_authors_learning_too(client, jwt_server) -> None:
    from agents.models import TeamVersion

    assert create(client, {"learning_name": "default"}).status_code == 201  # an agent, to be the member
    body = {"name": "Crew", "component_id": "crew", "component_type": "team", "stage": "published",
            "config": {"members": ["learner"], "enable_learning": True, "update_memory_on_run": True}}
    response = client.post("/components", data=json.dumps(body), content_type="application/json", **ADMIN)
    assert response.status_code == 201, response.content
    version = TeamVersion.objects.get(definition__team_id="crew", version=1)
    assert (version.enable_learning, version.update_memory_on_run) == (True, False)
