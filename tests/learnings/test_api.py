"""The /learnings family over HTTP, as AgentOS 3.x serves it (agno/os/routers/learnings).

``client`` is an open server's caller (sees and changes every record); with ``jwt_server`` a
bearer token is bound to its subject (user isolation) and needs the learnings scopes.
"""
from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from engine.learning import user_key_segment
from learnings.models import Learning
from tests.factories import make_learning
from tests.security.conftest import auth, jwt_server, token  # noqa: F401 (jwt_server: a fixture)

pytestmark = pytest.mark.django_db

LEARNING_SCOPES = ["learnings:read", "learnings:write", "learnings:delete"]
KEYS = [
    "learning_id", "learning_type", "namespace", "user_id", "agent_id", "team_id", "session_id",
    "entity_id", "entity_type", "content", "metadata", "created_at", "updated_at",
]


def post(client: Client, body: dict[str, Any], **headers: str) -> Any:
    return client.post("/learnings", body, content_type="application/json", **headers)


def as_user(sub: str, scopes: list[str] | None = None) -> dict[str, str]:
    return auth(token(sub, LEARNING_SCOPES if scopes is None else scopes))


def test_create_answers_201_with_the_whole_record_and_a_deterministic_id(client: Client) -> None:
    response = post(client, {"learning_type": "user_profile", "user_id": "alice", "content": {"name": "Ada"}, "metadata": {"source": "api"}})
    assert response.status_code == 201
    body = response.json()
    row = Learning.all_users.get(pk="user_profile_alice")
    stamp = int(row.created_at.timestamp())
    assert body == {
        "learning_id": "user_profile_alice", "learning_type": "user_profile", "namespace": None, "user_id": "alice",
        "agent_id": None, "team_id": None, "session_id": None, "entity_id": None, "entity_type": None,
        "content": {"name": "Ada"}, "metadata": {"source": "api"}, "created_at": stamp, "updated_at": stamp,
    }
    assert list(body) == KEYS
    again = post(client, {"learning_type": "user_profile", "user_id": "alice", "content": {"name": "Bob"}})
    assert again.status_code == 409
    assert again.json()["detail"].endswith("Use PATCH /learnings/user_profile_alice to update it.")


def test_identity_keyed_types_without_their_identity_are_422_and_others_get_a_uuid(client: Client) -> None:
    assert post(client, {"learning_type": "user_memory", "content": {}}).status_code == 422
    assert post(client, {"learning_type": "entity_memory", "content": {}, "entity_id": "acme"}).status_code == 422
    user_ns = post(client, {"learning_type": "entity_memory", "content": {}, "entity_id": "acme", "entity_type": "company", "namespace": "user"})
    assert user_ns.status_code == 422 and 'namespace="user"' in user_ns.json()["detail"]
    reserved = post(client, {"learning_type": "entity_memory", "content": {}, "entity_id": "a", "entity_type": "b", "namespace": "user_0123456789abcdef"})
    assert reserved.status_code == 422
    assert post(client, {"learning_type": "decision_log", "content": None}).status_code == 422
    decision = post(client, {"learning_type": "decision_log", "content": {"decision": "retry"}, "agent_id": "ops"})
    assert decision.status_code == 201 and len(decision.json()["learning_id"]) == 36


def test_entity_memory_defaults_to_the_global_namespace(client: Client) -> None:
    body = post(client, {"learning_type": "entity_memory", "content": {"facts": []}, "entity_id": "acme", "entity_type": "company"}).json()
    assert (body["learning_id"], body["namespace"]) == ("entity_global_company_acme", "global")


def test_two_users_recording_the_same_entity_under_the_user_namespace_never_share_a_row(client: Client) -> None:
    ids = []
    for user in ("alice", "bob"):
        response = post(client, {
            "learning_type": "entity_memory", "namespace": "user", "user_id": user,
            "entity_id": "acme", "entity_type": "company", "content": {"facts": [f"{user}'s fact"]},
        })
        assert response.status_code == 201
        ids.append(response.json()["learning_id"])
    assert ids == [f"entity_user_{user_key_segment('alice')}_company_acme", f"entity_user_{user_key_segment('bob')}_company_acme"]
    assert Learning.all_users.get(pk=ids[0]).content == {"facts": ["alice's fact"]}
    assert Learning.all_users.get(pk=ids[1]).content == {"facts": ["bob's fact"]}


