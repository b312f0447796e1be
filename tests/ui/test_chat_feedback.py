"""Thumbs up or down, with a comment, on each reply (Chromium), and the README's screenshot of it."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from sessions.models import RunFeedback, RunStatus
from tests.factories import make_feedback, make_run, make_session

from .conftest import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IDLE = "body:not(.is-running)"


def feedback_of(user_id: str) -> list[tuple[str, str, str]]:
    return list(RunFeedback.objects.for_user(user_id).order_by("created_at").values_list("run_id", "rating", "comment"))


def send(page, text: str) -> None:
    page.fill("#composer-input", text)
    page.press("#composer-input", "Enter")
    page.wait_for_selector(IDLE)


def test_a_reply_is_rated_commented_changed_and_shown_again_after_a_reload(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    page.select_option("#agent-picker", "assistant")
    send(page, "Hello there")
    reply = page.locator(".msg-assistant").last
    up = reply.get_by_role("button", name="Good reply")
    down = reply.get_by_role("button", name="Bad reply")
    expect(up).to_have_attribute("aria-pressed", "false")

    up.click()
    expect(up).to_have_attribute("aria-pressed", "true")
    expect(reply.locator(".fb-status")).to_have_text("Thanks for your feedback.")
    (run_id, rating, comment), = wait_until(lambda: feedback_of("alice"), message="the rating to be stored")
    assert (rating, comment) == ("up", "")

    # Changing its mind: a thumbs-down asks what was wrong.
    down.click()
    expect(down).to_have_attribute("aria-pressed", "true")
    expect(up).to_have_attribute("aria-pressed", "false")
    reply.get_by_label("What was wrong with it? (optional)").fill("It did not answer my question.")
    reply.get_by_role("button", name="Send").click()
    expect(reply.locator(".fb-comment")).to_have_text("“It did not answer my question.”")
    assert wait_until(lambda: feedback_of("alice") == [(run_id, "down", "It did not answer my question.")], message="the change")

    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    reply = page.locator(".msg-assistant").last
    expect(reply.get_by_role("button", name="Bad reply")).to_have_attribute("aria-pressed", "true")
    expect(reply.locator(".fb-comment")).to_have_text("“It did not answer my question.”")

    # Pressing the lit thumb again takes the rating back.
    reply.get_by_role("button", name="Bad reply").click()
    expect(reply.get_by_role("button", name="Bad reply")).to_have_attribute("aria-pressed", "false")
    assert wait_until(lambda: feedback_of("alice") == [], message="the rating to be withdrawn")
    assert page.errors == []


def test_each_finished_reply_of_a_stored_conversation_shows_its_own_rating(browsing, make_user):
    make_user("alice")
    session = make_session("alice", component_id="assistant", session_name="Rated")
    first = make_run("alice", session=session, status=RunStatus.COMPLETED, component_id="assistant",
                     input={"input_content": "one"}, run_data={"content": "First answer"})
    make_run("alice", session=session, status=RunStatus.COMPLETED, component_id="assistant",
             input={"input_content": "two"}, run_data={"content": "Second answer"})
    make_run("alice", session=session, status=RunStatus.ERROR, component_id="assistant",
             input={"input_content": "three"}, run_data={"content": "boom"})
    make_feedback("alice", run=first, rating="up", comment="Spot on")
    page = browsing.chat_as("alice")
    page.goto(f"/chat/s/{session.session_id}/")
    page.wait_for_selector("body[data-ready=true]")
    replies = page.locator(".msg-assistant")
    expect(replies).to_have_count(3)
    expect(replies.nth(0).get_by_role("button", name="Good reply")).to_have_attribute("aria-pressed", "true")
    expect(replies.nth(0).locator(".fb-comment")).to_have_text("“Spot on”")
    expect(replies.nth(1).get_by_role("button", name="Good reply")).to_have_attribute("aria-pressed", "false")
    expect(replies.nth(2).locator(".msg-feedback")).to_have_count(0)  # a failed reply has nothing to rate
    assert page.errors == []


def test_screenshot_feedback(browsing, make_user, screenshots_dir):
    make_user("ada")
    page = browsing.chat_as("ada", viewport=(1280, 720))
    page.select_option("#agent-picker", "assistant")
    send(page, "Hello! My name is Ada.")
    send(page, "What is 2 + 40?")
    page.locator(".msg-assistant").first.get_by_role("button", name="Good reply").click()
    reply = page.locator(".msg-assistant").last
    reply.get_by_role("button", name="Bad reply").click()
    reply.get_by_label("What was wrong with it? (optional)").fill("I expected the number, not an echo.")
    page.screenshot(path=str(screenshots_dir / "chat-feedback.png"))
    assert (screenshots_dir / "chat-feedback.png").stat().st_size > 10_000
