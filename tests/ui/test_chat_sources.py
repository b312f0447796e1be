"""An answer's sources in Chromium (and the README's picture of them, docs/chat-sources.png): the passages a knowledge search found, under the reply, each
opening to its passage; still there when the conversation is opened again; never another
user's passage."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IDLE = "body:not(.is-running)"


@pytest.fixture(autouse=True)
def knowledge_agents(settings):
    # The demo's docs agent (agents.demo) for the README's picture, beside the tests' own.
    settings.AGENT_MODULES = [*settings.AGENT_MODULES, "tests.api.knowledge_agents", "agents.demo"]


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


def test_screenshot_an_answer_with_its_sources(browsing, make_user, screenshots_dir, monkeypatch):
    make_user("ada")
    # The demo picks OpenAI when OPENAI_API_KEY is set, as the test session's fake OpenAI server
    # sets it: this picture is of the offline demo, which searches its handbook.
    from agents import demo
    from agents.runtime.models import get_model

    docs = next(agent for agent in demo.AGENTS if agent.id == "demo-docs")
    monkeypatch.setattr(docs, "model", get_model("offline:demo"))
    page = browsing.chat_as("ada", viewport=(1280, 820))
    page.select_option("#agent-picker", "demo-docs")
    ask(page, "How do background jobs survive a killed worker, and how are leases reaped?")
    sources = page.locator(".msg-assistant").last.get_by_role("region", name="Sources")
    expect(sources.locator(".source-name").first).to_have_text("Background jobs")
    sources.locator(".source summary").first.click()
    expect(sources.locator(".source-passage").first).to_be_visible()
    # A long excerpt is cut on its line, never widening the conversation.
    assert page.evaluate("(() => { const m = document.querySelector('.messages'); return m.scrollWidth <= m.clientWidth; })()")
    page.screenshot(path=str(screenshots_dir / "chat-sources.png"))
    assert (screenshots_dir / "chat-sources.png").stat().st_size > 10_000
