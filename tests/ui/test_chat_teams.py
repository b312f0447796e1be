"""Teams in the chat: picked like agents, their members' work shown as steps under the team's reply
(live, and again after a reload), and a member's paused tool call approved from the team's reply."""
from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from sessions.models import Run, RunStatus

from .conftest import wait_until
from .test_chat_browser import IDLE, last_reply, send

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def delegate(member_id: str, task: str) -> str:
    """The offline leader's message that delegates ``task`` to ``member_id``."""
    return "/call delegate_task_to_member " + json.dumps({"member_id": member_id, "task": task})


def pick_team(page, team_id: str) -> None:
    page.select_option("#agent-picker", f"team:{team_id}")


def test_the_picker_groups_agents_and_teams_and_names_the_mode(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    expect(page.get_by_label("Talk to")).to_be_visible()
    groups = page.locator("#agent-picker optgroup")
    expect(groups).to_have_count(3)
    assert groups.evaluate_all("nodes => nodes.map(node => node.label)") == ["Agents", "Teams", "Workflows"]
    teams = page.locator('#agent-picker optgroup[label="Teams"] option')
    expect(teams).to_have_text(["Research Team (coordinate)", "HITL Team (route)"])
    pick_team(page, "research-team")
    expect(page.locator("#welcome-agent")).to_have_text("Research Team")
    expect(page.locator("#model-badge")).to_have_text("Offline demo model · coordinate team")
    assert "Researcher, Writer" in page.locator("#model-badge").get_attribute("title")
    # Remembered like an agent.
    page.reload()
    expect(page.locator("#agent-picker")).to_have_value("team:research-team")
    assert page.errors == []


def test_a_team_reply_streams_its_members_steps_and_rebuilds_them_after_a_reload(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    pick_team(page, "research-team")
    send(page, "writer, draft a haiku")
    page.wait_for_selector(IDLE)
    reply = last_reply(page)
    expect(reply.locator(".msg-author")).to_have_text("Research Team")
    expect(reply.locator(".md").last).to_contain_text("The team answered:")
    step = reply.locator(".member-step")
    expect(step).to_have_count(1)
    expect(step).to_have_attribute("data-state", "done")
    toggle = step.get_by_role("button", name=re.compile("Writer"))
    expect(toggle).to_contain_text("done")
    expect(toggle).to_have_attribute("aria-expanded", "false")  # folded once the member is done
    expect(step.locator(".step-body")).to_be_hidden()
    expect(reply.locator("details.tool")).to_have_count(0)  # the delegation is the step, not a tool card
    toggle.focus()
    page.keyboard.press("Enter")
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(step.locator(".step-body .md")).to_contain_text("You said: writer, draft a haiku")
    # Copy copies the team's answer, not the members' work.
    assert "The team answered" in reply.evaluate("node => node.textContent")

    (run,) = wait_until(lambda: [one for one in Run.objects.for_user("alice") if not one.parent_run_id and one.status == RunStatus.COMPLETED], message="the team run")
    expect(page).to_have_url(re.compile(f"/chat/s/{run.session_id}/$"))
    session = page.locator(f'.session[data-session-id="{run.session_id}"]')
    expect(session).to_contain_text("Research Team")

    page.reload()
    reply = last_reply(page)
    expect(reply.locator(".msg-author")).to_have_text("Research Team")
    expect(page.locator("#agent-picker")).to_have_value("team:research-team")
    step = reply.locator(".member-step")
    expect(step).to_have_count(1)
    toggle = step.get_by_role("button", name=re.compile("Writer"))
    expect(toggle).to_have_attribute("aria-expanded", "false")
    toggle.click()
    expect(step.locator(".step-body .md")).to_contain_text("You said: writer, draft a haiku")
    expect(reply.locator(".md").last).to_contain_text("The team answered:")

    # The conversation goes on with the team from the sidebar, a new chat first.
    page.click("#new-chat")
    session.locator(".session-open").click()
    expect(page.locator(".member-step")).to_have_count(1)
    send(page, "researcher, find a fact")
    page.wait_for_selector(IDLE)
    expect(last_reply(page).get_by_role("button", name=re.compile("Researcher"))).to_contain_text("done")
    assert page.errors == []


def test_a_member_step_streams_live_and_a_reload_follows_the_team_run(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    pick_team(page, "research-team")
    send(page, delegate("writer", "/slow 3"))
    step = last_reply(page).locator(".member-step")
    expect(step).to_have_attribute("data-state", "running")
    expect(step.get_by_role("button", name=re.compile("Writer"))).to_have_attribute("aria-expanded", "true")  # open while it works
    page.wait_for_selector(".member-step .step-body .md")  # its words arrive while it works
    expect(page.locator("#live-status")).to_have_text("Writer is working on it.")  # said to screen readers
    expect(page).to_have_url(re.compile("/chat/s/"))
    page.reload()
    reply = last_reply(page)
    expect(reply).to_have_class(re.compile("is-streaming"))
    page.wait_for_selector(IDLE, timeout=20000)
    step = reply.locator(".member-step")
    expect(step).to_have_count(1)
    expect(step).to_have_attribute("data-state", "done")
    expect(reply.locator(".md").last).to_contain_text("The team answered:")
    assert page.errors == []


def test_a_members_paused_tool_call_is_approved_from_the_teams_reply(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    pick_team(page, "hitl-team")
    send(page, delegate("hitl-member", '/call delete_file {"path": "a.txt"}'))
    panel = page.locator(".approval")
    expect(panel).to_contain_text("HITL Member wants to run delete_file and needs your approval.")
    expect(panel.locator(".tool-args")).to_contain_text("a.txt")
    step = last_reply(page).locator(".member-step")
    expect(step).to_have_attribute("data-state", "paused")
    expect(step.get_by_role("button", name=re.compile("HITL Member"))).to_contain_text("waiting for your approval")
    page.wait_for_selector(IDLE)

    # Coming back to it, the step and the approval are rebuilt from the stored runs.
    page.reload()
    panel = page.locator(".approval")
    expect(panel).to_contain_text("HITL Member wants to run delete_file")
    step = last_reply(page).locator(".member-step")
    expect(step).to_have_attribute("data-state", "paused")
    panel.get_by_role("button", name="Approve").click()
    expect(panel).to_contain_text("You approved this.")
    page.wait_for_selector(IDLE)
    expect(step).to_have_attribute("data-state", "done")
    step.get_by_role("button", name=re.compile("HITL Member")).click()
    card = step.locator("details.tool")
    expect(card).to_have_attribute("data-state", "done")
    card.locator("summary").click()
    expect(card.locator(".tool-result")).to_contain_text("deleted a.txt")
    expect(last_reply(page).locator(".md").last).to_contain_text("deleted a.txt")
    team = wait_until(lambda: [one for one in Run.objects.for_user("alice") if not one.parent_run_id and one.status == RunStatus.COMPLETED], message="the team run to complete")
    assert len(team) == 1
    # The decision is kept in the member's step.
    page.reload()
    step = last_reply(page).locator(".member-step")
    step.get_by_role("button", name=re.compile("HITL Member")).click()
    expect(step.locator(".approval-record")).to_contain_text("You (alice) approved delete_file")
    expect(page.locator(".approval")).to_have_count(0)
    assert page.errors == []


def test_a_rejected_member_tool_call_is_shown_in_its_step(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    pick_team(page, "hitl-team")
    send(page, delegate("hitl-member", '/call delete_file {"path": "keep.txt"}'))
    panel = page.locator(".approval")
    panel.get_by_role("button", name="Reject").click()
    expect(panel).to_contain_text("You rejected this.")
    page.wait_for_selector(IDLE)
    step = last_reply(page).locator(".member-step")
    expect(step).not_to_have_attribute("data-state", "paused")
    expect(step.locator("details.tool")).to_have_attribute("data-state", "rejected")
    assert page.errors == []


def test_screenshot_team_reply(browsing, make_user, screenshots_dir):
    """docs/team-reply.png: a team's replies with their members' steps opened."""
    make_user("ada")
    page = browsing.chat_as("ada", viewport=(1280, 820))
    pick_team(page, "research-team")
    for text in ("researcher, what is a haiku?", delegate("writer", '/call add {"a": 5, "b": 7}')):
        send(page, text)
        page.wait_for_selector(IDLE)
    for toggle in page.locator(".member-step .step-toggle").all():
        toggle.click()
    expect(page.locator('.member-step .step-toggle[aria-expanded="true"]')).to_have_count(2)
    page.evaluate("document.getElementById('messages').scrollTop = 1e6")
    page.screenshot(path=str(screenshots_dir / "team-reply.png"))
    assert (screenshots_dir / "team-reply.png").stat().st_size > 10_000


def test_stop_cancels_the_team_run_and_its_working_member(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    pick_team(page, "research-team")
    send(page, delegate("writer", "/slow 8"))
    page.wait_for_selector(".member-step .step-body .md")
    page.keyboard.press("Escape")
    page.wait_for_selector(IDLE)
    reply = last_reply(page)
    expect(reply.locator(".msg-note-stopped")).to_have_text("Stopped")
    expect(reply.locator(".member-step")).to_have_attribute("data-state", "cancelled")
    expect(reply.get_by_role("button", name=re.compile("Writer"))).to_contain_text("stopped")
    wait_until(lambda: [one for one in Run.objects.for_user("alice") if not one.parent_run_id and one.status == RunStatus.CANCELLED], message="the team run to be cancelled")
    page.reload()
    expect(last_reply(page).locator(".member-step")).not_to_have_attribute("data-state", "running")
    assert page.errors == []


def test_a_team_reply_is_regenerated_and_its_message_edited_with_fresh_steps(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    pick_team(page, "research-team")
    send(page, "writer, draft a haiku")
    page.wait_for_selector(IDLE)
    last_reply(page).get_by_role("button", name="Regenerate").click()
    page.wait_for_selector(IDLE)
    expect(page.locator(".msg-assistant")).to_have_count(1)  # the new answer took the old one's place
    expect(last_reply(page).get_by_role("button", name=re.compile("Writer"))).to_contain_text("done")

    asked = page.locator(".msg-user")
    asked.hover()
    asked.get_by_role("button", name="Edit").click()
    asked.get_by_label("Edit your message").fill("researcher, find a fact")
    asked.get_by_role("button", name="Send").click()
    page.wait_for_selector(IDLE)
    expect(page.locator(".msg-user").get_by_role("group", name="Versions of this message")).to_contain_text("2/2")
    reply = last_reply(page)
    expect(reply.locator(".member-step")).to_have_count(1)
    expect(reply.get_by_role("button", name=re.compile("Researcher"))).to_contain_text("done")
    expect(reply.locator(".md").last).to_contain_text("You said: researcher, find a fact")
    page.locator(".msg-user").get_by_role("button", name="Previous version").click()
    expect(last_reply(page).get_by_role("button", name=re.compile("Writer"))).to_be_visible()
    assert page.errors == []
