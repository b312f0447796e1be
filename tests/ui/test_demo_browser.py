"""What `make run` shows a new user in Chromium, without a key: the chat's default agent (the demo's
Docs Agent) answers a question from the user's own document with its source, and the offline
model's `/markdown` reply is rendered: a highlighted code block, a table, a list, and math drawn by
KaTeX (served by the project, within the CSP). It takes the README's picture docs/chat-markdown.png."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from engine import Agent

from tests.agents.conftest import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IDLE = "body:not(.is-running)"
TEA = "Green tea is steeped at eighty degrees for two minutes; black tea takes boiling water."


def ask(page, text: str) -> None:
    page.fill("#composer-input", text)
    page.press("#composer-input", "Enter")
    page.wait_for_selector(IDLE)


def test_the_default_agent_answers_from_my_documents_and_replies_render_rich_markdown_screenshot(browsing, make_user, settings, monkeypatch, screenshots_dir):
    from knowledge.models import Content
    from knowledge.services import base_get_or_create, content_insert
    from tests.knowledge.conftest import ingest

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings.AGENT_MODULES = ["agents.demo"]  # what make run serves (no agent seeded here)
    # The demo picks its model when first imported: OpenAI if a test before this one (the session's
    # fake OpenAI server) had set OPENAI_API_KEY then. make run without a key is the offline model.
    from agents import demo
    from engine.models import get_model

    for agent in demo.AGENTS:
        if isinstance(agent, Agent):
            monkeypatch.setattr(agent, "model", get_model("offline:demo"))
    make_user("alice")
    base = base_get_or_create(name=settings.KNOWLEDGE_DEFAULT_BASE)
    content = content_insert(user_id="alice", base_id=base.pk, source_type="text", text=TEA, name="tea notes").content
    ingest()  # the live server's worker may take it first: either way it ends completed
    wait_for(lambda: Content.objects.for_user("alice").filter(pk=content.pk, status="completed").exists())

    page = browsing.chat_as("alice", viewport=(1280, 1100))
    violations: list[str] = []
    page.on("console", lambda message: "Content Security Policy" in message.text and violations.append(message.text))
    # Nothing picked: the chat's default agent is the one that searches My documents.
    expect(page.locator("#agent-picker")).to_have_value("demo-docs")
    ask(page, "How hot should the water be for green tea?")
    reply = page.locator(".msg-assistant").last
    expect(reply).to_contain_text('"tea notes": Green tea is steeped at eighty degrees')
    sources = reply.get_by_role("region", name="Sources")
    expect(sources.locator(".source-name").first).to_have_text("tea notes")
    expect(sources.get_by_role("link", name="Open the passage of “tea notes”").first).to_have_attribute(
        "href", re.compile(rf"^/chat/documents/{content.pk}/\?passage=\d+#chunk-\d+$"))

    ask(page, "/markdown")
    reply = page.locator(".msg-assistant").last
    # A code block, highlighted, with its copy button.
    code = reply.locator("pre > code.language-python.hljs")
    expect(code).to_contain_text("def fibonacci(n: int) -> int:")
    expect(code.locator(".hljs-keyword").first).to_have_text("def")
    expect(reply.locator("pre .copy-code")).to_have_count(1)
    # A table and a nested list.
    expect(reply.locator("table thead th")).to_have_text(["model", "needs a key", "calls the network"])
    expect(reply.locator("table tbody tr")).to_have_count(2)
    expect(reply.locator("ol > li")).to_have_count(2)
    expect(reply.locator("ol > li ul > li")).to_have_count(2)
    # Math drawn by KaTeX (inline and displayed), with its fonts, and no TeX left as text.
    expect(reply.locator(".math-inline .katex")).to_have_count(1)
    expect(reply.locator(".math-display .katex-display")).to_have_count(1)
    expect(reply.locator(".math-display .katex-html .mfrac")).to_have_count(1)
    expect(reply.locator(".math-display annotation")).to_have_text("\\int_0^1 x^2 \\, dx = \\frac{1}{3}")
    assert "$$" not in reply.inner_text()
    assert page.evaluate("document.fonts.ready.then(() => document.fonts.check('1em KaTeX_Main'))")
    # The formula's sizes came through the CSSOM, which the CSP allows: it is laid out, not flat.
    height = reply.locator(".math-display .katex-html").evaluate("(node) => node.getBoundingClientRect().height")
    assert height > 30, height

    # The README's picture of it (make screenshots).
    reply.locator(".math-display").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots_dir / "chat-markdown.png"))
    assert (screenshots_dir / "chat-markdown.png").stat().st_size > 10_000

    # Opened again, the stored reply renders the same.
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator(".msg-assistant").last.locator(".math-display .katex-display")).to_have_count(1)
    assert page.errors == [] and violations == []
