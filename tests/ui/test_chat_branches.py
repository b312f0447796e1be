"""Edits branch the conversation, and the sidebar lists conversations only, in Chromium.

An edited message replaces the old one for the model (the reply and every later turn see one
version); the ‹ › arrows switch the whole branch from that message on, and the switch is kept
(a reload, and the next message, continue the branch on screen). Sessions that evals and
schedules make stay out of the conversation list, and say where they came from when opened.
"""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from sessions.models import Run, RunOrigin, RunStatus
from tests.factories import make_run, make_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IDLE = "body:not(.is-running)"


def send(page, text: str) -> None:
    page.fill("#composer-input", text)
    page.press("#composer-input", "Enter")
    page.wait_for_selector(IDLE)


def asked(page):
    return page.locator(".msg-user .msg-body")


def replies(page):
    return page.locator(".msg-assistant .md")


def test_an_edit_branches_what_the_model_sees_and_the_arrows_switch_whole_branches(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice", viewport=(1280, 820))
    page.select_option("#agent-picker", "assistant")
    send(page, "I like green tea")
    send(page, "Pick a drink for me")
    expect(replies(page)).to_have_count(2)

    # Edit the first message: its new version is answered as the first thing said, and the turn
    # that followed the old version goes with it (it belongs to the other branch).
    first = page.locator(".msg-user").first
    first.hover()
    first.get_by_role("button", name="Edit").click()
    first.get_by_label("Edit your message").fill("I like black coffee")
    first.get_by_role("button", name="Send").click()
    page.wait_for_selector(IDLE)
    expect(asked(page)).to_have_text(["I like black coffee"])
    expect(replies(page).last).to_contain_text("This is the first message I see from you.")
    expect(page.locator(".msg-user").first.get_by_role("group", name="Versions of this message")).to_contain_text("2/2")

    # The next turn sees the edited version only.
    send(page, "What do I like?")
    expect(replies(page).last).to_contain_text('I can see 1 earlier message from you; the previous one was: "I like black coffee"')
    expect(replies(page).last).not_to_contain_text("Pick a drink")

    # ‹ shows the first version with the turn that followed it, not the edited branch's turns.
    page.locator(".msg-user").first.get_by_role("button", name="Previous version").click()
    expect(asked(page)).to_have_text(["I like green tea", "Pick a drink for me"])
    expect(page.locator(".msg-user").first.get_by_role("group", name="Versions of this message")).to_contain_text("1/2")
    # The switch is stored: a reload shows the same branch, and the next message continues it.
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    expect(asked(page)).to_have_text(["I like green tea", "Pick a drink for me"])
    send(page, "And now?")
    expect(replies(page).last).to_contain_text('I can see 2 earlier messages from you; the previous one was: "Pick a drink for me"')
    expect(replies(page).last).not_to_contain_text("black coffee")
    runs = {run.input["input_content"]: run for run in Run.objects.for_user("alice").filter(parent_run_id=None)}
    assert [runs[text].branch_active for text in ("I like green tea", "Pick a drink for me", "And now?")] == [True, True, True]
    assert [runs[text].branch_active for text in ("I like black coffee", "What do I like?")] == [False, False]

    # › goes back to the edited branch, down to its last turn.
    page.locator(".msg-user").first.get_by_role("button", name="Next version").click()
    expect(asked(page)).to_have_text(["I like black coffee", "What do I like?"])
    assert page.errors == []


def test_eval_and_schedule_sessions_stay_out_of_the_conversation_list(browsing, make_user):
    make_user("alice")
    make_user("bob")
    talk = make_session("alice", component_id="assistant", session_name="Trip to Lisbon", origin=RunOrigin.CHAT)
    make_run("alice", session=talk, status=RunStatus.COMPLETED, component_id="assistant", origin=RunOrigin.CHAT)
    made = {}
    for origin, name in ((RunOrigin.EVAL, "Eval case: capital of France"), (RunOrigin.SCHEDULE, "Daily digest")):
        made[origin] = make_session("alice", component_id="assistant", session_name=name, origin=origin)
        make_run("alice", session=made[origin], status=RunStatus.COMPLETED, component_id="assistant", origin=origin,
                 input={"input_content": name}, run_data={"content": "done"})
    page = browsing.chat_as("alice", viewport=(1280, 820))
    expect(page.locator("#session-list .session-name")).to_have_text(["Trip to Lisbon"])
    expect(page.locator("#session-origin")).to_be_hidden()

    # Opened from their own pages, they say where they came from and link back there.
    page.goto("/chat/evals/")
    page.get_by_role("link", name="Eval case: capital of France").click()
    page.wait_for_selector("body[data-ready=true]")
    origin = page.locator("#session-origin")
    expect(origin).to_contain_text("An eval made this conversation")
    expect(origin.get_by_role("link", name="Back to My evals")).to_have_attribute("href", "/chat/evals/")
    expect(page.locator("#session-list .session-name")).to_have_text(["Trip to Lisbon"])
    page.goto(f"/chat/s/{made[RunOrigin.SCHEDULE].session_id}/")
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#session-origin")).to_contain_text("A schedule made this conversation")
    # Opening a conversation clears the mark.
    page.locator("#session-list .session-open").first.click()
    expect(page.locator("#session-origin")).to_be_hidden()

    # Another user's evals page lists none of alice's.
    other = browsing.chat_as("bob", viewport=(1280, 820))
    other.goto("/chat/evals/")
    expect(other.get_by_role("link", name="Eval case: capital of France")).to_have_count(0)
    assert page.errors == [] and other.errors == []
