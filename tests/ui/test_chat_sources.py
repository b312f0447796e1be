"""An answer's sources in Chromium (and the README's picture of them, docs/chat-sources.png): the passages a knowledge search found, under the reply, each
opening to its passage and linking to it in its context (its document in My documents, or its
run's record of it); still there when the conversation is opened again; never another user's
passage, nor another user's passage page."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.agents.conftest import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IDLE = "body:not(.is-running)"


@pytest.fixture(autouse=True)
def knowledge_agents(settings):
    # The demo's docs agent (agents.demo) for the README's picture, beside the tests' own.
    settings.AGENT_MODULES = [*settings.AGENT_MODULES, "tests.api.knowledge_agents", "tests.ui.document_agents", "agents.demo"]


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

    # Each source links to its passage; a knowledge base held in code has no document, so the
    # link opens the passage as the run recorded it, highlighted among that source's passages.
    expect(items.locator(".source-open")).to_have_count(2)
    items.nth(1).get_by_role("link", name="Open the passage of “jobs.md”").click()
    expect(page).to_have_url(re.compile(r"/chat/runs/[^/]+/sources/0/\d+/#ref-0-\d+$"))
    expect(page.get_by_role("heading", level=1)).to_have_text("jobs.md")
    cited = page.locator(".passage-cited")
    expect(cited).to_have_count(1)
    expect(cited.locator(".passage-text")).to_have_text("Background jobs are claimed with a lease and reaped when a worker dies.")
    assert cited.evaluate("(node) => node.matches(':target')")
    passage_url = page.url
    page.go_back()
    page.wait_for_selector("body[data-ready=true]")

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
    # ...nor is alice's passage page: the same 404 as a missing one.
    response = other.goto(passage_url)
    assert response.status == 404
    expect(other.get_by_role("heading", level=1)).to_have_text("Passage not found")
    expect(other.locator(".passage")).to_have_count(0)


def test_a_source_from_my_documents_links_to_its_passage_in_the_document(browsing, make_user):
    from knowledge.models import Content
    from knowledge.services import base_get_or_create, content_insert
    from tests.knowledge.conftest import ingest

    make_user("alice")
    make_user("bob")
    base = base_get_or_create(name="documents")
    text = "# Heron\n\nThe launch code word is heron.\n\n# Bikes\n\n" + "A bicycle chain wants oil after rain. " * 25
    content = content_insert(user_id="alice", base_id=base.pk, source_type="text", text=text, name="codes.md", chunker="markdown", chunk_size=300).content
    ingest()  # the live server's worker may take it first: either way it ends completed
    wait_for(lambda: Content.objects.for_user("alice").filter(pk=content.pk, status="completed").exists())

    page = browsing.chat_as("alice")
    page.select_option("#agent-picker", "kb-docs-agent")
    ask(page, "What is the launch code word?")
    source = page.locator(".msg-assistant").last.locator(".source", has=page.locator(".source-name", has_text="codes.md")).first
    source.get_by_role("link", name="Open the passage of “codes.md”").click()
    expect(page).to_have_url(re.compile(rf"/chat/documents/{content.pk}/\?passage=(\d+)#chunk-\1$"))
    expect(page.get_by_role("heading", level=1)).to_have_text("codes.md")
    # The whole document, passage by passage, the cited one highlighted and scrolled to.
    expect(page.locator(".passage")).to_have_count(Content.objects.for_user("alice").get(pk=content.pk).chunk_count)
    cited = page.locator(".passage-cited")
    expect(cited).to_have_count(1)
    expect(cited).to_have_attribute("aria-current", "true")
    expect(cited.locator(".passage-text")).to_contain_text("The launch code word is heron.")
    assert cited.evaluate("(node) => node.matches(':target')")
    expect(cited).to_be_in_viewport()
    assert page.errors == []
    page.get_by_role("link", name="← My documents").click()
    expect(page).to_have_url(re.compile(rf"/chat/documents/#document-{content.pk}$"))

    other = browsing.chat_as("bob")
    response = other.goto(f"/chat/documents/{content.pk}/")
    assert response.status == 404
    expect(other.locator("body")).not_to_contain_text("heron")


def test_screenshot_an_answer_with_its_sources(browsing, make_user, screenshots_dir, monkeypatch):
    make_user("ada")
    # The demo picks OpenAI when OPENAI_API_KEY is set, as the test session's fake OpenAI server
    # sets it: this picture is of the offline demo, which searches its handbook.
    from agents import demo
    from engine.models import get_model

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
    # ...and the page its first source links to: the passage in its context, highlighted.
    sources.locator(".source-open").first.click()
    expect(page.locator(".passage-cited")).to_be_in_viewport()
    page.screenshot(path=str(screenshots_dir / "chat-passage.png"))
    assert (screenshots_dir / "chat-passage.png").stat().st_size > 10_000
