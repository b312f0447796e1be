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


def test_an_operator_imports_an_agno_file_from_the_admin_and_the_page_follows_it_to_its_report(browsing, make_user, settings, tmp_path):
    """In Chromium: the upload, the background job (the live server's embedded worker), the page
    reloading itself until the report shows; then the imported chat opens for its user."""
    from tests.importer.counting import source_counts

    from .conftest import PASSWORD

    settings.VAR_DIR = tmp_path / "var"
    make_user("operator", is_staff=True, is_superuser=True)
    make_user("carol")
    page = browsing.page()
    page.goto("/admin/login/?next=/admin/importer/agnoimport/add/")
    page.fill("#id_username", "operator")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.set_input_files("#id_upload", str(FIXTURE))
    page.click("input[name=_save]")
    expect(page.locator(".messagelist")).to_contain_text("Import queued")
    counts = page.locator("#import-report-counts")
    expect(counts).to_be_visible(timeout=30_000)  # at once, or after the page reloaded itself while the job ran
    expected = source_counts(FIXTURE)
    for kind in ("sessions", "runs", "knowledge", "schedules"):
        expect(counts.locator("tr", has=page.locator(f"th:text-is('{kind}')")).locator("td").first).to_have_text(str(expected[kind]))
    expect(page.locator("#import-progress")).to_have_count(0)
    assert page.errors == []

    chat = browsing.chat_as("carol")
    chat.goto("/chat/s/s-carol-agent/")
    expect(chat.locator(".msg-user .msg-body")).to_have_text(["What is 2+3?", "What did I ask?"])
