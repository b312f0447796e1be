"""Approvals an operator decides, as the run's owner meets them in Chromium: the conversation's
card waits (no Approve for them: their continue would be refused), the sidebar counts the pending
ones, the My approvals page lists them, and an operator's decision shows up by itself, with the
run's continuation. Also the README's pictures of the inbox and of the admin's Approvals queue."""
from __future__ import annotations

import re

import pytest
from django.db import connection
from playwright.sync_api import expect

from agents.pipeline.runs import RunRequest
from agents.pipeline.submit import Finished, submit_run
from approvals.models import Approval
from approvals.services import approval_resolve
from tests.agents import conftest as agents_fixtures
from tests.approvals.conftest import browser_user

from .conftest import PASSWORD, off_thread, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

worker = agents_fixtures.worker  # the embedded worker of this process: it runs the continuation

IDLE = "body:not(.is-running)"
WIRE = '/call wire_funds {"to": "bob", "amount": 100}'


@pytest.fixture(autouse=True)
def approval_agent(settings):
    """The approvals tests' agent (``approval-agent``, with ``wire_funds``) beside the suite's own."""
    settings.AGENT_MODULES = [*settings.AGENT_MODULES, "tests.approvals.agents"]


def send(page, text: str) -> None:
    page.fill("#composer-input", text)
    page.press("#composer-input", "Enter")


def _submit(user: str, message: str) -> Finished:
    try:
        return submit_run(principal=browser_user(user), component_id="approval-agent", request=RunRequest(message=message, stream=False), kind="agent")
    finally:
        connection.close()  # this thread's


def paused(user: str, message: str = WIRE) -> Approval:
    """A run of ``user`` paused on an @approval call, and its pending approval. Run in a thread of
    its own: this one runs Playwright's event loop, where a run cannot be driven synchronously."""
    done = off_thread(_submit, user, message)
    assert isinstance(done, Finished) and done.output["status"] == "PAUSED", done
    return Approval.objects.for_user(user).get(run_id=done.output["run_id"])


def pending_of(user: str) -> Approval:
    return wait_until(lambda: Approval.objects.for_user(user).filter(status="pending").first(), message="the pending approval")


def test_the_card_waits_for_the_operator_and_the_approved_run_continues_by_itself(browsing, make_user, worker):
    make_user("alice")
    page = browsing.chat_as("alice")
    page.select_option("#agent-picker", "approval-agent")
    send(page, WIRE)
    card = page.locator(".operator-approval")
    expect(card).to_contain_text("wire_funds")
    expect(card.locator(".tool-args")).to_contain_text('"bob"')
    expect(card).to_contain_text("Waiting for an operator's approval")
    expect(card).to_contain_text("You can't approve this yourself")
    page.wait_for_selector(IDLE)
    # Nothing for the owner to click: the Approve / Reject panel is for their own confirmations.
    expect(card.get_by_role("button")).to_have_count(0)
    expect(page.locator(".approval")).to_have_count(0)
    expect(page.locator("#approvals-badge")).to_have_text("1")

    approval = pending_of("alice")
    approval_resolve(approval_id=approval.pk, status="approved", resolved_by="root", resolution_data={"note": "fine"})
    worker()
    # The continuation is loaded into the conversation: the answer, and who decided the call.
    reply = page.locator(".msg-assistant").last
    expect(reply.locator(".md").last).to_contain_text("wired 100 to bob", timeout=20_000)
    expect(reply.locator(".operator-record")).to_have_text(re.compile(r"^Approved by root: wire_funds “fine” on .*\d{4}.*\.$"))
    expect(reply.locator("details.tool")).to_have_attribute("data-state", "done")
    expect(page.locator(".operator-approval")).to_have_count(0)
    expect(page.locator("#approvals-badge")).to_be_hidden()
    assert page.errors == []


def test_a_rejection_reaches_the_conversation_with_the_operators_note(browsing, make_user, worker):
    make_user("alice")
    approval = paused("alice")
    page = browsing.chat_as("alice")
    page.goto(f"/chat/s/{approval.session_id}/")
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator(".operator-approval")).to_have_attribute("data-state", "pending")
    approval_resolve(approval_id=approval.pk, status="rejected", resolved_by="root", resolution_data={"note": "not today"})
    worker()
    reply = page.locator(".msg-assistant").last
    expect(reply.locator(".md").last).to_contain_text("rejected by the user: not today", timeout=20_000)
    expect(reply.locator(".operator-record")).to_have_text(re.compile(r"^Rejected by root: wire_funds “not today” on .*\d{4}.*\.$"))
    expect(reply.locator("details.tool")).to_have_attribute("data-state", "rejected")
    assert page.errors == []


def test_a_decision_shows_on_the_waiting_card_before_the_run_goes_on(browsing, make_user):
    make_user("alice")
    approval = paused("alice")
    page = browsing.chat_as("alice")
    page.goto(f"/chat/s/{approval.session_id}/")
    page.wait_for_selector("body[data-ready=true]")
    card = page.locator(".operator-approval")
    expect(card).to_have_attribute("data-state", "pending")
    # Decided, its continuation not started (continue_run=False): the card says so, and waits on.
    approval_resolve(approval_id=approval.pk, status="rejected", resolved_by="root", resolution_data={"note": "not today"}, continue_run=False)
    expect(card).to_have_attribute("data-state", "rejected", timeout=10_000)
    expect(card.locator(".operator-decision")).to_contain_text("Rejected by root: not today")
    expect(card).not_to_contain_text("You can't approve this yourself")
    assert page.errors == []


