"""The /memories family over HTTP: exact bodies, status codes, scoping, query counts, optimization.

``client`` is an open server's caller; ``alice``/``bob`` are logged-in browser users bound to
their own rows (user isolation).
"""
from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from sessions.models import UserMemory
from sessions.services import memory_merge_plan
from tests.factories import make_memory

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 30, 9, 45, 27, tzinfo=timezone.utc)
ISO_T0 = "2026-11-30T09:45:27Z"
MEMORY_KEYS = ["memory_id", "memory", "topics", "agent_id", "team_id", "user_id", "updated_at"]


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")



def memory(user_id: str | None, memory_id: str, text: str, *, topics: list[str] | None = None, at: datetime = T0, **fields: Any) -> UserMemory:
    """A memory with pinned timestamps, so whole bodies can be asserted."""
    make_memory(user_id, memory_id=memory_id, memory=text, topics=topics or [], **fields)
    UserMemory.all_users.filter(pk=memory_id).update(created_at=at, updated_at=at)
    return UserMemory.all_users.get(pk=memory_id)


def body_of(row: UserMemory) -> dict[str, Any]:
    return {
        "memory_id": row.memory_id,
        "memory": row.memory,
        "topics": row.topics,
        "agent_id": row.agent_id,
        "team_id": row.team_id,
        "user_id": row.user_id,
        "updated_at": iso(row.updated_at),
    }


def post(client: Client, url: str, body: Any) -> Any:
    return client.post(url, body, content_type="application/json")


def patch(client: Client, url: str, body: Any) -> Any:
    return client.patch(url, body, content_type="application/json")


# --- POST /memories -------------------------------------------------------------------------------

class TestCreateMemory:
    def test_creates_a_memory_and_answers_200_with_explicit_nulls(self, client: Client) -> None:
        response = post(client, "/memories", {"memory": "Alice likes tea", "user_id": "alice", "topics": ["drinks", "prefs"]})
        assert response.status_code == 200
        body = response.json()
        row = UserMemory.all_users.get(pk=body["memory_id"])
        assert body == {
            "memory_id": row.memory_id,
            "memory": "Alice likes tea",
            "topics": ["drinks", "prefs"],
            "agent_id": None,
            "team_id": None,
            "user_id": "alice",
            "updated_at": iso(row.updated_at),
        }
        assert list(body) == MEMORY_KEYS
        assert (row.user_id, row.topics_key) == ("alice", ",drinks,prefs,")

    def test_topics_default_to_an_empty_list(self, client: Client) -> None:
        assert post(client, "/memories", {"memory": "x", "user_id": "alice", "topics": None}).json()["topics"] == []

    def test_without_a_user_id_it_is_400(self, client: Client) -> None:
        response = post(client, "/memories", {"memory": "Orphan"})
        assert (response.status_code, response.json()) == (400, {"detail": "User ID is required"})
        assert not UserMemory.all_users.exists()

    def test_an_isolated_caller_always_owns_what_they_create(self, alice: Client) -> None:
        body = post(alice, "/memories", {"memory": "Mine", "user_id": "bob"}).json()
        assert body["user_id"] == "alice"
        assert UserMemory.all_users.get(pk=body["memory_id"]).user_id == "alice"

    def test_an_isolated_caller_needs_no_user_id(self, alice: Client) -> None:
        assert post(alice, "/memories", {"memory": "Mine"}).json()["user_id"] == "alice"

    @pytest.mark.parametrize(
        ("body", "error"),
        [
            ({"user_id": "a"}, {"type": "missing", "loc": ["body", "memory"], "msg": "Field required", "input": None}),
            ({"memory": "", "user_id": "a"}, {"type": "blank", "loc": ["body", "memory"], "msg": "String should have at least 1 character", "input": None}),
            ({"memory": "x" * 5001, "user_id": "a"}, {"type": "max_length", "loc": ["body", "memory"], "msg": "String should have at most 5000 characters", "input": None}),
            ({"memory": "x", "user_id": "a", "topics": "drinks"}, {"type": "not_a_list", "loc": ["body", "topics"], "msg": 'Expected a list of items but got type "str".', "input": None}),
        ],
    )
    def test_invalid_bodies_are_422(self, client: Client, body: dict[str, Any], error: dict[str, Any]) -> None:
        response = post(client, "/memories", body)
        assert (response.status_code, response.json()) == (422, {"detail": [error]})

    def test_a_missing_body_is_422(self, client: Client) -> None:
        response = client.generic("POST", "/memories")
        assert (response.status_code, response.json()) == (
            422,
            {"detail": [{"type": "missing", "loc": ["body"], "msg": "Field required", "input": None}]},
        )


