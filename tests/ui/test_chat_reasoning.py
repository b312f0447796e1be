"""A model's reasoning in Chromium: streamed into a collapsed "Reasoning" disclosure above the
reply, opened on a click, and still there when the conversation is opened again."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IDLE = "body:not(.is-running)"
THOUGHT = '(offline demo) Thinking about "Plan my week" before answering.'


@pytest.fixture(autouse=True)
def reasoning_agent(settings):
    settings.AGENT_MODULES = [*settings.AGENT_MODULES, "tests.api.factory_agents"]


def test_reasoning_is_shown_collapsed_above_the_reply(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    page.select_option("#agent-picker", "thinking-agent")
    page.fill("#composer-input", "Plan my week")
    page.press("#composer-input", "Enter")
    page.wait_for_selector(IDLE)

    reply = page.locator(".msg-assistant").last
    reasoning = reply.locator("details.reasoning")
    expect(reasoning).to_have_count(1)
    expect(reasoning.locator("summary")).to_have_text("Reasoning")
    expect(reasoning.locator(".reasoning-text")).to_be_hidden()
    expect(reply.locator(".md")).to_have_text("(offline demo) You said: Plan my week This is the first message I see from you.")
    reasoning.locator("summary").click()
    expect(reasoning.locator(".reasoning-text")).to_have_text(THOUGHT)
    # The reply's Copy is the answer alone, not the thinking.
    assert "Thinking about" not in reply.locator(".md").inner_text()

    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    stored = page.locator(".msg-assistant").last.locator("details.reasoning")
    expect(stored).not_to_have_attribute("open", "")
    stored.locator("summary").click()
    expect(stored.locator(".reasoning-text")).to_have_text(THOUGHT)
    assert page.errors == []
