"""Workflows in the chat: picked like agents and teams, their run shown as a live timeline of steps
(Parallel branches side by side, the final content as the reply), rebuilt from the stored run on a
reload, and a paused review confirmed or rejected in place."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from sessions.models import Run, RunStatus

from .conftest import wait_until
from .test_chat_browser import IDLE, last_reply, send

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def pick_workflow(page, workflow_id: str) -> None:
    page.select_option("#agent-picker", f"workflow:{workflow_id}")


def step(reply, name: str):
    return reply.locator(f'.wf-step[data-name="{name}"]')


def workflow_runs(user_id: str, status: str) -> list[Run]:
    return [run for run in Run.objects.for_user(user_id) if not run.parent_run_id and run.status == status]


def test_the_picker_offers_workflows_with_their_steps(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    workflows = page.locator('#agent-picker optgroup[label="Workflows"] option')
    expect(workflows).to_have_text(["Draft Flow", "Review Flow"])
    pick_workflow(page, "draft-flow")
    expect(page.locator("#welcome-agent")).to_have_text("Draft Flow")
    expect(page.locator("#model-badge")).to_have_text("Workflow · 2 steps")
    assert page.locator("#model-badge").get_attribute("title") == "both (Parallel) → shout (Step)"
    page.reload()
    expect(page.locator("#agent-picker")).to_have_value("workflow:draft-flow")
    assert page.errors == []


def test_a_parallel_workflow_runs_as_a_timeline_and_is_rebuilt_after_a_reload(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    pick_workflow(page, "draft-flow")
    send(page, "two drafts please")
    page.wait_for_selector(IDLE)
    reply = last_reply(page)

    def check_timeline(reply):
        expect(reply.locator(".msg-author")).to_have_text("Draft Flow")
        both = step(reply, "both")
        expect(both).to_have_attribute("data-type", "Parallel")
        expect(both).to_have_attribute("data-state", "done")
        branches = both.locator(".wf-branches > .wf-step")
        expect(branches).to_have_count(2)
        expect(branches.locator(".wf-name")).to_have_text(["draft", "check"])
        for branch in branches.all():
            expect(branch).to_have_attribute("data-state", "done")
        # Side by side: the two branches share a row.
        first, second = (branch.bounding_box() for branch in branches.all())
        assert abs(first["y"] - second["y"]) < 2 and second["x"] > first["x"] + first["width"] - 2
        expect(step(reply, "shout")).to_have_attribute("data-state", "done")
        expect(step(reply, "shout").locator(".wf-type")).to_have_text("Step · shout")
        draft = step(reply, "draft")
        toggle = draft.get_by_role("button", name=re.compile("draft"))
        expect(toggle).to_have_attribute("aria-expanded", "false")
        toggle.click()
        expect(draft.locator(".wf-body")).to_contain_text("You said: two drafts please")
        expect(draft.locator(".wf-type")).to_have_text("Step · Drafter")
        expect(reply.locator(".msg-body > .md").last).to_contain_text("YOU SAID: TWO DRAFTS PLEASE")

    check_timeline(reply)
    (run,) = wait_until(lambda: workflow_runs("alice", RunStatus.COMPLETED), message="the workflow run")
    expect(page).to_have_url(re.compile(f"/chat/s/{run.session_id}/$"))
    expect(page.locator(f'.session[data-session-id="{run.session_id}"]')).to_contain_text("Draft Flow")
    page.reload()
    expect(page.locator("#agent-picker")).to_have_value("workflow:draft-flow")
    check_timeline(last_reply(page))
    assert page.errors == []


def test_a_paused_review_is_confirmed_in_place_and_the_run_completes(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    pick_workflow(page, "review-flow")
    send(page, "ship it")
    panel = page.locator(".wf-approval")
    expect(panel).to_contain_text("Publish it?")
    expect(step(last_reply(page), "publish")).to_have_attribute("data-state", "paused")
    expect(step(last_reply(page), "publish").locator(".wf-state")).to_have_text("waiting for your review")
    page.wait_for_selector(IDLE)
    wait_until(lambda: workflow_runs("alice", RunStatus.PAUSED), message="the paused run")

    # Coming back to it, the review waits again.
    page.reload()
    panel = page.locator(".wf-approval")
    expect(step(last_reply(page), "publish")).to_have_attribute("data-state", "paused")
    panel.get_by_role("button", name="Confirm").click()
    expect(panel).to_contain_text("You confirmed this.")
    page.wait_for_selector(IDLE)
    reply = last_reply(page)
    expect(step(reply, "publish")).to_have_attribute("data-state", "done")
    expect(reply.locator(".msg-body > .md").last).to_have_text("SHIP IT")
    wait_until(lambda: workflow_runs("alice", RunStatus.COMPLETED), message="the completed run")
    page.reload()
    expect(step(last_reply(page), "publish")).to_have_attribute("data-state", "done")
    expect(page.locator(".wf-approval")).to_have_count(0)
    expect(last_reply(page).locator(".approval-record")).to_have_text("You (alice) confirmed publish.")
    assert page.errors == []


def test_a_rejected_review_skips_its_step(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    pick_workflow(page, "review-flow")
    send(page, "hold it")
    page.wait_for_selector(IDLE)
    page.locator(".wf-approval").get_by_role("button", name="Reject").click()
    expect(page.locator(".wf-approval")).to_contain_text("You rejected this.")
    page.wait_for_selector(IDLE)
    wait_until(lambda: workflow_runs("alice", RunStatus.COMPLETED), message="the run to end")
    # on_reject="skip": the step never ran, the run completed without it.
    expect(step(last_reply(page), "publish")).to_have_attribute("data-state", "skipped")
    expect(last_reply(page).locator(".msg-body > .md").last).to_have_text("No steps executed")
    page.reload()
    expect(step(last_reply(page), "publish")).to_have_attribute("data-state", "skipped")
    expect(last_reply(page).locator(".approval-record")).to_have_text("You (alice) rejected publish.")
    assert page.errors == []


def test_screenshot_workflow_review(browsing, make_user, screenshots_dir, more_workflows):
    """docs/workflow-review.png: a workflow's timeline paused for review, its first step's answer given."""
    make_user("ada")
    page = browsing.chat_as("ada", viewport=(1280, 820))
    pick_workflow(page, "letter-flow")
    send(page, "a letter to the committee")
    page.wait_for_selector(IDLE)
    panel = page.locator(".wf-approval:not(.is-sent)")
    panel.get_by_label("recipient").fill("the committee")
    panel.get_by_label("copies").fill("3")
    panel.get_by_role("button", name="Submit").click()
    page.wait_for_selector(IDLE)
    expect(page.locator(".wf-approval:not(.is-sent)")).to_contain_text("Which tone?")
    expect(page.locator(".wf-approval:not(.is-sent) button").first).to_be_enabled()
    page.evaluate("document.getElementById('messages').scrollTop = 1e6")
    page.screenshot(path=str(screenshots_dir / "workflow-review.png"))
    assert (screenshots_dir / "workflow-review.png").stat().st_size > 10_000


@pytest.fixture
def more_workflows(settings):
    """The chat's own test workflows (an input form, a loop, every kind of review) beside the suite's."""
    settings.AGENT_MODULES = [*settings.AGENT_MODULES, "tests.ui.workflows"]


def test_an_input_schema_is_a_form_and_a_loop_counts_its_iterations(browsing, make_user, more_workflows):
    make_user("alice")
    page = browsing.chat_as("alice")
    pick_workflow(page, "order-flow")
    form = page.get_by_role("group", name="Order Flow's input")
    expect(page.locator("#composer-input")).to_be_hidden()
    form.get_by_label("item").fill("tea")
    form.get_by_label("rush").check()
    form.get_by_label("size").select_option("M")
    page.get_by_role("button", name="Send").click()
    expect(form.get_by_label("count")).to_have_attribute("aria-invalid", "true")  # required, still empty
    form.get_by_label("count").fill("3")
    page.get_by_role("button", name="Send").click()
    page.wait_for_selector(IDLE)
    reply = last_reply(page)
    expect(page.locator(".msg-user").last).to_contain_text('"item":"tea"')
    expect(step(reply, "order").locator(".wf-body")).to_be_attached()
    step(reply, "order").get_by_role("button").click()
    expect(step(reply, "order").locator(".wf-body")).to_contain_text('Order: {"count": 3, "item": "tea", "rush": true, "size": "M"}')
    loop = step(reply, "repeat")
    expect(loop).to_have_attribute("data-state", "done")
    expect(loop.locator("> .wf-head .wf-iteration")).to_have_text("iteration 2 of 2")
    page.reload()
    expect(step(last_reply(page), "repeat").locator("> .wf-head .wf-iteration")).to_have_text("iteration 2 of 2")
    assert page.errors == []


def test_user_input_a_route_choice_and_an_output_review_are_answered_in_place(browsing, make_user, more_workflows):
    make_user("alice")
    page = browsing.chat_as("alice")
    pick_workflow(page, "letter-flow")
    send(page, "a letter")
    page.wait_for_selector(IDLE)
    panel = page.locator(".wf-approval:not(.is-sent)")
    expect(panel).to_contain_text("Who is the letter for?")
    panel.get_by_label("recipient").fill("Ada")
    panel.get_by_label("copies").fill("2")
    panel.get_by_role("button", name="Submit").click()
    page.wait_for_selector(IDLE)
    reply = last_reply(page)
    expect(step(reply, "greet")).to_have_attribute("data-state", "done")

    panel = page.locator(".wf-approval:not(.is-sent)")
    expect(panel).to_contain_text("Which tone?")
    panel.get_by_label("casual").check()
    panel.get_by_role("button", name="Continue").click()
    page.wait_for_selector(IDLE)
    expect(step(reply, "casual")).to_have_attribute("data-state", "done")
    expect(step(reply, "formal")).to_have_attribute("data-state", "skipped")

    panel = page.locator(".wf-approval:not(.is-sent)")
    expect(panel).to_contain_text("Keep this letter?")
    expect(panel.locator(".wf-output")).to_contain_text("Polished: Dear Ada, x2. Cheers!")
    panel.get_by_role("button", name="Edit").click()
    panel.get_by_label("Edited output").fill("Dear Ada, see you soon.")
    panel.get_by_role("button", name="Save edit").click()
    page.wait_for_selector(IDLE)
    expect(reply.locator(".msg-body > .md").last).to_have_text("Dear Ada, see you soon.")
    expect(step(reply, "polish")).to_have_attribute("data-state", "done")
    wait_until(lambda: workflow_runs("alice", RunStatus.COMPLETED), message="the letter")
    page.reload()
    records = last_reply(page).locator(".approval-record")
    expect(records).to_have_text(["You (alice) answered greet.", "You (alice) chose casual for tone.", "You (alice) edited the output of polish."])
    assert page.errors == []


def test_an_agent_step_streams_live_and_a_reload_follows_the_run(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    pick_workflow(page, "draft-flow")
    send(page, "/slow 3")
    draft = step(last_reply(page), "draft")
    expect(draft).to_have_attribute("data-state", "running")
    expect(step(last_reply(page), "shout")).to_have_attribute("data-state", "waiting")
    page.wait_for_selector('.wf-step[data-name="draft"] .wf-body:not([hidden])')  # open while its words arrive
    expect(page).to_have_url(re.compile("/chat/s/"))
    page.reload()
    reply = last_reply(page)
    page.wait_for_selector(IDLE, timeout=30000)
    expect(step(reply, "both")).to_have_attribute("data-state", "done")
    expect(step(reply, "shout")).to_have_attribute("data-state", "done")
    expect(reply.locator(".wf-step")).to_have_count(4)  # the replay fills the same rows, no duplicates
    assert page.errors == []


def test_stop_cancels_the_workflow_run(browsing, make_user):
    make_user("alice")
    page = browsing.chat_as("alice")
    pick_workflow(page, "draft-flow")
    send(page, "/slow 8")
    page.wait_for_selector('.wf-step[data-name="draft"] .wf-body:not([hidden])')
    page.keyboard.press("Escape")
    page.wait_for_selector(IDLE)
    reply = last_reply(page)
    expect(reply.locator(".msg-note-stopped")).to_have_text("Stopped")
    expect(step(reply, "draft")).to_have_attribute("data-state", "cancelled")
    expect(step(reply, "shout")).to_have_attribute("data-state", "skipped")
    wait_until(lambda: workflow_runs("alice", RunStatus.CANCELLED), message="the workflow run to be cancelled")
    page.reload()
    expect(step(last_reply(page), "draft")).not_to_have_attribute("data-state", "running")
    assert page.errors == []


def test_an_agent_steps_tool_call_is_approved_from_the_timeline(browsing, make_user, more_workflows):
    make_user("alice")
    page = browsing.chat_as("alice")
    pick_workflow(page, "guard-flow")
    send(page, '/call delete_file {"path": "a.txt"}')
    page.wait_for_selector(IDLE)
    panel = page.locator(".wf-approval:not(.is-sent)")
    expect(panel).to_contain_text("Cleaner wants to run delete_file and needs your approval.")
    expect(panel.locator(".tool-args")).to_contain_text("a.txt")
    expect(step(last_reply(page), "clean")).to_have_attribute("data-state", "paused")
    panel.get_by_role("button", name="Approve").click()
    page.wait_for_selector(IDLE)
    reply = last_reply(page)
    expect(step(reply, "clean")).to_have_attribute("data-state", "done")
    expect(reply.locator(".msg-body > .md").last).to_contain_text("deleted a.txt")
    wait_until(lambda: workflow_runs("alice", RunStatus.COMPLETED), message="the workflow run")
    assert page.errors == []


def test_a_failed_step_that_pauses_is_retried_from_the_timeline(browsing, make_user, more_workflows):
    make_user("alice")
    page = browsing.chat_as("alice")
    pick_workflow(page, "print-flow")
    send(page, "page one")
    page.wait_for_selector(IDLE)
    panel = page.locator(".wf-approval:not(.is-sent)")
    expect(panel).to_contain_text("Step “print” failed:")
    expect(panel).to_contain_text("out of paper")
    expect(step(last_reply(page), "print")).to_have_attribute("data-state", "paused")
    panel.get_by_role("button", name="Retry").click()
    page.wait_for_selector(IDLE)
    reply = last_reply(page)
    expect(step(reply, "print")).to_have_attribute("data-state", "done")
    expect(reply.locator(".msg-body > .md").last).to_have_text("Printed: page one")
    wait_until(lambda: workflow_runs("alice", RunStatus.COMPLETED), message="the workflow run")
    page.reload()
    expect(step(last_reply(page), "print")).to_have_attribute("data-state", "done")
    expect(page.locator(".wf-approval")).to_have_count(0)
    assert page.errors == []


def test_a_review_nested_in_a_container_is_answered_in_place_and_goes_on_from_there(browsing, make_user):
    from agents.services.definitions import workflow_definition_create

    workflow_definition_create(workflow_id="nested-review", name="Nested Review", steps=[
        {"type": "Steps", "name": "outer", "steps": [
            {"type": "Step", "name": "loud", "executor_ref": "shout"},
            {"type": "Step", "name": "publish", "executor_ref": "exclaim",
             "human_review": {"requires_confirmation": True, "confirmation_message": "Publish the nested one?"}},
        ]},
    ])
    make_user("alice")
    page = browsing.chat_as("alice")
    pick_workflow(page, "nested-review")
    send(page, "ship it")
    panel = page.locator(".wf-approval")
    expect(panel).to_contain_text("Publish the nested one?")
    expect(step(last_reply(page), "publish")).to_have_attribute("data-state", "paused")
    expect(step(last_reply(page), "loud")).to_have_attribute("data-state", "done")
    page.wait_for_selector(IDLE)
    wait_until(lambda: workflow_runs("alice", RunStatus.PAUSED), message="the paused run")
    page.reload()
    panel = page.locator(".wf-approval")
    panel.get_by_role("button", name="Confirm").click()
    expect(panel).to_contain_text("You confirmed this.")
    page.wait_for_selector(IDLE)
    reply = last_reply(page)
    expect(step(reply, "publish")).to_have_attribute("data-state", "done")
    expect(step(reply, "outer")).to_have_attribute("data-state", "done")
    (run,) = wait_until(lambda: workflow_runs("alice", RunStatus.COMPLETED), message="the completed run")
    assert [s["content"] for s in run.run_data["step_results"][0]["steps"]] == ["SHIP IT", "SHIP IT!"]
    assert page.errors == []
