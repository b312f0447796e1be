"""Agno's own AgentOSClient against a live server: every /memories method parses what we send."""
from __future__ import annotations

from typing import Any

import httpx
import pytest
from agno.os.routers.memory.schemas import OptimizeMemoriesResponse, UserMemorySchema, UserStatsSchema

from sessions.models import UserMemory
from tests.api.test_sessions_conformance import drive
from tests.factories import make_memory


def test_create_get_update_and_delete_a_memory(live_api: str) -> None:
    async def scenario(client: Any) -> list[Any]:
        created = await client.create_memory("Alice likes tea", user_id="alice", topics=["drinks", "prefs"])
        return [
            created,
            await client.get_memory(created.memory_id, user_id="alice"),
            await client.update_memory(created.memory_id, "Alice likes green tea", user_id="alice", topics=["drinks"]),
            await client.update_memory("fresh-id", "Upserted", user_id="bob"),
            await client.delete_memory(created.memory_id),
        ]

    created, fetched, updated, upserted, deleted = drive(scenario, live_api)
    assert isinstance(created, UserMemorySchema)
    assert (created.memory, created.topics, created.user_id, created.agent_id, created.team_id) == ("Alice likes tea", ["drinks", "prefs"], "alice", None, None)
    assert created.updated_at is not None and created.updated_at.tzinfo is not None
    assert fetched == created
    assert (updated.memory_id, updated.memory, updated.topics) == (created.memory_id, "Alice likes green tea", ["drinks"])
    assert (upserted.memory_id, upserted.user_id, upserted.topics) == ("fresh-id", "bob", [])
    assert deleted is None
    assert list(UserMemory.all_users.values_list("pk", flat=True)) == ["fresh-id"]


def test_update_memory_as_make_run_serves_it(live_api: str, settings) -> None:
    """ANONYMOUS_ACCESS=guests, `make run`'s default: update_memory names the owner in its body."""
    settings.ANONYMOUS_ACCESS = "guests"

    async def scenario(client: Any) -> list[Any]:
        created = await client.create_memory("Alice likes tea", user_id="alice", topics=["drinks"])
        return [created, await client.update_memory(created.memory_id, "Alice likes green tea", user_id="alice", topics=["drinks"])]

    created, updated = drive(scenario, live_api)
    assert (updated.memory_id, updated.memory, updated.user_id) == (created.memory_id, "Alice likes green tea", "alice")


def test_get_memory_of_an_unknown_id_raises_404(live_api: str) -> None:
    async def scenario(client: Any) -> Any:
        return await client.get_memory("nope")

    with pytest.raises(httpx.HTTPStatusError) as caught:
        drive(scenario, live_api)
    assert (caught.value.response.status_code, caught.value.response.json()) == (404, {"detail": "Memory with ID nope not found"})


def test_list_memories_with_filters_and_pages(live_api: str) -> None:
    make_memory("alice", memory_id="tea", memory="Alice likes tea", topics=["drinks", "prefs"])
    make_memory("alice", memory_id="coffee", memory="Alice hates coffee", topics=["drinks"], agent_id="assistant")
    make_memory("bob", memory_id="bob", memory="Bob likes tea", topics=["prefs"], team_id="crew")

    async def scenario(client: Any) -> list[Any]:
        return [
            await client.list_memories(limit=2, page=2, sort_by="memory_id", sort_order="asc"),
            await client.list_memories(user_id="alice", search_content="TEA"),
            # The client repeats topics=; the server reads the first one only (as AgentOS does).
            await client.list_memories(topics=["prefs", "home"]),
            await client.list_memories(agent_id="assistant"),
            await client.list_memories(team_id="crew"),
        ]

    second_page, alices_tea, prefs, assistant, crew = drive(scenario, live_api)
    assert [m.memory_id for m in second_page.data] == ["tea"]
    assert (second_page.meta.page, second_page.meta.limit, second_page.meta.total_pages, second_page.meta.total_count) == (2, 2, 2, 3)
    assert [m.memory_id for m in alices_tea.data] == ["tea"]
    assert sorted(m.memory_id for m in prefs.data) == ["bob", "tea"]
    assert [(m.memory_id, m.agent_id) for m in assistant.data] == [("coffee", "assistant")]
    assert [(m.memory_id, m.team_id) for m in crew.data] == [("bob", "crew")]


def test_delete_memories_topics_and_stats(live_api: str) -> None:
    for index in range(3):
        make_memory("alice", memory_id=f"a{index}", topics=["prefs", f"t{index}"])
    make_memory("bob", memory_id="b0", topics=["drinks"])

    async def scenario(client: Any) -> list[Any]:
        return [
            await client.get_memory_topics(),
            await client.get_memory_topics(user_id="bob"),
            await client.get_user_memory_stats(),
            await client.get_user_memory_stats(limit=1, page=1, user_id="alice"),
            await client.delete_memories(["a0", "a1", "b0"], user_id="alice"),
            await client.get_user_memory_stats(),
        ]

    topics, bobs_topics, stats, alices_stats, deleted, after = drive(scenario, live_api)
    assert topics == ["drinks", "prefs", "t0", "t1", "t2"]
    assert bobs_topics == ["drinks"]
    assert all(isinstance(row, UserStatsSchema) for row in stats.data)
    assert sorted((row.user_id, row.total_memories) for row in stats.data) == [("alice", 3), ("bob", 1)]
    assert all(row.last_memory_updated_at is not None for row in stats.data)
    assert [(row.user_id, row.total_memories) for row in alices_stats.data] == [("alice", 3)]
    assert deleted is None
    assert sorted((row.user_id, row.total_memories) for row in after.data) == [("alice", 1), ("bob", 1)]


def test_optimize_memories(live_api: str) -> None:
    make_memory("alice", memory_id="m1", memory="Alice likes tea", topics=["drinks"])
    make_memory("alice", memory_id="m2", memory="ALICE LIKES TEA.", topics=["drinks"])
    make_memory("alice", memory_id="m3", memory="Alice hates coffee", topics=["drinks"])

    async def scenario(client: Any) -> list[Any]:
        return [await client.optimize_memories("alice", apply=False), await client.optimize_memories("alice")]

    preview, applied = drive(scenario, live_api)
    assert isinstance(preview, OptimizeMemoriesResponse)
    assert (preview.memories_before, preview.memories_after, preview.tokens_before, preview.tokens_after, preview.tokens_saved) == (3, 1, 9, 6, 3)
    assert preview.reduction_percentage == pytest.approx(33.33)
    assert [(m.memory_id, m.memory, m.topics, m.user_id) for m in applied.memories] == [("m1", "Alice likes tea. Alice hates coffee.", ["drinks"], "alice")]
    assert list(UserMemory.all_users.values_list("pk", "memory")) == [("m1", "Alice likes tea. Alice hates coffee.")]


def test_optimize_memories_of_a_user_without_any_raises_404(live_api: str) -> None:
    async def scenario(client: Any) -> Any:
        return await client.optimize_memories("nobody")

    with pytest.raises(httpx.HTTPStatusError) as caught:
        drive(scenario, live_api)
    assert caught.value.response.status_code == 404
