"""What people expect of a chat UI, in Chromium: copy a reply, edit a sent message into a new
version and switch between versions, when / which model / how many tokens on hover, a theme
that overrides the system's, highlighted code, and keyboard shortcuts listed under ``?``.

Both tests also take the README's pictures of these (``make screenshots`` runs ``-k screenshot``).
"""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from sessions.models import Run, RunStatus
from tests.factories import make_run, make_session

from .conftest import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IDLE = "body:not(.is-running)"
LIGHT_BG = "rgb(246, 247, 249)"
DARK_BG = "rgb(16, 19, 24)"


def send(page, text: str) -> None:
    page.fill("#composer-input", text)
    page.press("#composer-input", "Enter")


def asked(page):
    return page.locator(".msg-user .msg-body")


def runs_of(user_id: str) -> list[Run]:
    return list(Run.objects.for_user(user_id).order_by("created_at"))


def test_screenshot_edit_branches_copy_and_details(browsing, make_user, screenshots_dir):
    make_user("alice")
    page = browsing.chat_as("alice", viewport=(1280, 820))
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.select_option("#agent-picker", "assistant")
    send(page, "Plan a day in Lisbon")
    page.wait_for_selector(IDLE)
    send(page, "What should I eat there?")
    page.wait_for_selector(IDLE)
    replies = page.locator(".msg-assistant")

    # Copy puts the whole reply, as the agent wrote it, on the clipboard.
    replies.last.get_by_role("button", name="Copy the reply").click()
    expect(replies.last.get_by_role("button", name="Copy the reply")).to_have_text("Copied")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith("(offline demo) You said: What should I eat there?") and copied == replies.last.locator(".md").inner_text().strip()

    # On hover: when, which model, how many tokens (the run's own metrics).
    replies.last.hover()
    meta = replies.last.locator(".msg-meta")
    expect(meta).to_be_visible()
    expect(meta).to_have_text(re.compile(r"\d{4}.* · Offline · demo · \d+ tokens \(\d+ in, \d+ out\)"))

    # Edit the second message: a new version of it, answered in a new run beside the old one.
    second = page.locator(".msg-user").nth(1)
    second.hover()
    second.get_by_role("button", name="Edit").click()
    second.get_by_label("Edit your message").fill("What should I drink there?")
    second.get_by_role("button", name="Send").click()
    page.wait_for_selector(IDLE)
    switch = page.locator(".msg-user").nth(1).get_by_role("group", name="Versions of this message")
    expect(switch).to_contain_text("2/2")
    expect(asked(page)).to_have_text(["Plan a day in Lisbon", "What should I drink there?"])
    expect(replies).to_have_count(2)
    expect(replies.last.locator(".md")).to_contain_text("You said: What should I drink there?")
    # The new version answers with the conversation before the edited message, not the old answer.
    expect(replies.last.locator(".md")).to_contain_text('the previous one was: "Plan a day in Lisbon"')
    original, edited = wait_until(lambda: [run for run in runs_of("alice") if run.status == RunStatus.COMPLETED][1:] if len(runs_of("alice")) == 3 else None, message="the edited run")
    assert edited.run_data["forked_from_run_id"] == original.pk
    page.locator(".msg-user").nth(1).hover()  # shows Edit beside the versions
    page.screenshot(path=str(screenshots_dir / "chat-branches.png"))

    # Back to the first version, and on again.
    switch.get_by_role("button", name="Previous version").click()
    expect(page.locator(".msg-user").nth(1).get_by_role("group", name="Versions of this message")).to_contain_text("1/2")
    expect(asked(page)).to_have_text(["Plan a day in Lisbon", "What should I eat there?"])
    expect(replies.last.locator(".md")).to_contain_text("You said: What should I eat there?")
    page.locator(".msg-user").nth(1).get_by_role("button", name="Next version").click()
    expect(asked(page)).to_have_text(["Plan a day in Lisbon", "What should I drink there?"])
    # Reopened, the newest version is shown, with the switcher.
    page.reload()
    expect(asked(page)).to_have_text(["Plan a day in Lisbon", "What should I drink there?"])
    expect(page.locator(".msg-user").nth(1).get_by_role("group", name="Versions of this message")).to_contain_text("2/2")
    assert page.errors == []


def test_screenshot_theme_highlighting_and_shortcuts(browsing, make_user, screenshots_dir):
    make_user("alice")
    session = make_session("alice", component_id="assistant", session_name="Code")
    code = "```python\ndef greet(name):\n    # say hello\n    return f\"Hello, {name}!\"\n```"
    make_run("alice", session=session, status=RunStatus.COMPLETED, component_id="assistant",
             input={"input_content": "Write a greeting function"}, run_data={"content": f"Here it is:\n\n{code}"})
    page = browsing.chat_as("alice", viewport=(1280, 820))
    page.emulate_media(color_scheme="dark")
    page.goto(f"/chat/s/{session.session_id}/")
    page.wait_for_selector("body[data-ready=true]")
    background = "getComputedStyle(document.body).backgroundColor"
    assert page.evaluate(background) == DARK_BG  # the system's theme, to begin with

    # Code blocks are highlighted by highlight.js, served by the project.
    block = page.locator(".md pre code.hljs")
    expect(block).to_contain_text("def greet(name):")
    expect(block.locator(".hljs-keyword").first).to_have_text("def")
    expect(block.locator(".hljs-comment")).to_have_text("# say hello")
    expect(block.locator(".hljs-string")).to_contain_text("Hello")

    # The theme picker overrides the system, and is remembered.
    page.select_option("#theme-picker", "light")
    assert page.evaluate(background) == LIGHT_BG
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    assert page.evaluate(background) == LIGHT_BG
    expect(page.locator("#theme-picker")).to_have_value("light")
    page.select_option("#theme-picker", "system")
    assert page.evaluate(background) == DARK_BG
    page.select_option("#theme-picker", "dark")
    page.emulate_media(color_scheme="light")
    assert page.evaluate(background) == DARK_BG

    # ? lists the shortcuts (not while typing a message).
    page.locator("#composer-input").focus()
    page.keyboard.type("?")
    expect(page.locator("#shortcuts-dialog")).not_to_be_visible()
    page.fill("#composer-input", "")
    page.locator("#session-title").click()
    page.keyboard.press("?")
    dialog = page.locator("#shortcuts-dialog")
    expect(dialog).to_be_visible()
    for action in ("New chat", "Search conversations", "Stop the reply"):
        expect(dialog).to_contain_text(action)
    page.screenshot(path=str(screenshots_dir / "chat-shortcuts.png"))
    page.keyboard.press("Escape")
    expect(dialog).not_to_be_visible()
    # Ctrl+K goes to the search; Ctrl+Shift+O starts a new chat.
    page.keyboard.press("Control+k")
    expect(page.locator("#session-search")).to_be_focused()
    page.keyboard.press("Control+Shift+O")
    expect(page).to_have_url(re.compile("/chat/$"))
    expect(page.locator("#session-title")).to_have_text("New chat")
    # Esc stops a reply.
    send(page, "/slow 6")
    page.wait_for_selector(".msg-assistant.is-streaming .md")
    page.keyboard.press("Escape")
    page.wait_for_selector(IDLE)
    expect(page.locator(".msg-assistant").last.locator(".msg-note-stopped")).to_be_visible()
    assert page.errors == []