# --- GET /memories --------------------------------------------------------------------------------

@pytest.fixture
def memories() -> dict[str, UserMemory]:
    return {
        "tea": memory("alice", "m-tea", "Alice likes tea", topics=["drinks", "prefs"], at=T0),
        "coffee": memory("alice", "m-coffee", "Alice hates COFFEE", topics=["drinks"], at=T0 + timedelta(seconds=1), agent_id="assistant"),
        "paris": memory("alice", "m-paris", "Alice lives in Paris", topics=["home"], at=T0 + timedelta(seconds=2), team_id="crew"),
        "bob": memory("bob", "m-bob", "Bob likes tea too", topics=["prefs"], at=T0 + timedelta(seconds=3)),
    }


class TestListMemories:
    def test_lists_memories_most_recently_updated_first(self, client: Client, memories: dict[str, UserMemory]) -> None:
        response = client.get("/memories")
        assert response.status_code == 200
        assert response.json() == {
            "data": [body_of(memories[key]) for key in ("bob", "paris", "coffee", "tea")],
            "meta": {"page": 1, "limit": 20, "total_pages": 1, "total_count": 4, "search_time_ms": 0.0},
        }

    @pytest.mark.parametrize(
        ("query", "expected"),
        [
            ("user_id=alice", ["m-paris", "m-coffee", "m-tea"]),
            ("agent_id=assistant", ["m-coffee"]),
            ("team_id=crew", ["m-paris"]),
            ("topics=drinks", ["m-coffee", "m-tea"]),
            ("topics=prefs,drinks", ["m-tea"]),
            ("topics=%20prefs%20,", ["m-bob", "m-tea"]),
            # Only the first topics parameter counts (the Agno client sends one per topic).
            ("topics=home&topics=drinks", ["m-paris"]),
            ("search_content=tea", ["m-bob", "m-tea"]),
            ("search_content=coffee", ["m-coffee"]),
            ("search_content=100%25", []),
            ("user_id=alice&topics=prefs&search_content=TEA", ["m-tea"]),
        ],
    )
    def test_filters(self, client: Client, memories: dict[str, UserMemory], query: str, expected: list[str]) -> None:
        body = client.get(f"/memories?{query}").json()
        assert [item["memory_id"] for item in body["data"]] == expected
        assert body["meta"]["total_count"] == len(expected)

    @pytest.mark.parametrize(
        ("query", "expected"),
        [
            ("sort_order=asc", ["m-tea", "m-coffee", "m-paris", "m-bob"]),
            ("sort_by=memory&sort_order=asc", ["m-coffee", "m-tea", "m-paris", "m-bob"]),
            ("sort_by=nonsense", ["m-bob", "m-paris", "m-coffee", "m-tea"]),
        ],
    )
    def test_sorting(self, client: Client, memories: dict[str, UserMemory], query: str, expected: list[str]) -> None:
        assert [item["memory_id"] for item in client.get(f"/memories?{query}").json()["data"]] == expected

    def test_pagination(self, client: Client, memories: dict[str, UserMemory]) -> None:
        assert client.get("/memories?limit=3&page=2").json() == {
            "data": [body_of(memories["tea"])],
            "meta": {"page": 2, "limit": 3, "total_pages": 2, "total_count": 4, "search_time_ms": 0.0},
        }

    @pytest.mark.parametrize("query", ["sort_order=sideways", "page=0&limit=1", "limit=-1"])
    def test_invalid_query_params_are_422(self, client: Client, query: str) -> None:
        response = client.get(f"/memories?{query}")
        assert response.status_code == 422
        assert response.json()["detail"][0]["loc"][0] == "query"

    @pytest.mark.parametrize("per_page", [1, 50])
    def test_runs_two_queries_whatever_the_page_size(self, client: Client, per_page: int) -> None:
        for index in range(60):
            make_memory("alice" if index % 2 else "bob", memory=f"fact {index}")
        with CaptureQueriesContext(connection) as queries:
            body = client.get(f"/memories?limit={per_page}&page=1&topics=prefs&search_content=fact").json()
        assert len(body["data"]) == per_page
        assert len(queries.captured_queries) == 2

    def test_isolated_users_see_only_their_own(self, alice: Client, memories: dict[str, UserMemory]) -> None:
        body = alice.get("/memories?user_id=bob").json()
        assert [item["memory_id"] for item in body["data"]] == ["m-paris", "m-coffee", "m-tea"]


