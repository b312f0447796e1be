"""A trace's page in the admin: the waterfall draws one bar per span under the Content Security
Policy, the span table lists them nested, and the run's page links to it (screenshot
docs/trace-waterfall.png with ``make screenshots``)."""
from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from agents.pipeline.runs import RunRequest
from agents.pipeline.submit import submit_run
from core.auth import Principal
from traces.models import Span, Trace
from traces.provider import flush

from .conftest import PASSWORD, off_thread
from .test_workflow_admin_browser import signed_in_operator

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ALICE = Principal(user_id="alice", isolated=True, via="session")


def traced_team_run() -> str:
    message = "/call delegate_task_to_member " + json.dumps({"member_id": "writer", "task": '/call add {"a": 2, "b": 3}'})
    request = RunRequest(message=message, stream=False)
    run_id = off_thread(lambda: submit_run(principal=ALICE, component_id="research-team", kind="team", request=request)).output["run_id"]
    assert off_thread(flush)
    return run_id


def test_screenshot_a_trace_waterfall(browsing, make_user, screenshots_dir, settings):
    settings.TRACING = True
    run_id = traced_team_run()
    trace = Trace.all_users.get(run_id=run_id)
    spans = Span.all_users.filter(trace_id=trace.pk).count()
    page = signed_in_operator(browsing, make_user, f"/admin/agno_sessions/run/{run_id}/change/")
    page.locator(".field-trace_link a").click()
    expect(page.locator("#trace-waterfall-chart")).to_be_visible()
    expect(page.locator("tr.trace-span")).to_have_count(spans)
    expect(page.locator("td.trace-span-name.depth-0")).to_have_text(["Team.run"])
    assert page.locator("td.trace-span-name.depth-2").count() >= 1  # the member, under the delegation
    assert page.evaluate("() => !!Chart.getChart(document.getElementById('trace-waterfall-chart'))")
    assert page.evaluate("() => Chart.getChart(document.getElementById('trace-waterfall-chart')).data.datasets[0].data.length") == spans
    page.locator("#toggle-nav-sidebar").click()
    page.locator("#trace-waterfall-box").screenshot(path=str(screenshots_dir / "trace-waterfall.png"))
    assert page.errors == []
    assert (screenshots_dir / "trace-waterfall.png").stat().st_size > 5_000


def test_a_user_opens_the_trace_of_their_reply_from_the_chat(browsing, make_user, settings):
    settings.TRACING = True
    make_user("alice")
    page = browsing.chat_as("alice")
    page.fill("#composer-input", '/call add {"a": 20, "b": 22}')
    page.press("#composer-input", "Enter")
    link = page.locator(".msg-trace").last
    expect(link).to_be_visible(timeout=15_000)
    assert off_thread(flush)
    link.click()
    expect(page.get_by_role("heading", name="How this reply was made")).to_be_visible()
    expect(page.locator("td.trace-span-name.depth-0")).to_have_text(["Agent.run"])
    expect(page.locator("tr.trace-span", has_text="add")).to_have_count(1)
    assert page.evaluate("() => !!Chart.getChart(document.getElementById('trace-waterfall-chart'))")
    assert page.errors == []


def test_another_users_trace_is_not_shown(client, make_user, settings):
    settings.TRACING = True
    run_id = traced_team_run()
    make_user("bob")
    client.login(username="bob", password=PASSWORD)
    response = client.get(f"/chat/traces/{run_id}/")
    assert response.status_code == 404 and b"has no trace" in response.content


def test_the_chat_offers_trace_links_only_where_runs_are_traced(client, make_user, settings):
    make_user("carol")
    client.login(username="carol", password=PASSWORD)
    for tracing in (False, True):
        settings.TRACING = tracing
        page = client.get("/chat/").content.decode()
        assert f'"tracing": {str(tracing).lower()}' in page
