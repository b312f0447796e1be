"""Editing a message (a new version of it, the chat's edit/branch) is held to the server's length
limit (RUN_MAX_MESSAGE_CHARS) as the composer is: the edit box shows the limit, refuses an edit
over it with what to do, and keeps the text; if the server refuses an edit all the same (its
limit lowered since the page loaded), the conversation stays as it was and the server's reason
is on screen."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from sessions.models import Run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IDLE = "body:not(.is-running)"


def open_edit(page):
    first = page.locator(".msg-user").first
    first.hover()
    first.get_by_role("button", name="Edit").click()
    return first


def test_an_edit_over_the_limit_is_refused_in_the_box_and_a_server_refusal_is_shown(browsing, make_user, settings):
    settings.RUN_MAX_MESSAGE_CHARS = 40
    make_user("alice")
    page = browsing.chat_as("alice")
    page.select_option("#agent-picker", "assistant")
    page.fill("#composer-input", "I like green tea")
    page.press("#composer-input", "Enter")
    page.wait_for_selector(IDLE)
    expect(page.locator(".msg-assistant .md")).to_have_count(1)

    first = open_edit(page)
    box = first.get_by_label("Edit your message")
    limit = first.locator(".msg-edit-limit")
    expect(limit).to_have_text("At most 40 characters.")
    box.fill("é" * 38)  # counted as the server counts: characters
    expect(limit).to_have_text("38 of at most 40 characters.")
    box.fill("a" * 50)
    expect(limit).to_have_text("50 of at most 40 characters: shorten the message to send it.")
    expect(box).to_have_attribute("aria-invalid", "true")
    expect(first.get_by_role("button", name="Send")).to_be_disabled()
    box.press("Enter")
    expect(box).to_have_value("a" * 50)  # refused here: nothing typed is lost, nothing sent
    assert Run.objects.for_user("alice").count() == 1

    # The server's limit drops below the page's: the server refuses (413) and says why.
    settings.RUN_MAX_MESSAGE_CHARS = 20
    box.fill("I like black coffee, strong")  # 27 characters: under the page's 40
    expect(first.get_by_role("button", name="Send")).to_be_enabled()
    first.get_by_role("button", name="Send").click()
    page.wait_for_selector(IDLE)
    expect(page.locator("#notice")).to_contain_text("Your edit was not sent: ")
    expect(page.locator("#notice")).to_contain_text("at most 20 characters")
    expect(page.locator(".msg-user .msg-body")).to_have_text(["I like green tea"])  # as it was
    expect(page.locator(".msg-assistant .md")).to_have_count(1)
    assert Run.objects.for_user("alice").count() == 1
