"""Quick prompts in the chat: an empty conversation with a component offers its prompts (/config's
chat.quick_prompts: the code's, then the admin's), a click sends one, and a component without
any offers none."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from agents.models import QuickPrompt

from .test_chat_browser import IDLE, last_reply

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_empty_conversation_offers_the_components_quick_prompts_and_a_click_sends_one(browsing, make_user):
    QuickPrompt.objects.create(component_type="agent", component_id="assistant", prompt="Tell me a fact")
    make_user("alice")
    page = browsing.chat_as("alice")
    page.select_option("#agent-picker", "assistant")
    prompts = page.locator("#quick-prompts .quick-prompt")
    expect(prompts).to_have_text(["Say hello", "What is 6 times 7?", "Tell me a fact"])
    page.select_option("#agent-picker", "hitl-agent")
    expect(page.locator("#quick-prompts")).to_be_hidden()
    page.select_option("#agent-picker", "workflow:review-flow")
    expect(prompts).to_have_text(["Ship it"])
    page.select_option("#agent-picker", "assistant")
    prompts.filter(has_text="Say hello").click()
    page.wait_for_selector(IDLE)
    expect(page.locator(".msg-user").last).to_contain_text("Say hello")
    expect(last_reply(page)).to_contain_text("You said: Say hello")
    expect(page.locator("#welcome")).to_be_hidden()
    assert page.errors == []
