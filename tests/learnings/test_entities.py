"""Entity memory's get and delete: under namespace="user" the user id is part of the key."""
from __future__ import annotations

import pytest

from learnings.models import Learning
from learnings.selectors import entity_get
from learnings.services import entity_delete, learning_create

pytestmark = pytest.mark.django_db


def record(user_id: str | None, namespace: str, fact: str) -> Learning:
    return learning_create(owner_id=user_id, fields={
        "learning_type": "entity_memory", "namespace": namespace, "entity_id": "acme", "entity_type": "company", "content": {"facts": [fact]},
    })


def test_get_and_delete_under_the_user_namespace_require_the_user_id() -> None:
    record("alice", "user", "alice's")
    record("bob", "user", "bob's")
    with pytest.raises(ValueError):
        entity_get(user_id=None, namespace="user", entity_type="company", entity_id="acme")
    with pytest.raises(ValueError):
        entity_delete(user_id=None, namespace="user", entity_type="company", entity_id="acme")
    assert entity_get(user_id="bob", namespace="user", entity_type="company", entity_id="acme").content == {"facts": ["bob's"]}
    assert entity_delete(user_id="alice", namespace="user", entity_type="company", entity_id="acme") is True
    assert entity_get(user_id="alice", namespace="user", entity_type="company", entity_id="acme") is None
    assert entity_get(user_id="bob", namespace="user", entity_type="company", entity_id="acme").content == {"facts": ["bob's"]}


def test_global_entities_are_one_row_by_their_key() -> None:
    record(None, "global", "shared")
    assert entity_get(user_id=None, namespace="global", entity_type="company", entity_id="acme").content == {"facts": ["shared"]}
    assert entity_delete(user_id=None, namespace="global", entity_type="company", entity_id="acme") is True
    assert not Learning.all_users.exists()
