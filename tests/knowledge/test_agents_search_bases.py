"""Agents searching real bases end to end: documents uploaded over the API, ingested by the job,
found by an admin-defined agent's search_knowledge_base tool as the run's user sees them, and
listed by /config."""
from __future__ import annotations

import json

import pytest
from django.conf import settings

from agents.services.definitions import definition_create
from tests.knowledge.conftest import ingest
from tests.security.conftest import auth, jwt_server, token  # noqa: F401 (jwt_server: a fixture)

pytestmark = pytest.mark.django_db(transaction=True)

SECRET_NOTE = "Alice's boat is moored at pier nine, berth fourteen, under a blue tarpaulin."
SHARED_NOTE = "The office kettle is descaled every Friday with citric acid."


def _upload(client, user: str, text: str) -> str:
    response = client.post("/knowledge/content", {"text_content": text}, **auth(token(user)))
    assert response.status_code == 202, response.content
    return response.json()["id"]


def _ask(client, user: str, agent_id: str, message: str) -> dict:
    response = client.post(f"/agents/{agent_id}/runs", {"message": message, "stream": "false"}, **auth(token(user)))
    assert response.status_code == 200, response.content
    return response.json()


def _found(body: dict) -> set[str]:
    return {hit["content_id"] for group in body.get("references") or [] for hit in group["references"]}


def test_an_admin_agent_finds_its_users_documents_and_never_anothers(client, jwt_server):
    from knowledge.services import base_get_or_create, content_insert

    base = base_get_or_create(name=settings.KNOWLEDGE_DEFAULT_BASE)
    shared = content_insert(user_id=None, base_id=base.pk, source_type="text", text=SHARED_NOTE).content.pk
    secret = _upload(client, "alice", SECRET_NOTE)
    assert ingest() == ["COMPLETED", "COMPLETED"]
    definition_create(agent_id="docs-agent", name="Docs Agent", knowledge=[settings.KNOWLEDGE_DEFAULT_BASE])

    alice = _ask(client, "alice", "docs-agent", "Where is the boat moored?")
    assert alice["status"] == "COMPLETED" and secret in _found(alice)
    assert "pier nine" in json.dumps(alice["references"])

    bob = _ask(client, "bob", "docs-agent", "Where is the boat moored?")
    assert secret not in _found(bob) and "pier nine" not in json.dumps(bob)
    kettle = _ask(client, "bob", "docs-agent", "When is the kettle descaled?")
    assert shared in _found(kettle)


def test_config_lists_the_shared_bases_by_id(client, jwt_server):
    config = client.get("/config", **auth(token("alice", ["config:read", "knowledge:read"]))).json()
    instances = config["knowledge"]["knowledge_instances"]
    default = next(item for item in instances if item["name"] == settings.KNOWLEDGE_DEFAULT_BASE)
    listed = client.get("/knowledge/content", {"knowledge_id": default["id"]}, **auth(token("alice")))
    assert listed.status_code == 200
