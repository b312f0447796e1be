"""My schedules in Chromium: the cron helper shows the next five runs in the chosen zone (and
the parser's reason for a bad expression), a schedule is created, run now, its history links to
the conversation its run made, and it is disabled. Another user's schedules never show. Also
the README's picture of the page."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from scheduler.models import Schedule, ScheduleRun
from scheduler.services.schedules import schedule_create
from tests.agents import conftest as agents_fixtures

from .conftest import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

worker = agents_fixtures.worker  # the embedded worker of this process: it runs the fired schedules


def test_my_schedules_create_preview_run_now_and_disable(browsing, make_user, worker, screenshots_dir) -> None:
    make_user("alice")
    make_user("bob")
    schedule_create(owner_id="bob", name="bobs secret", endpoint="/agents/assistant/runs", cron_expr="0 6 * * *", payload={"message": "bob only"})
    page = browsing.chat_as("alice")
    page.click("#my-schedules")
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#schedules-empty")).to_be_visible()
    page.fill("#schedule-timezone", "America/New_York")
    page.fill("#schedule-cron", "30 7 * * 1-5")
    expect(page.locator("#cron-next li")).to_have_count(5)
    expect(page.locator("#cron-next li").first).to_contain_text("7:30")
    page.fill("#schedule-cron", "every morning")
    expect(page.locator("#cron-error")).to_contain_text("Invalid cron expression: every morning")
    expect(page.locator("#schedule-create")).to_be_disabled()
    page.fill("#schedule-cron", "30 7 * * 1-5")
    expect(page.locator("#cron-next li")).to_have_count(5)
    page.fill("#schedule-name", "Morning briefing")
    page.fill("#schedule-message", "Summarise what happened overnight")
    page.click("#schedule-create")
    item = page.locator(".inbox-item", has_text="Morning briefing")
    expect(item).to_contain_text("30 7 * * 1-5")
    expect(item).to_contain_text("America/New_York")
    stored = Schedule.objects.for_user("alice").get(name="Morning briefing")
    assert (stored.timezone, stored.payload, stored.target_id) == ("America/New_York", {"message": "Summarise what happened overnight"}, "assistant")
    assert "bobs secret" not in page.content()

    item.locator("[data-action=trigger]").click()
    run = wait_until(lambda: ScheduleRun.objects.for_user("alice").filter(schedule_id=stored.pk).first(), message="the fire")
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    link = page.locator(f".schedule-history a[href='/chat/s/{run.session_id}/']")
    expect(link).to_be_visible()
    page.screenshot(path=str(screenshots_dir / "chat-schedules.png"), full_page=True)

    page.locator(".inbox-item", has_text="Morning briefing").locator("[data-action=disable]").click()
    expect(page.locator(".inbox-item", has_text="Morning briefing").locator(".inbox-status")).to_have_text("Off")
    assert Schedule.objects.for_user("alice").get(pk=stored.pk).enabled is False
    link = page.locator(f".schedule-history a[href='/chat/s/{run.session_id}/']")
    link.click()
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("main")).to_contain_text("Summarise what happened overnight")
    assert page.errors == []