def test_the_inbox_lists_my_approvals_pending_first_and_follows_a_decision(browsing, make_user):
    make_user("alice")
    decided = paused("alice", '/call wire_funds {"to": "carol", "amount": 7}')
    approval_resolve(approval_id=decided.pk, status="rejected", resolved_by="root", resolution_data={"note": "not today"}, continue_run=False)
    waiting = paused("alice")
    paused("mallory", '/call wire_funds {"to": "mallory", "amount": 999}')  # another user's: never shown
    page = browsing.chat_as("alice")
    badge = page.locator("#approvals-badge")
    expect(badge).to_have_text("1")
    expect(page.locator("#my-approvals")).to_have_attribute("aria-label", "Approvals, 1 pending")

    page.locator("#my-approvals").click()
    expect(page).to_have_url(re.compile(r"/chat/approvals/$"))
    page.wait_for_selector("body[data-ready=true]")
    items = page.locator(".inbox-item")
    expect(items).to_have_count(2)
    first, second = items.nth(0), items.nth(1)
    expect(first).to_have_attribute("data-status", "pending")
    expect(first.locator(".inbox-args")).to_have_text("to: bob, amount: 100")
    expect(first).to_contain_text("Agent Approval Agent")
    expect(first).to_contain_text("Waits for an operator's approval")
    expect(second.locator(".inbox-outcome")).to_contain_text("Rejected by root: not today")
    expect(page.locator("#inbox-list")).not_to_contain_text("mallory")
    expect(page.locator("#inbox-count")).to_have_text("1 waiting · 1 decided")

    # Decided while the page is open: it shows within a refresh.
    approval_resolve(approval_id=waiting.pk, status="approved", resolved_by="root", continue_run=False)
    expect(page.locator(f'.inbox-item[data-approval-id="{waiting.pk}"] .inbox-outcome')).to_contain_text("Approved by root.", timeout=10_000)
    expect(page.locator("#inbox-count")).to_have_text("0 waiting · 2 decided")

    page.locator(f'.inbox-item[data-approval-id="{waiting.pk}"] .inbox-open').click()
    expect(page).to_have_url(re.compile(f"/chat/s/{waiting.session_id}/$"))
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator(".msg-user .msg-body")).to_have_text(WIRE)
    assert page.errors == []


def test_the_inbox_says_when_there_is_nothing(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    expect(page.locator("#approvals-badge")).to_be_hidden()
    page.goto("/chat/approvals/")
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#inbox-empty")).to_be_visible()
    expect(page.locator(".inbox-item")).to_have_count(0)


def seed_queue() -> None:
    """Two pending approvals, of two users, and one an operator rejected."""
    paused("alice")
    paused("ada", '/call wire_funds {"to": "acme-payroll", "amount": 2500}')
    decided = paused("ada", '/call wire_funds {"to": "unknown-vendor", "amount": 9000}')
    approval_resolve(approval_id=decided.pk, status="rejected", resolved_by="root",
                     resolution_data={"note": "vendor not on the list"}, continue_run=False)


def test_screenshot_chat_approvals_inbox(browsing, make_user, screenshots_dir):
    make_user("ada")
    seed_queue()
    page = browsing.chat_as("ada", viewport=(1280, 720))
    expect(page.locator("#approvals-badge")).to_have_text("1")
    page.goto("/chat/approvals/")
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator(".inbox-item")).to_have_count(2)
    page.screenshot(path=str(screenshots_dir / "chat-approvals-inbox.png"))
    assert (screenshots_dir / "chat-approvals-inbox.png").stat().st_size > 10_000


def test_screenshot_admin_approvals_queue(browsing, make_user, screenshots_dir):
    make_user("root", is_staff=True, is_superuser=True)
    seed_queue()
    page = browsing.page(viewport=(1440, 600))
    page.goto("/admin/login/?next=/admin/approvals/approval/%3Fstatus%3Dall")
    page.fill("#id_username", "root")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    expect(page.locator("#result_list tbody tr")).to_have_count(3)
    page.locator("#toggle-nav-sidebar").click()  # folded: room for the queue's columns
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(screenshots_dir / "approvals-queue.png"))
    assert (screenshots_dir / "approvals-queue.png").stat().st_size > 10_000


def test_a_workflow_steps_approval_waits_for_the_operator_and_the_workflow_goes_on(browsing, make_user, worker):
    make_user("alice")
    page = browsing.chat_as("alice")
    page.select_option("#agent-picker", "workflow:approval-flow")
    send(page, '/call wire_funds {"to": "bob", "amount": 7}')
    card = page.locator(".operator-approval")
    expect(card).to_contain_text("wire_funds")
    expect(card).to_contain_text("You can't approve this yourself")
    page.wait_for_selector(IDLE)
    # No review for the owner to answer: the step's call is the operator's.
    expect(page.locator(".wf-approval")).to_have_count(0)
    expect(card.get_by_role("button")).to_have_count(0)

    approval = pending_of("alice")
    assert approval.source_type == "workflow"
    approval_resolve(approval_id=approval.pk, status="approved", resolved_by="root")
    worker()
    reply = page.locator(".msg-assistant").last
    expect(reply).to_contain_text("TOOL WIRE_FUNDS RETURNED: WIRED 7 TO BOB", timeout=20_000)
    expect(page.locator(".operator-approval")).to_have_count(0)
    assert page.errors == []
