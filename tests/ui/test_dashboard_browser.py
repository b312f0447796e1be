"""The operator dashboard in a real browser: Chart.js draws every chart from the selector's data."""
from __future__ import annotations

import random
import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from sessions.models import Run, RunStatus
from tests.factories import make_run, make_session

from .conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHARTS = ("chart-runs", "chart-tokens", "chart-duration", "chart-errors", "chart-queue", "chart-agents")


def seed_history(days: int = 14, seed: int = 7) -> int:
    """A fortnight of runs across users, agents and statuses (deterministic)."""
    rng = random.Random(seed)
    now = timezone.now()
    agents = {"demo": 6, "research": 4, "support": 3, "billing": 1}
    statuses = [RunStatus.COMPLETED] * 14 + [RunStatus.ERROR] * 2 + [RunStatus.CANCELLED]
    sessions = {(user, agent): make_session(user, component_id=agent) for user in ("ada", "grace", "linus") for agent in agents}
    created = 0
    for day in range(days):
        for agent, weight in agents.items():
            for _ in range(rng.randint(weight, weight * 2)):
                user = rng.choice(("ada", "grace", "linus"))
                run = make_run(user, session=sessions[(user, agent)], component_id=agent, status=rng.choice(statuses),
                               created_at=now - timedelta(days=day, minutes=rng.randint(0, 600)))
                tokens = rng.randint(200, 2400)
                Run.all_users.filter(pk=run.pk).update(
                    input_tokens=tokens * 3 // 4, output_tokens=tokens // 4, total_tokens=tokens,
                    duration=round(rng.lognormvariate(0.3, 0.6), 3),
                )
                created += 1
    for status in (RunStatus.PENDING, RunStatus.PENDING, RunStatus.RUNNING, RunStatus.PAUSED):
        make_run("ada", session=sessions[("ada", "demo")], component_id="demo", status=status)
        created += 1
    return created


def open_dashboard(browsing, make_user, path: str = "/admin/dashboard/"):
    make_user("operator", is_staff=True, is_superuser=True)
    page = browsing.page(viewport=(1280, 900))
    page.goto(f"/admin/login/?next={path}")
    page.fill("#id_username", "operator")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("body[data-charts-ready=true]")
    return page


def chart_summary(page) -> dict:
    return page.evaluate(
        """(ids) => Object.fromEntries(ids.map((id) => {
            const chart = Chart.getChart(document.getElementById(id));
            return [id, chart ? {type: chart.config.type, datasets: chart.data.datasets.length,
                                  points: chart.data.datasets.reduce((n, d) => n + d.data.filter((v) => v !== null).length, 0),
                                  sum: chart.data.datasets.reduce((n, d) => n + d.data.reduce((a, v) => a + (v || 0), 0), 0),
                                  width: chart.width, height: chart.height} : null];
        }))""",
        list(CHARTS),
    )


USAGE_CHARTS = ("chart-usage-runs", "chart-usage-tokens", "chart-usage-latency", "chart-usage-models", "chart-usage-agents")


def dataset_sums(page, chart_id: str) -> dict:
    return page.evaluate(
        """(id) => Object.fromEntries(Chart.getChart(document.getElementById(id)).data.datasets.map(
            (d) => [d.label, d.data.reduce((a, v) => a + (v || 0), 0)]))""",
        chart_id,
    )


def test_the_dashboard_renders_its_charts(browsing, make_user):
    from core.tenancy import ALL_USERS
    from metrics.services import RefreshScope, metrics_refresh_run

    total = seed_history()
    metrics_refresh_run(scope=RefreshScope.of(ALL_USERS))
    page = open_dashboard(browsing, make_user, "/admin/dashboard/?days=30")
    expect(page.locator("#tile-runs")).to_have_text(str(total))
    charts = chart_summary(page)
    assert all(charts[name] is not None for name in CHARTS), charts
    assert all(chart["width"] > 100 and chart["height"] > 100 for chart in charts.values()), charts
    assert charts["chart-runs"]["type"] == "bar" and charts["chart-runs"]["sum"] == total  # every run, by status
    assert charts["chart-queue"]["sum"] == 4  # 2 pending, 1 running, 1 paused
    assert charts["chart-duration"]["points"] > 0 and charts["chart-errors"]["points"] > 0
    assert charts["chart-agents"]["datasets"] == 2 and charts["chart-tokens"]["sum"] > 0
    # The error rate says its denominator: on the tile, and in each day's tooltip.
    finished = Run.all_users.filter(status__in=(RunStatus.COMPLETED, RunStatus.ERROR, RunStatus.CANCELLED))
    failed = finished.filter(status=RunStatus.ERROR).count()
    expect(page.locator("#tile-error-basis")).to_have_text(
        f"{failed} failed of {finished.count()} finished runs (completed, failed or cancelled)")
    label = page.evaluate("""() => {
        const chart = Chart.getChart(document.getElementById("chart-errors"));
        const index = chart.data.datasets[0].data.findIndex((value) => value !== null);
        const item = {formattedValue: String(chart.data.datasets[0].data[index]), dataIndex: index};
        return chart.options.plugins.tooltip.callbacks.label(item);
    }""")
    assert re.fullmatch(r"[\d.]+% \(\d+ failed of \d+ finished runs\)", label), label
    # The same runs, from the metrics tables: per kind, per model, per agent, and the top users.
    runs = dataset_sums(page, "chart-usage-runs")
    assert runs["agent runs"] == total and runs["errors"] == Run.all_users.filter(status=RunStatus.ERROR).count()
    assert all(page.evaluate("(id) => !!Chart.getChart(document.getElementById(id))", name) for name in USAGE_CHARTS)
    assert dataset_sums(page, "chart-usage-agents")["runs"] == total
    assert page.evaluate("Chart.getChart(document.getElementById('chart-usage-agents')).data.labels.length") == 4
    assert dataset_sums(page, "chart-usage-latency")["p50 (s)"] > 0
    expect(page.locator("#usage-runs")).to_have_text(str(total))
    expect(page.locator("#usage-top-users tbody tr")).to_have_count(3)
    # The period selector.
    page.get_by_role("link", name="7 days").click()
    page.wait_for_selector("body[data-charts-ready=true]")
    assert page.evaluate("Chart.getChart(document.getElementById('chart-runs')).data.labels.length") == 7
    assert page.errors == []


def test_the_admin_index_links_to_the_console(browsing, make_user):
    page = open_dashboard(browsing, make_user)
    page.goto("/admin/")
    console = page.locator("#operator-console")
    expect(console.get_by_role("link", name="Dashboard")).to_be_visible()
    console.get_by_role("link", name="User data").click()
    page.fill("#user-id", "ada")
    page.click("input[value='Look up']")
    expect(page.locator("#userdata-counts")).to_contain_text("agno_sessions.Run")
