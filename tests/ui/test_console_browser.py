"""The operator console in Chromium (issue 34, item 10): the product's header, the index grouped by
the operator's tasks, a runs list that fits a 1,400 px screen, and a workflow composer whose JSON
box is wide enough to read and whose errors mark only the step that is wrong (docs/admin-console.png
with ``make screenshots``)."""
from __future__ import annotations

import re
import uuid

import pytest
from playwright.sync_api import expect

from agents.services.definitions import workflow_definition_create
from sessions.models import Run
from tests.factories import make_run, make_session

from .conftest import PASSWORD, off_thread

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _runs() -> None:
    for number in range(5):
        session = make_session("someone.with.a.long.address@example.com", session_id=str(uuid.uuid4()), component_id="research-team")
        run = make_run(
            "someone.with.a.long.address@example.com", session=session, run_id=str(uuid.uuid4()), component_id="research-team",
            input={"input_content": f"Summarise the quarterly report number {number} and list every risk it names, " * 3},
            status="COMPLETED",
        )
        Run.all_users.filter(pk=run.pk).update(content="The report names three risks: supply, currency and staffing. " * 3, duration=2.4, total_tokens=12345)


def test_screenshot_the_console_is_branded_grouped_fits_the_screen_and_composes_workflows(browsing, make_user, screenshots_dir) -> None:
    off_thread(_runs)
    flow = off_thread(lambda: workflow_definition_create(workflow_id="checked", name="Checked", steps=[
        {"type": "Step", "name": "first", "executor_ref": "shout"},
        {"type": "Step", "name": "second", "executor_ref": "shout"},
    ]))
    make_user("operator", is_staff=True, is_superuser=True)
    page = browsing.page(viewport=(1400, 900))
    page.goto("/admin/login/")
    expect(page.locator("#site-name")).to_have_text("Agno Site · operator console")
    page.fill("#id_username", "operator")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")

    expect(page).to_have_title("Operator console | Agno Site console")
    captions = page.locator("#content-main .module caption")
    expect(captions).to_have_text(["Operator console", "Runs and jobs", "Agents, teams and workflows", "Knowledge", "Schedules", "Users and access", "Observability"])
    expect(page.locator("#content-main")).not_to_contain_text("Crontabs")
    expect(page.locator("#content-main")).to_contain_text("Eval batches")
    page.screenshot(path=str(screenshots_dir / "admin-console.png"))

    page.goto("/admin/agno_sessions/run/")
    expect(page.locator("#result_list tbody tr")).to_have_count(5)
    results = page.locator("#changelist .results")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1400
    assert results.evaluate("(box) => box.scrollWidth <= box.clientWidth")  # no sideways scrolling in the list either
    assert page.locator("#result_list td.field-input_preview").first.bounding_box()["width"] >= 150  # the input is readable (12em at least)
    first_id = page.locator("#result_list tbody tr").first.locator("th")
    assert len(first_id.inner_text()) == 8  # a short id; the full one is its tooltip and its page
    assert len(first_id.locator("[title]").get_attribute("title")) == 36

    page.goto(f"/admin/agents/workflowdefinition/{flow.pk}/change/")
    box = page.locator("#id_versions-0-steps")
    assert box.bounding_box()["width"] >= 600
    text = box.input_value().replace('"executor_ref": "shout"\n  }\n]', '"executor_ref": "no-such-function"\n  }\n]')
    box.fill(text)
    page.get_by_role("button", name="Save and continue editing").click()
    composer = page.get_by_test_id("workflow-composer")
    expect(composer.locator(".wc-step")).to_have_count(2)
    expect(composer.locator(".wc-step.wc-invalid")).to_have_count(1)
    wrong = composer.locator(".wc-step").nth(1)
    expect(wrong).to_have_class(re.compile(r"\bwc-invalid\b"))
    expect(wrong.locator(".wc-problem")).to_contain_text("no-such-function")
    expect(composer.locator(".wc-step").first.locator(".wc-problem")).to_have_count(0)
    assert page.errors == []