# --- /memories/{id} -------------------------------------------------------------------------------

class TestMemoryDetail:
    def test_get(self, client: Client, memories: dict[str, UserMemory]) -> None:
        response = client.get("/memories/m-coffee")
        assert (response.status_code, response.json()) == (
            200,
            {
                "memory_id": "m-coffee",
                "memory": "Alice hates COFFEE",
                "topics": ["drinks"],
                "agent_id": "assistant",
                "team_id": None,
                "user_id": "alice",
                "updated_at": "2026-11-30T09:45:28Z",
            },
        )

    def test_get_missing_is_404(self, client: Client) -> None:
        response = client.get("/memories/nope")
        assert (response.status_code, response.json()) == (404, {"detail": "Memory with ID nope not found"})

    def test_outsider_gets_404(self, bob: Client, memories: dict[str, UserMemory]) -> None:
        response = bob.get("/memories/m-tea")
        assert (response.status_code, response.json()) == (404, {"detail": "Memory with ID m-tea not found"})
        assert bob.get("/memories/m-bob").status_code == 200

    def test_open_caller_filtering_on_another_user_gets_404(self, client: Client, memories: dict[str, UserMemory]) -> None:
        assert client.get("/memories/m-tea?user_id=bob").status_code == 404

    def test_patch_replaces_text_and_topics(self, client: Client, memories: dict[str, UserMemory]) -> None:
        response = patch(client, "/memories/m-coffee", {"memory": "Alice tolerates coffee", "user_id": "alice", "topics": ["drinks", "mood"]})
        row = UserMemory.all_users.get(pk="m-coffee")
        assert (response.status_code, response.json()) == (200, body_of(row))
        assert (row.memory, row.topics, row.topics_key, row.agent_id, row.user_id) == (
            "Alice tolerates coffee", ["drinks", "mood"], ",drinks,mood,", "assistant", "alice"
        )
        assert row.updated_at > T0

    def test_patch_without_topics_clears_them(self, client: Client, memories: dict[str, UserMemory]) -> None:
        assert patch(client, "/memories/m-tea", {"memory": "Alice likes green tea", "user_id": "alice"}).json()["topics"] == []
        assert client.get("/memories?topics=drinks").json()["data"][0]["memory_id"] == "m-coffee"

    def test_patch_never_moves_a_memory_to_another_owner(self, client: Client, memories: dict[str, UserMemory]) -> None:
        assert patch(client, "/memories/m-tea", {"memory": "changed", "user_id": "bob"}).json()["user_id"] == "alice"

    def test_patch_of_an_unknown_id_creates_it(self, client: Client) -> None:
        response = patch(client, "/memories/brand-new", {"memory": "New fact", "user_id": "carol", "topics": ["x"]})
        row = UserMemory.all_users.get(pk="brand-new")
        assert (response.status_code, response.json()) == (200, body_of(row))
        assert (row.user_id, row.memory, row.topics) == ("carol", "New fact", ["x"])

    def test_patch_without_a_user_id_is_400(self, client: Client, memories: dict[str, UserMemory]) -> None:
        response = patch(client, "/memories/m-tea", {"memory": "x"})
        assert (response.status_code, response.json()) == (400, {"detail": "User ID is required"})

    def test_isolated_patch_of_an_unknown_id_is_404(self, alice: Client) -> None:
        response = patch(alice, "/memories/brand-new", {"memory": "x"})
        assert (response.status_code, response.json()) == (404, {"detail": "Memory not found"})
        assert not UserMemory.all_users.filter(pk="brand-new").exists()

    def test_outsider_patch_is_404_and_changes_nothing(self, bob: Client, memories: dict[str, UserMemory]) -> None:
        response = patch(bob, "/memories/m-tea", {"memory": "Bob was here", "user_id": "bob"})
        assert (response.status_code, response.json()) == (404, {"detail": "Memory not found"})
        assert UserMemory.all_users.get(pk="m-tea").memory == "Alice likes tea"

    def test_isolated_patch_of_own_memory(self, alice: Client, memories: dict[str, UserMemory]) -> None:
        assert patch(alice, "/memories/m-tea", {"memory": "Alice likes oolong"}).json()["memory"] == "Alice likes oolong"

    def test_guest_patch_names_the_owner_in_the_body(self, client: Client, settings, memories: dict[str, UserMemory]) -> None:
        """`make run`'s default (ANONYMOUS_ACCESS=guests): AgentOSClient.update_memory sends the
        owner as the body's user_id, and the memory is updated, never another user's."""
        settings.ANONYMOUS_ACCESS = "guests"
        response = patch(client, "/memories/m-tea", {"memory": "Alice likes oolong", "user_id": "alice", "topics": ["drinks"]})
        assert (response.status_code, response.json()["memory"], response.json()["user_id"]) == (200, "Alice likes oolong", "alice")
        assert UserMemory.all_users.get(pk="m-tea").memory == "Alice likes oolong"
        response = patch(client, "/memories/m-tea", {"memory": "Bob was here", "user_id": "bob"})
        assert (response.status_code, response.json()) == (404, {"detail": "Memory not found"})
        assert UserMemory.all_users.get(pk="m-tea").memory == "Alice likes oolong"

    def test_delete(self, client: Client, memories: dict[str, UserMemory]) -> None:
        response = client.delete("/memories/m-tea")
        assert (response.status_code, response.content) == (204, b"")
        assert not UserMemory.all_users.filter(pk="m-tea").exists()
        assert client.delete("/memories/m-tea").status_code == 204

    def test_outsider_delete_changes_nothing(self, bob: Client, memories: dict[str, UserMemory]) -> None:
        assert bob.delete("/memories/m-tea").status_code == 204
        assert UserMemory.all_users.filter(pk="m-tea").exists()


