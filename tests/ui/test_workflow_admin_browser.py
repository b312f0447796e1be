"""The console's workflow pages in a browser: the step timeline (branches side by side) and a
paused run's review page render under the Content Security Policy, and are screenshotted
(docs/admin-workflow-timeline.png, docs/admin-workflow-review.png with ``make screenshots``)."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from agents.pipeline.runs import RunRequest
from agents.pipeline.submit import submit_run
from core.auth import Principal

from .conftest import PASSWORD, off_thread

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ALICE = Principal(user_id="alice", isolated=True, via="session")


def run_workflow(workflow_id: str, message: str) -> str:
    """A workflow run to its end or pause, off this thread (Playwright's event loop is on it)."""
    request = RunRequest(message=message, stream=False)
    return off_thread(lambda: submit_run(principal=ALICE, component_id=workflow_id, kind="workflow", request=request)).output["run_id"]


def signed_in_operator(browsing, make_user, path: str):
    make_user("root", is_staff=True, is_superuser=True)
    page = browsing.page(viewport=(1280, 900))
    page.goto(f"/admin/login/?next={path}")
    page.fill("#id_username", "root")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    return page


def test_screenshot_admin_workflow_timeline_and_review(browsing, make_user, screenshots_dir):
    done, paused = run_workflow("draft-flow", "Plan the launch"), run_workflow("review-flow", "ship it")
    page = signed_in_operator(browsing, make_user, f"/admin/agno_sessions/run/{done}/change/")
    branches = page.locator(".step-timeline.parallel-branches > li")
    expect(branches).to_have_count(2)
    first, second = branches.nth(0).bounding_box(), branches.nth(1).bounding_box()
    assert abs(first["y"] - second["y"]) < 2 and second["x"] > first["x"]  # side by side, not stacked
    page.locator("#toggle-nav-sidebar").click()
    page.locator(".field-step_timeline").screenshot(path=str(screenshots_dir / "admin-workflow-timeline.png"))

    page.goto(f"/admin/agno_sessions/run/{paused}/review/")
    expect(page.get_by_role("button", name="Confirm")).to_be_visible()
    page.screenshot(path=str(screenshots_dir / "admin-workflow-review.png"))
    page.get_by_role("button", name="Reject").click()
    expect(page.locator(".messagelist")).to_contain_text("continues in the background")
    assert page.errors == []
    assert (screenshots_dir / "admin-workflow-timeline.png").stat().st_size > 5_000
