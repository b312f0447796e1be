"""The admin's workflow composer in a browser, under the Content Security Policy: the draft's
graph drawn as cards, a Parallel of an agent and a team composed with the buttons and selects,
saved as the JSON the server validates, then published (docs/admin-workflow-composer.png with
``make screenshots``)."""
from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from agents.models import WorkflowDefinition
from agents.registry import workflow_get
from agents.services.definitions import publish_draft, workflow_definition_create

from .conftest import off_thread
from .test_workflow_admin_browser import signed_in_operator

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_parallel_is_composed_with_the_cards_saved_and_published(browsing, make_user, screenshots_dir) -> None:
    flow = off_thread(lambda: workflow_definition_create(workflow_id="composed", name="Composed", steps=[{"type": "Step", "name": "loud", "executor_ref": "shout"}]))
    page = signed_in_operator(browsing, make_user, f"/admin/agents/workflowdefinition/{flow.pk}/change/")
    composer = page.get_by_test_id("workflow-composer")
    expect(composer.locator(".wc-step")).to_have_count(1)  # the draft v2, a copy of v1
    expect(composer.locator(".wc-step .wc-name")).to_have_value("loud")

    top = composer.locator("ol[data-list=steps]").first
    top.locator(":scope > .wc-add select").select_option("Parallel")
    top.locator(":scope > .wc-add button").click()
    parallel = composer.locator(".wc-parallel")
    expect(parallel).to_have_count(1)
    for executor_kind, executor_id in (("agent_id", "assistant"), ("team_id", "research-team")):
        branches = parallel.locator("ol[data-list=steps]")
        branches.locator(":scope > .wc-add button").click()
        branch = branches.locator(":scope > .wc-step").last
        branch.get_by_label("executor kind").select_option(executor_kind)
        branch.get_by_label("executor", exact=True).select_option(executor_id)
    parallel.locator(".wc-head .wc-name").first.fill("both")
    parallel.locator(":scope > .wc-head").get_by_role("button", name="move up").click()  # the Parallel first, then shout
    assert page.errors == []
    composer.screenshot(path=str(screenshots_dir / "admin-workflow-composer.png"))

    written = json.loads(page.locator("#id_versions-0-steps").input_value())
    assert written == [
        {"type": "Parallel", "name": "both", "steps": [
            {"type": "Step", "name": "step-1", "agent_id": "assistant"},
            {"type": "Step", "name": "step-2", "team_id": "research-team"},
        ]},
        {"type": "Step", "name": "loud", "executor_ref": "shout"},
    ]
    page.get_by_role("button", name="Save and continue editing").click()
    expect(page.locator(".messagelist")).to_contain_text("was changed successfully")

    def publish() -> tuple[int, list[str]]:
        publish_draft(WorkflowDefinition.objects.get(workflow_id="composed"))
        entry = workflow_get("composed")
        return entry.version, [step.name for step in entry.build(None).steps]

    assert off_thread(publish) == (2, ["both", "loud"])


def test_json_the_composer_cannot_draw_leaves_the_text_box_to_fix_it(browsing, make_user) -> None:
    page = signed_in_operator(browsing, make_user, "/admin/agents/workflowdefinition/add/")
    composer = page.get_by_test_id("workflow-composer")
    expect(composer.locator(".wc-add button")).to_have_count(1)  # an empty graph: only "Add step"
    page.locator("#id_versions-0-steps").fill('{"type": "Step"')
    expect(composer).to_contain_text("The JSON below is not a list of steps yet")
    page.locator("#id_versions-0-steps").fill('[{"type": "Step", "name": "typed", "executor_ref": "exclaim"}]')
    expect(composer.locator(".wc-step .wc-name")).to_have_value("typed")
    assert page.errors == []