class TestDeleteMemories:
    def test_deletes_the_listed_memories(self, client: Client, memories: dict[str, UserMemory]) -> None:
        response = client.delete("/memories", {"memory_ids": ["m-tea", "m-bob", "unknown"]}, content_type="application/json")
        assert response.status_code == 204
        assert sorted(UserMemory.all_users.values_list("pk", flat=True)) == ["m-coffee", "m-paris"]

    def test_user_id_limits_an_open_callers_deletion(self, client: Client, memories: dict[str, UserMemory]) -> None:
        client.delete("/memories", {"memory_ids": ["m-tea", "m-bob"], "user_id": "bob"}, content_type="application/json")
        assert sorted(UserMemory.all_users.values_list("pk", flat=True)) == ["m-coffee", "m-paris", "m-tea"]

    def test_an_isolated_caller_only_deletes_their_own(self, bob: Client, memories: dict[str, UserMemory]) -> None:
        bob.delete("/memories", {"memory_ids": ["m-tea", "m-bob"], "user_id": "alice"}, content_type="application/json")
        assert sorted(UserMemory.all_users.values_list("pk", flat=True)) == ["m-coffee", "m-paris", "m-tea"]

    @pytest.mark.parametrize("body", [None, {}, {"memory_ids": []}, {"memory_ids": "m-tea"}])
    def test_invalid_bodies_are_422(self, client: Client, memories: dict[str, UserMemory], body: Any) -> None:
        response = client.delete("/memories", body, content_type="application/json") if body is not None else client.delete("/memories")
        assert response.status_code == 422
        assert response.json()["detail"][0]["loc"][0] == "body"
        assert UserMemory.all_users.count() == 4


# --- /memory_topics and /user_memory_stats ---------------------------------------------------------