def test_list_filters_paginates_and_sorts(client: Client) -> None:
    for index in range(3):
        make_learning("alice", learning_id=f"d{index}", agent_id="ops" if index else "chat")
    make_learning("bob", learning_id="b0", learning_type="user_profile")
    page = client.get("/learnings", {"user_id": "alice", "limit": 1, "page": 2, "sort_by": "created_at", "sort_order": "asc"}).json()
    assert [row["learning_id"] for row in page["data"]] == ["d1"]
    assert page["meta"] == {"page": 2, "limit": 1, "total_pages": 3, "total_count": 3, "search_time_ms": 0.0}
    by_agent = client.get("/learnings", {"agent_id": "ops", "sort_order": "asc", "sort_by": "created_at"}).json()
    assert [row["learning_id"] for row in by_agent["data"]] == ["d1", "d2"]
    by_type = client.get("/learnings", {"learning_type": "user_profile"}).json()
    assert [row["learning_id"] for row in by_type["data"]] == ["b0"]
    assert by_type["meta"]["limit"] == 100
    assert client.get("/learnings", {"page": 2}).status_code == 422
    assert client.get("/learnings", {"limit": 1001}).status_code == 422


@pytest.mark.parametrize("path", ["/learnings", "/learnings/users"])
def test_a_page_past_what_sql_can_count_is_empty_not_a_500(client: Client, path: str) -> None:
    # PostgreSQL refuses an OFFSET past bigint ("bigint out of range"): the fuzz found it.
    make_learning("alice", learning_id="d0")
    body = client.get(path, {"limit": 5, "page": 10**30}).json()
    assert body["data"] == [] and body["meta"]["total_count"] == 1


def test_patch_replaces_content_and_metadata_and_refuses_null_content(client: Client) -> None:
    make_learning("alice", learning_id="d1", content={"a": 1}, metadata={"m": 1})
    response = client.patch("/learnings/d1", {"content": {"b": 2}}, content_type="application/json")
    assert response.status_code == 200
    assert (response.json()["content"], response.json()["metadata"]) == ({"b": 2}, {"m": 1})
    null = client.patch("/learnings/d1", {"content": None}, content_type="application/json")
    assert null.status_code == 422
    assert client.patch("/learnings/nope", {"content": {}}, content_type="application/json").status_code == 404


def test_get_and_delete_by_id(client: Client) -> None:
    make_learning("alice", learning_id="d1")
    assert client.get("/learnings/d1").json()["learning_id"] == "d1"
    assert client.delete("/learnings/d1").status_code == 204
    assert client.get("/learnings/d1").status_code == 404


def test_users_lists_owners_with_their_last_update(client: Client) -> None:
    make_learning("alice", learning_id="a1")
    make_learning("bob", learning_id="b1")
    make_learning(None, learning_id="shared")
    Learning.all_users.filter(pk="a1").update(updated_at=Learning.all_users.get(pk="b1").updated_at.replace(year=2030))
    body = client.get("/learnings/users").json()
    assert [row["user_id"] for row in body["data"]] == ["alice", "bob"]
    assert body["data"][0]["last_learning_updated_at"] == int(Learning.all_users.get(pk="a1").updated_at.timestamp())
    assert body["meta"]["total_count"] == 2 and body["meta"]["limit"] == 20
    by_name = client.get("/learnings/users", {"sort_by": "user_id", "sort_order": "asc"}).json()
    assert [row["user_id"] for row in by_name["data"]] == ["alice", "bob"]


def test_delete_user_removes_only_that_users_records_of_the_type(client: Client) -> None:
    make_learning("alice", learning_id="a1")
    make_learning("alice", learning_id="a2", learning_type="user_profile")
    make_learning("bob", learning_id="b1")
    make_learning(None, learning_id="shared")
    assert client.delete("/learnings/users/alice?learning_type=decision_log").status_code == 204
    assert sorted(Learning.all_users.values_list("pk", flat=True)) == ["a2", "b1", "shared"]
    assert client.delete("/learnings/users/alice").status_code == 204
    assert sorted(Learning.all_users.values_list("pk", flat=True)) == ["b1", "shared"]


# --- user isolation (a bearer token bound to its subject) ----------------------------------------

def test_an_isolated_user_lists_their_own_and_the_shared_records_only(client: Client, jwt_server) -> None:
    make_learning("alice", learning_id="a1")
    make_learning("bob", learning_id="b1")
    make_learning(None, learning_id="shared")
    body = client.get("/learnings", **as_user("alice")).json()
    assert sorted(row["learning_id"] for row in body["data"]) == ["a1", "shared"]
    refused = client.get("/learnings", {"user_id": "bob"}, **as_user("alice"))
    assert refused.status_code == 403 and refused.json()["detail"] == "Cannot list learnings for another user"
    users = client.get("/learnings/users", **as_user("alice")).json()
    assert [row["user_id"] for row in users["data"]] == ["alice"]
    assert client.get("/learnings/users", {"user_id": "bob"}, **as_user("alice")).status_code == 403


