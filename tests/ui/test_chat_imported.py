"""A chat imported from an Agno database (tests/importer/fixtures/agno3_full.db, written by agno's
own Agent and Team) opens in the chat UI as its user last saw it: the turns in order, the tool
call, the team member's step; and another imported user does not see it."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from importer.services import agno_import

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FIXTURE = Path(__file__).parent.parent / "importer" / "fixtures" / "agno3_full.db"


def test_an_imported_agno_chat_opens_as_its_user_last_saw_it(browsing, make_user):
    make_user("carol")
    make_user("dave")
    report = agno_import(str(FIXTURE))
    assert not report.failures
    page = browsing.chat_as("carol")
    chat = page.locator('.session[data-session-id="s-carol-agent"]')
    expect(chat).to_be_visible()
    chat.locator(".session-open").click()
    expect(page).to_have_url(re.compile("/chat/s/s-carol-agent/$"))
    expect(page.locator(".msg-user .msg-body")).to_have_text(["What is 2+3?", "What did I ask?"])
    replies = page.locator(".msg-assistant")
    expect(replies.nth(0).locator(".md").last).to_contain_text("2 + 3 = 5")
    expect(replies.nth(0).locator("details.tool code").first).to_have_text("add")
    expect(replies.nth(1).locator(".md").last).to_contain_text("You asked about sums.")

    # The team chat: the leader's answer, with the member's work as its step.
    page.goto("/chat/s/s-carol-team/")
    reply = page.locator(".msg-assistant").last
    expect(reply.locator(".md").last).to_contain_text("Here is a haiku")
    expect(reply.locator(".member-step")).to_have_count(1)
    assert page.errors == []

    # dave, imported from the same database, sees none of carol's chats.
    other = browsing.chat_as("dave")
    expect(other.locator('.session[data-session-id="s-dave-flow"]')).to_be_visible()
    expect(other.locator('.session[data-session-id="s-carol-agent"]')).to_have_count(0)