class TestTopicsAndStats:
    def test_topics_are_distinct_and_sorted(self, client: Client, memories: dict[str, UserMemory]) -> None:
        with CaptureQueriesContext(connection) as queries:
            response = client.get("/memory_topics")
        assert (response.status_code, response.json()) == (200, ["drinks", "home", "prefs"])
        assert len(queries.captured_queries) == 1

    def test_topics_are_scoped(self, client: Client, bob: Client, memories: dict[str, UserMemory]) -> None:
        assert client.get("/memory_topics?user_id=bob").json() == ["prefs"]
        assert bob.get("/memory_topics?user_id=alice").json() == ["prefs"]

    def test_stats_per_user_most_recently_active_first(self, client: Client, memories: dict[str, UserMemory]) -> None:
        memory(None, "m-shared", "Nobody's", at=T0 + timedelta(hours=1))
        assert client.get("/user_memory_stats").json() == {
            "data": [
                {"user_id": "bob", "total_memories": 1, "last_memory_updated_at": "2026-11-30T09:45:30Z"},
                {"user_id": "alice", "total_memories": 3, "last_memory_updated_at": "2026-11-30T09:45:29Z"},
            ],
            "meta": {"page": 1, "limit": 20, "total_pages": 1, "total_count": 2, "search_time_ms": 0.0},
        }

    def test_stats_pagination_and_filter(self, client: Client, memories: dict[str, UserMemory]) -> None:
        assert client.get("/user_memory_stats?limit=1&page=2").json() == {
            "data": [{"user_id": "alice", "total_memories": 3, "last_memory_updated_at": "2026-11-30T09:45:29Z"}],
            "meta": {"page": 2, "limit": 1, "total_pages": 2, "total_count": 2, "search_time_ms": 0.0},
        }
        assert [row["user_id"] for row in client.get("/user_memory_stats?user_id=alice").json()["data"]] == ["alice"]

    def test_isolated_users_see_only_their_own_stats(self, bob: Client, memories: dict[str, UserMemory]) -> None:
        assert bob.get("/user_memory_stats?user_id=alice").json()["data"] == [
            {"user_id": "bob", "total_memories": 1, "last_memory_updated_at": "2026-11-30T09:45:30Z"}
        ]

    @pytest.mark.parametrize("per_page", [1, 50])
    def test_stats_run_two_queries_whatever_the_page_size(self, client: Client, per_page: int) -> None:
        for index in range(60):
            make_memory(f"user-{index:02}")
            make_memory(f"user-{index:02}")
        with CaptureQueriesContext(connection) as queries:
            body = client.get(f"/user_memory_stats?limit={per_page}&page=1").json()
        assert len(body["data"]) == per_page
        assert body["meta"]["total_count"] == 60
        assert len(queries.captured_queries) == 2

    def test_stats_page_zero_is_422(self, client: Client) -> None:
        assert client.get("/user_memory_stats?page=0&limit=1").status_code == 422


# --- Optimization ---------------------------------------------------------------------------------

def _row(memory_id: str, text: str, topics: list[str], seconds: int, **fields: Any) -> UserMemory:
    moment = T0 + timedelta(seconds=seconds)
    return UserMemory(memory_id=memory_id, memory=text, topics=topics, user_id="alice", created_at=moment, updated_at=moment, **fields)


class TestMergePlan:
    NOW = T0 + timedelta(days=1)

    def plan(self, rows: list[UserMemory]) -> list[tuple[str, str, list[str], tuple[str, ...], bool]]:
        return [(m.memory_id, m.memory, m.topics, m.merged_ids, m.changed) for m in memory_merge_plan(rows, now=self.NOW)]

    def test_exact_duplicates_collapse_ignoring_case_spacing_and_final_punctuation(self) -> None:
        rows = [_row("a", "User likes tea", [], 0), _row("b", "user  LIKES tea.", ["drinks"], 1)]
        assert self.plan(rows) == [("a", "User likes tea", ["drinks"], ("a", "b"), True)]

    def test_a_memory_inside_another_is_folded_into_it(self) -> None:
        rows = [_row("a", "User likes tea", [], 0), _row("b", "User likes tea, especially oolong", [], 1)]
        assert self.plan(rows) == [("a", "User likes tea, especially oolong", [], ("a", "b"), True)]

    def test_containment_respects_word_boundaries(self) -> None:
        rows = [_row("a", "User likes tea", [], 0), _row("b", "User likes teapots", [], 1)]
        assert self.plan(rows) == [
            ("a", "User likes tea", [], ("a",), False),
            ("b", "User likes teapots", [], ("b",), False),
        ]

    def test_memories_sharing_a_topic_become_one_sentence_list(self) -> None:
        rows = [
            _row("a", "User likes tea", ["drinks"], 0),
            _row("b", "User lives in Paris", ["home"], 1),
            _row("c", "User hates coffee!", ["drinks", "Mood"], 2),
            _row("d", "User is often grumpy", ["mood"], 3),
        ]
        assert self.plan(rows) == [
            ("a", "User likes tea. User hates coffee! User is often grumpy.", ["drinks", "Mood"], ("a", "c", "d"), True),
            ("b", "User lives in Paris", ["home"], ("b",), False),
        ]

    def test_memories_without_topics_are_kept_apart(self) -> None:
        rows = [_row("a", "One fact", [], 0), _row("b", "Another fact", [], 1)]
        assert [m[0] for m in self.plan(rows)] == ["a", "b"]

    def test_no_word_of_any_memory_is_lost(self) -> None:
        texts = ["User likes tea", "user likes tea", "User likes tea with milk", "User owns a cat", "The cat is named Max", "User is 30"]
        rows = [_row(str(i), text, ["pets"] if "cat" in text else [], i) for i, text in enumerate(texts)]
        merged = " ".join(m.memory for m in memory_merge_plan(rows, now=self.NOW)).casefold()
        for text in texts:
            for word in text.casefold().split():
                assert word in merged

    def test_agent_and_team_survive_only_when_shared(self) -> None:
        rows = [_row("a", "A", ["t"], 0, agent_id="x", team_id="y"), _row("b", "B", ["t"], 1, agent_id="x", team_id="z")]
        (merged,) = memory_merge_plan(rows, now=self.NOW)
        assert (merged.agent_id, merged.team_id, merged.updated_at) == ("x", None, self.NOW)


