"""An answer's sources in Chromium: the passages a knowledge search found, under the reply, each
opening to its passage; still there when the conversation is opened again; never another
user's passage."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IDLE = "body:not(.is-running)"


@pytest.fixture(autouse=True)
def knowledge_agents(settings):
    settings.AGENT_MODULES = [*settings.AGENT_MODULES, "tests.api.knowledge_agents"]


def ask(page, text: str) -> None:
    page.fill("#composer-input", text)
    page.press("#composer-input", "Enter")
    page.wait_for_selector(IDLE)


def test_an_answer_lists_its_sources_which_open_to_the_passage(browsing, make_user):
    make_user("alice")
    make_user("bob")
    page = browsing.chat_as("alice")
    page.select_option("#agent-picker", "kb-agent")
    ask(page, "What is the launch code word for background jobs?")

    reply = page.locator(".msg-assistant").last
    sources = reply.get_by_role("region", name="Sources")
    expect(sources.locator(".sources-label")).to_have_text("Sources · 2 sources")
    items = sources.locator(".source")
    expect(items.locator(".source-name")).to_have_text(["alice.md", "jobs.md"])
    expect(items.nth(1).locator(".source-excerpt")).to_have_text("Background jobs are claimed with a lease and reaped when a worker dies.")
    expect(items.locator(".source-score")).to_have_text(["0.60", "0.40"])  # best first
    passage = items.first.locator(".source-passage")
    expect(passage).to_be_hidden()
    items.first.locator("summary").click()
    expect(passage).to_have_text("Alice's note: the launch code word is heron.")

    # Opened again, the stored run shows the same sources.
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator(".msg-assistant").last.locator(".source-name")).to_have_text(["alice.md", "jobs.md"])
    assert page.errors == []

    # Bob asks the same: alice's passage is not his to see.
    other = browsing.chat_as("bob")
    other.select_option("#agent-picker", "kb-agent")
    ask(other, "What is the launch code word for background jobs?")
    expect(other.locator(".msg-assistant").last.locator(".source-name")).to_have_text(["jobs.md"])
