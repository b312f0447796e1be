"""The sidebar's search finds conversations by what was said in them (Chromium)."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from sessions.models import Run, RunStatus
from tests.factories import make_run, make_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def conversation(user: str, name: str, asked: str, answered: str) -> None:
    session = make_session(user, component_id="assistant", session_name=name)
    run = make_run(user, session=session, status=RunStatus.COMPLETED, component_id="assistant", input={"input_content": asked})
    Run.objects.for_user(user).filter(pk=run.pk).update(content=answered)


def test_the_sidebar_search_looks_inside_messages_and_only_at_the_users_own(browsing, make_user):
    make_user("alice")
    conversation("alice", "Weekend", "Which museums open on Sunday?", "The Gulbenkian opens at ten.")
    conversation("alice", "Dinner", "A recipe for bacalhau", "Soak the cod for two days.")
    conversation("bob", "Bob's Gulbenkian notes", "Gulbenkian tickets?", "Twenty euros.")
    page = browsing.chat_as("alice")
    items = page.locator("#session-list .session")
    expect(items).to_have_count(2)

    page.fill("#session-search", "gulbenkian")  # only in an answer, never in a name of alice's
    expect(items).to_have_count(1)
    expect(items.first).to_contain_text("Weekend")
    page.fill("#session-search", "bacalhau")  # only in a question
    expect(items).to_have_count(1)
    expect(items.first).to_contain_text("Dinner")
    page.fill("#session-search", "dinner")  # names still count
    expect(items).to_have_count(1)
    expect(items.first).to_contain_text("Dinner")
    page.fill("#session-search", "twenty euros")  # bob's answer
    expect(page.locator("#sessions-empty")).to_have_text("No conversations match your search.")
    expect(items).to_have_count(0)
    assert page.errors == []
