"""A tool call refused before it ran (a tool the agent does not have) is a failed card while the
reply streams, and the same failed card, in the same place, once the conversation is reloaded,
and in its shared copy (drawn from sessions.transcript)."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IDLE = "body:not(.is-running)"


def cards(page):
    return page.locator(".msg-assistant").last.locator("details.tool")


def expect_cards(page) -> None:
    """add done, erase_disk failed with its refusal, add done: the order the calls were made."""
    expect(cards(page)).to_have_count(3)
    assert [cards(page).nth(i).get_attribute("data-state") for i in range(3)] == ["done", "error", "done"]
    refused = cards(page).nth(1)
    expect(refused.locator(".tool-state")).to_have_text("failed")
    expect(refused.locator("summary code")).to_have_text("erase_disk")
    refused.locator("summary").click()
    expect(refused.locator(".tool-result")).to_contain_text("does not exist or is not available")


def test_a_refused_tool_call_is_the_same_failed_card_after_a_reload(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    page.select_option("#agent-picker", "assistant")
    page.fill("#composer-input", '/call add {"a": 1, "b": 1}\n/call erase_disk {"really": true}\n/call add {"a": 2, "b": 2}')
    page.press("#composer-input", "Enter")
    page.wait_for_selector(IDLE)
    expect_cards(page)  # as streamed

    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    expect_cards(page)  # as stored

    page.click("#share-button")
    dialog = page.locator("#share-dialog")
    dialog.get_by_role("button", name="Create a link").click()
    expect(dialog.locator("#share-link")).not_to_have_value("")
    reader = browsing.page()
    reader.goto(dialog.locator("#share-link").input_value())
    reader.wait_for_selector("body[data-ready=true]")
    expect_cards(reader)  # as shared
    assert page.errors == [] and reader.errors == []