@pytest.fixture
def alice_memories() -> None:
    memory("alice", "m1", "Alice likes tea", topics=["drinks"], at=T0)
    memory("alice", "m2", "alice likes tea.", topics=["prefs"], at=T0 + timedelta(seconds=1))
    memory("alice", "m3", "Alice hates coffee", topics=["drinks"], at=T0 + timedelta(seconds=2))
    memory("alice", "m4", "Alice lives in Paris", at=T0 + timedelta(seconds=3))
    memory("bob", "b1", "Bob likes tea", topics=["drinks"], at=T0)


class TestOptimizeMemories:
    def test_preview_does_not_write(self, client: Client, alice_memories: None) -> None:
        before = list(UserMemory.all_users.order_by("pk").values())
        response = post(client, "/optimize-memories", {"user_id": "alice", "apply": False})
        assert response.status_code == 200
        body = response.json()
        merged_at = body["memories"][0]["updated_at"]
        assert body == {
            "memories": [
                {"memory_id": "m1", "memory": "Alice likes tea. Alice hates coffee.", "topics": ["drinks", "prefs"],
                 "agent_id": None, "team_id": None, "user_id": "alice", "updated_at": merged_at},
                {"memory_id": "m4", "memory": "Alice lives in Paris", "topics": [],
                 "agent_id": None, "team_id": None, "user_id": "alice", "updated_at": "2026-11-30T09:45:30Z"},
            ],
            "memories_before": 4,
            "memories_after": 2,
            "tokens_before": 13,
            "tokens_after": 10,
            "tokens_saved": 3,
            "reduction_percentage": 23.08,
        }
        assert merged_at > ISO_T0
        assert list(UserMemory.all_users.order_by("pk").values()) == before

    def test_apply_writes_the_merged_memories(self, client: Client, alice_memories: None) -> None:
        body = post(client, "/optimize-memories", {"user_id": "alice"}).json()
        assert (body["memories_before"], body["memories_after"]) == (4, 2)
        assert [body_of(row) for row in UserMemory.all_users.filter(user_id="alice").order_by("created_at")] == body["memories"]
        merged = UserMemory.all_users.get(pk="m1")
        assert merged.topics_key == ",drinks,prefs,"
        assert UserMemory.all_users.filter(user_id="bob").count() == 1

    def test_optimizing_twice_changes_nothing_more(self, client: Client, alice_memories: None) -> None:
        post(client, "/optimize-memories", {"user_id": "alice"})
        again = post(client, "/optimize-memories", {"user_id": "alice"}).json()
        assert (again["memories_before"], again["memories_after"], again["tokens_saved"], again["reduction_percentage"]) == (2, 2, 0, 0.0)

    def test_a_user_without_memories_is_404(self, client: Client) -> None:
        response = post(client, "/optimize-memories", {"user_id": "nobody"})
        assert (response.status_code, response.json()) == (404, {"detail": "No memories found for user nobody"})

    def test_user_id_is_required(self, client: Client) -> None:
        response = post(client, "/optimize-memories", {})
        assert (response.status_code, response.json()) == (
            422,
            {"detail": [{"type": "missing", "loc": ["body", "user_id"], "msg": "Field required", "input": None}]},
        )

    def test_an_isolated_caller_only_optimizes_their_own(self, bob: Client, alice_memories: None) -> None:
        memory("bob", "b2", "bob likes tea", at=T0 + timedelta(seconds=5))
        body = post(bob, "/optimize-memories", {"user_id": "alice"}).json()
        assert [(m["memory_id"], m["user_id"]) for m in body["memories"]] == [("b1", "bob")]
        assert UserMemory.all_users.filter(user_id="alice").count() == 4

    def test_an_unusable_model_string_is_400(self, client: Client, alice_memories: None) -> None:
        response = post(client, "/optimize-memories", {"user_id": "alice", "model": "gpt-4o"})
        assert response.status_code == 400
        assert "provider:model_id" in response.json()["detail"]

    def test_a_model_reply_longer_than_the_memories_keeps_the_deterministic_merge(self, client: Client, alice_memories: None) -> None:
        # The offline model echoes its input with a preamble: never shorter than the memories.
        with_model = post(client, "/optimize-memories", {"user_id": "alice", "model": "offline:demo", "apply": False}).json()
        without = post(client, "/optimize-memories", {"user_id": "alice", "apply": False}).json()
        assert [m["memory"] for m in with_model["memories"]] == [m["memory"] for m in without["memories"]]

    def test_a_model_summarizes_everything_into_one_memory(self, client: Client, alice_memories: None, fake_openai: FakeOpenAI) -> None:
        fake_openai.reply = "Alice likes tea, hates coffee and lives in Paris."
        body = post(client, "/optimize-memories", {"user_id": "alice", "model": "openai:fake-model"}).json()
        assert body["memories"] == [body_of(UserMemory.all_users.get(user_id="alice"))]
        assert (body["memories"][0]["memory_id"], body["memories"][0]["memory"], body["memories"][0]["topics"]) == (
            "m1", "Alice likes tea, hates coffee and lives in Paris.", ["drinks", "prefs"]
        )
        assert (body["memories_before"], body["memories_after"], body["tokens_before"], body["tokens_after"]) == (4, 1, 13, 9)
        request = fake_openai.requests[0]
        assert request["model"] == "fake-model"
        assert request["messages"][1] == {"role": "user", "content": "- Alice likes tea. Alice hates coffee.\n- Alice lives in Paris"}

    def test_a_failing_model_is_502_and_writes_nothing(self, client: Client, alice_memories: None, fake_openai: FakeOpenAI) -> None:
        fake_openai.status = 500
        response = post(client, "/optimize-memories", {"user_id": "alice", "model": "openai:fake-model"})
        assert response.status_code == 502
        assert response.json()["detail"].startswith("Failed to optimize memories: ")
        assert UserMemory.all_users.filter(user_id="alice").count() == 4


