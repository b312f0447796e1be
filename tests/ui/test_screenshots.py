"""The README's screenshots docs/chat.png, docs/chat-approval.png and docs/dashboard.png (the
others are taken by the tests of what they show: every test named ``*screenshot*``).

Taken on every run into a temporary folder (so the pages they show keep working); ``make
screenshots`` sets SCREENSHOTS_DIR=docs to refresh the committed ones.
"""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from agents.services.definitions import definition_create

from .test_dashboard_browser import open_dashboard, seed_history

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def demo_agent(transactional_db):
    definition_create(
        agent_id="demo", name="Demo Agent", model="offline:demo",
        description="A demo assistant: calculator, clock, and actions that ask before they act.",
        instructions="You are a helpful assistant.", tools=["calculator", "datetime", "demo_actions"],
        add_history_to_context=True, num_history_runs=5,
    )


def test_screenshot_chat_and_approval(browsing, make_user, demo_agent, screenshots_dir):
    make_user("ada")
    page = browsing.chat_as("ada", viewport=(1280, 820))
    page.select_option("#agent-picker", "demo")
    for text in ("Hello! My name is Ada.", '/call add {"a": 2, "b": 40}'):
        page.fill("#composer-input", text)
        page.press("#composer-input", "Enter")
        page.wait_for_selector("body:not(.is-running)")
    page.locator("details.tool summary").last.click()
    page.fill("#composer-input", "Can you also **summarise** this in `markdown`?")
    page.screenshot(path=str(screenshots_dir / "chat.png"))

    page.locator("details.tool summary").last.click()  # folded again, to leave room for the approval
    page.fill("#composer-input", '/call send_email {"to": "bob@example.com", "subject": "Lunch on Friday?"}')
    page.press("#composer-input", "Enter")
    expect(page.locator(".approval").get_by_role("button", name="Approve")).to_be_visible()
    page.wait_for_selector("body:not(.is-running)")
    page.screenshot(path=str(screenshots_dir / "chat-approval.png"))
    assert (screenshots_dir / "chat.png").stat().st_size > 10_000


def test_screenshot_dashboard(browsing, make_user, screenshots_dir):
    from core.tenancy import ALL_USERS
    from metrics.services import RefreshScope, metrics_refresh_run

    seed_history(days=30)
    metrics_refresh_run(scope=RefreshScope.of(ALL_USERS))
    page = open_dashboard(browsing, make_user, "/admin/dashboard/?days=30")
    page.set_viewport_size({"width": 1280, "height": 1500})
    page.screenshot(path=str(screenshots_dir / "dashboard.png"), full_page=True)
    assert (screenshots_dir / "dashboard.png").stat().st_size > 10_000
    page.locator("#usage").screenshot(path=str(screenshots_dir / "dashboard-metrics.png"))
    assert (screenshots_dir / "dashboard-metrics.png").stat().st_size > 10_000


def test_screenshot_my_usage(browsing, make_user, screenshots_dir):
    seed_history(days=30)  # ada's runs among others'
    make_user("ada")
    page = browsing.chat_as("ada", viewport=(1000, 1100))
    page.goto("/chat/usage/")
    page.click("#usage-refresh")
    expect(page.locator("#usage-refreshed")).to_contain_text("Counted up to")
    page.screenshot(path=str(screenshots_dir / "chat-usage.png"))
    assert (screenshots_dir / "chat-usage.png").stat().st_size > 10_000