def test_an_outsider_gets_404_for_another_users_record_and_403_changing_a_shared_one(client: Client, jwt_server) -> None:
    make_learning("bob", learning_id="b1", content={"secret": "bob's"})
    make_learning(None, learning_id="shared")
    for method in ("get", "patch", "delete"):
        response = getattr(client, method)("/learnings/b1", **({"data": {"content": {}}, "content_type": "application/json"} if method == "patch" else {}), **as_user("alice"))
        assert response.status_code == 404, method
        assert response.json() == {"detail": "Learning not found"}
    assert Learning.all_users.get(pk="b1").content == {"secret": "bob's"}
    assert client.get("/learnings/shared", **as_user("alice")).status_code == 200
    forbidden = client.patch("/learnings/shared", {"content": {}}, content_type="application/json", **as_user("alice"))
    assert forbidden.status_code == 403
    assert client.delete("/learnings/shared", **as_user("alice")).status_code == 403
    assert client.delete("/learnings/users/bob", **as_user("alice")).status_code == 403
    assert Learning.all_users.filter(pk__in=["b1", "shared"]).count() == 2


def test_an_isolated_user_creates_only_their_own_records(client: Client, jwt_server) -> None:
    refused = post(client, {"learning_type": "user_profile", "user_id": "bob", "content": {}}, **as_user("alice"))
    assert refused.status_code == 403 and refused.json()["detail"] == "Cannot create learnings for another user"
    pinned = post(client, {"learning_type": "decision_log", "content": {"d": 1}}, **as_user("alice"))
    assert pinned.status_code == 201 and pinned.json()["user_id"] == "alice"


@pytest.mark.parametrize(
    "method, path, scope",
    [
        ("get", "/learnings", "learnings:read"),
        ("get", "/learnings/users", "learnings:read"),
        ("get", "/learnings/a1", "learnings:read"),
        ("patch", "/learnings/a1", "learnings:write"),
        ("delete", "/learnings/a1", "learnings:delete"),
        ("delete", "/learnings/users/alice", "learnings:delete"),
    ],
)
def test_each_route_needs_its_scope(client: Client, jwt_server, method: str, path: str, scope: str) -> None:
    make_learning("alice", learning_id="a1")
    others = [s for s in LEARNING_SCOPES if s != scope]
    extra = {"data": {"content": {}}, "content_type": "application/json"} if method == "patch" else {}
    refused = getattr(client, method)(path, **extra, **as_user("alice", others))
    assert refused.status_code == 403
    allowed = getattr(client, method)(path, **extra, **as_user("alice", [scope]))
    assert allowed.status_code in (200, 204)


def test_create_needs_the_write_scope(client: Client, jwt_server) -> None:
    body = {"learning_type": "decision_log", "content": {}}
    assert post(client, body, **as_user("alice", ["learnings:read", "learnings:delete"])).status_code == 403
    assert post(client, body, **as_user("alice", ["learnings:write"])).status_code == 201


# --- anonymous guests (ANONYMOUS_ACCESS=guests, make run's default) --------------------------------

def test_a_guest_acts_for_a_user_nobody_signs_in_as_and_never_for_an_account(client: Client, settings, django_user_model) -> None:
    settings.ANONYMOUS_ACCESS = "guests"
    django_user_model.objects.create_user("alice", password="pw-for-tests")
    make_learning("ada", learning_id="memories_ada", learning_type="user_memory", content={"memories": []})
    make_learning("alice", learning_id="memories_alice", learning_type="user_memory", content={"memories": []})
    listed = client.get("/learnings", {"user_id": "ada"}).json()
    assert [row["learning_id"] for row in listed["data"]] == ["memories_ada"]
    assert client.get("/learnings/memories_ada").status_code == 200
    assert client.patch("/learnings/memories_ada", {"content": {"memories": [{"id": "x", "content": "hi"}]}}, content_type="application/json").status_code == 200
    assert client.get("/learnings/memories_alice").status_code == 404
    assert client.delete("/learnings/memories_alice").status_code == 404
    assert client.get("/learnings", {"user_id": "alice"}).status_code == 403
    assert Learning.all_users.filter(pk="memories_alice").exists()