class FakeOpenAI:
    """A local OpenAI-compatible server answering chat completions with ``reply`` (streamed)."""

    def __init__(self) -> None:
        self.reply = ""
        self.status = 200
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                fake.requests.append(json.loads(self.rfile.read(length)))
                if fake.status != 200:
                    self.send_response(fake.status)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(b'{"error": {"message": "boom", "type": "server_error"}}')
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "fake-model"}
                for word in fake.reply.split(" "):
                    chunk = {**base, "choices": [{"index": 0, "delta": {"content": word + " "}, "finish_reason": None}]}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                done = {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
                self.wfile.write(f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n".encode())

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_openai(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    yield server
    server.stop()


@pytest.mark.parametrize(
    ("method", "url", "body", "loc"),
    [
        ("get", "/memories/%00", None, ["path", "memory_id"]),
        ("get", "/memories?topics=a,%00", None, ["query", "topics"]),
        ("get", "/memories?search_content=%00", None, ["query", "search_content"]),
        ("get", "/memory_topics?user_id=%00", None, ["query", "user_id"]),
        ("post", "/memories", '{"memory": "a\\u0000", "user_id": "u"}', ["body", "memory"]),
        ("post", "/memories", '{"memory": "a", "user_id": "u", "topics": ["\\u0000"]}', ["body", "topics", 0]),
        ("patch", "/memories/" + "x" * 65, '{"memory": "a", "user_id": "u"}', ["path", "memory_id"]),
        ("delete", "/memories", '{"memory_ids": ["\\u0000"]}', ["body", "memory_ids", 0]),
        ("post", "/optimize-memories", '{"user_id": "\\u0000"}', ["body", "user_id"]),
    ],
)
def test_input_the_database_cannot_take_is_422_not_a_server_error(client: Client, method: str, url: str, body: str | None, loc: list[Any]) -> None:
    response = getattr(client, method)(url, body, content_type="application/json") if body is not None else getattr(client, method)(url)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == loc
