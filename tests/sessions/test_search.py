"""Searching conversations by what was said in them (GET /sessions?q=), on SQLite and PostgreSQL."""
from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from sessions.models import Run, RunStatus
from sessions.search import PG_INDEX, runs_matching, search_words
from tests.factories import make_run, make_session, signed_in

pytestmark = pytest.mark.django_db




def reply(user: str, session: Any, asked: str, answered: str, status: str = RunStatus.COMPLETED) -> Run:
    run = make_run(user, session=session, input={"input_content": asked}, status=status)
    Run.objects.for_user(user).filter(pk=run.pk).update(content=answered)
    return run


def conversation(user: str, session_id: str, name: str, *turns: tuple[str, str]) -> None:
    session = make_session(user, session_id=session_id, session_name=name)
    for asked, answered in turns:
        reply(user, session, asked, answered)


def found(client: Client, q: str) -> list[str]:
    response = client.get("/sessions", {"q": q, "sort_by": "session_id", "sort_order": "asc"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["meta"]["total_count"] == len(body["data"])
    return [item["session_id"] for item in body["data"]]


@pytest.fixture
def conversations() -> None:
    conversation("alice", "trip", "Holiday plans", ("Where should I go in Lisbon?", "Try the Alfama quarter and its tram."))
    conversation("alice", "code", "Untitled", ("How do I reverse a list in Python?", "Use reversed() or a slice."))
    conversation("alice", "lunch", "Lunch with Carol", ("Book a table", "Booked for Friday."))
    conversation("bob", "bobs", "Bob's Lisbon trip", ("Lisbon tram times?", "Every 10 minutes; Python also runs trams."))


def test_q_finds_sessions_by_the_users_input_and_the_agents_answer(alice, conversations) -> None:
    assert found(alice, "lisbon") == ["trip"]  # the question
    assert found(alice, "alfama") == ["trip"]  # the answer
    assert found(alice, "Python") == ["code"]
    assert found(alice, "reversed") == ["code"]


def test_q_still_matches_names_and_needs_every_word_of_the_text(alice, conversations) -> None:
    assert found(alice, "Carol") == ["lunch"]  # the name only
    assert found(alice, "lisbon tram") == ["trip"]  # both words in one run
    assert found(alice, "lisbon python") == []  # one in each of two sessions: neither
    assert found(alice, "nothing like this") == []


def test_q_is_case_insensitive_and_a_word_start_is_enough(alice, conversations) -> None:
    assert found(alice, "LISBON") == ["trip"]
    assert found(alice, "pyth") == ["code"]


def test_another_users_messages_are_never_searched(alice, conversations, django_user_model) -> None:
    assert "bobs" not in found(alice, "trams")
    bob = signed_in("bob")
    assert found(bob, "lisbon") == ["bobs"]
    assert found(bob, "alfama") == []


def test_a_regenerated_answer_no_longer_makes_a_match(alice) -> None:
    session = make_session("alice", session_id="regen", session_name="")
    reply("alice", session, "Tell me a joke", "A penguin walks in", status=RunStatus.REGENERATED)
    reply("alice", session, "Tell me a joke", "Knock knock")
    assert found(alice, "penguin") == []
    assert found(alice, "knock") == ["regen"]


def test_session_name_keeps_agentos_meaning_alone(alice, conversations) -> None:
    body = alice.get("/sessions", {"session_name": "lisbon"}).json()
    assert body["data"] == []  # session_name looks at names, never at messages
    assert [item["session_id"] for item in alice.get("/sessions", {"session_name": "holiday"}).json()["data"]] == ["trip"]


def test_q_combines_with_the_other_filters_and_pages(alice, conversations) -> None:
    conversation("alice", "trip2", "Second trip", ("Lisbon again?", "Sure."))
    body = alice.get("/sessions", {"q": "lisbon", "limit": 1, "page": 2, "sort_by": "session_id", "sort_order": "asc"}).json()
    assert [item["session_id"] for item in body["data"]] == ["trip2"]
    assert body["meta"]["total_count"] == 2 and body["meta"]["total_pages"] == 2
    assert alice.get("/sessions", {"q": "lisbon", "component_id": "someone-else"}).json()["data"] == []


def test_punctuation_only_searches_names_and_blank_is_no_filter(alice, conversations) -> None:
    conversation("alice", "quote", "Don't forget", ("hi", "hello"))
    assert found(alice, "'") == ["quote"]  # no words: the name alone
    assert found(alice, "   ") == ["code", "lunch", "quote", "trip"]


def test_a_search_longer_than_200_characters_is_a_422(alice) -> None:
    response = alice.get("/sessions", {"q": "x" * 201})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "q"]


def test_a_search_is_the_two_queries_of_any_list(alice, conversations) -> None:
    with CaptureQueriesContext(connection) as queries:
        assert found(alice, "lisbon tram") == ["trip"]
    statements = [query["sql"] for query in queries.captured_queries if "agno_sessions" in query["sql"]]
    assert len(statements) == 2  # the count and the page, each with the run search as a subquery


def test_words_are_bounded() -> None:
    assert search_words("Hello, hello WORLD! a-b") == ["hello", "world", "a", "b"]
    assert len(search_words(" ".join(f"w{i}" for i in range(20)))) == 8


def test_postgresql_answers_from_the_full_text_index(alice, on_postgres) -> None:
    if not on_postgres:
        pytest.skip("the GIN index exists on PostgreSQL only")
    session = make_session("alice", session_id="big", session_name="")
    Run.all_users.bulk_create(
        Run(run_id=f"r{i}", session=session, run_index=1000 + i, user_id="alice", status=RunStatus.COMPLETED,
            input={"input_content": f"question number {i}"}, content=f"answer {i} " + ("filler " * 30))
        for i in range(3000)
    )
    reply("alice", session, "where is the needle", "in the haystack")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE agno_runs")
    # The statement the search really runs (the sessions list's subquery), as PostgreSQL plans it.
    plan = runs_matching(Run.objects.for_user("alice"), ["needle"]).values("session_id").explain()
    assert PG_INDEX in plan, plan
    assert found(alice, "needle") == ["big"]


def test_a_huge_run_is_still_stored_and_found_by_its_start(alice) -> None:
    session = make_session("alice", session_id="huge", session_name="")
    reply("alice", session, "zebra " + "word " * 300_000, "x " * 600_000)
    assert found(alice, "zebra") == ["huge"]
