"""The operator dashboard reads the metrics tables, and starts a refresh from there."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from jobs.models import Job
from core.tenancy import ALL_USERS
from metrics.models import MetricsAggregate
from metrics.selectors import estimate_percentile, usage_series
from metrics.services import RefreshScope, metrics_refresh_run
from tests.factories import make_session

from .conftest import seed_run

pytestmark = pytest.mark.django_db


def test_usage_series_sums_every_users_rows_per_day_model_agent_and_user():
    today = timezone.now().date()
    noon = timezone.now().replace(hour=12, minute=0, second=0, microsecond=0)
    seed_run("alice", noon - timedelta(days=1), tokens=(100, 50), duration=2.0)
    seed_run("bob", noon - timedelta(days=1), tokens=(10, 5), duration=0.2, status="ERROR", component_id="support")
    seed_run(None, noon - timedelta(days=1), session=make_session(None), tokens=(1, 1), duration=0.4)
    metrics_refresh_run(scope=RefreshScope.of(ALL_USERS))
    usage = usage_series(user=ALL_USERS, start=today - timedelta(days=6), days=7)
    assert usage.runs["agent"] == [0, 0, 0, 0, 0, 3, 0] and usage.errors == [0, 0, 0, 0, 0, 1, 0]
    assert usage.users == [0, 0, 0, 0, 0, 2, 0]  # the shared bucket has no user
    assert usage.tokens["total"][5] == 167
    # Three rows that day: p50 and p95 from their merged duration buckets (0.2, 0.4 and 2.0 s).
    assert (usage.p50[5], usage.p95[5]) == (0.5, 2.0)
    assert usage.models == [{"model_id": "gpt-4o", "model_provider": "OpenAI", "count": 3, "total_tokens": 167}]
    assert usage.agents == [
        {"component_type": "agent", "component_id": "assistant", "runs": 2, "errors": 0, "total_tokens": 152},
        {"component_type": "agent", "component_id": "support", "runs": 1, "errors": 1, "total_tokens": 15},
    ]
    assert usage.top_users == [
        {"user_id": "alice", "runs": 1, "total_tokens": 150, "errors": 0},
        {"user_id": "bob", "runs": 1, "total_tokens": 15, "errors": 1},
        {"user_id": None, "runs": 1, "total_tokens": 2, "errors": 0},
    ]
    # One user's own series keeps their row's exact percentiles.
    assert usage_series(user="alice", start=today - timedelta(days=6), days=7).p50[5] == 2.0


def test_estimated_percentiles_read_the_bucket_that_holds_the_rank():
    assert estimate_percentile([0] * 18, 0.5) is None
    histogram = [0] * 18
    histogram[3] = 9  # nine runs of (0.5, 1.0] s
    histogram[17] = 1  # one above the last bound
    assert (estimate_percentile(histogram, 0.5), estimate_percentile(histogram, 0.95)) == (1.0, 600.0)


def test_the_dashboard_shows_the_metrics_and_its_button_starts_a_refresh(admin_client, settings):
    settings.EMBEDDED_WORKER = False
    seed_run("alice", timezone.now() - timedelta(hours=1))
    page = admin_client.get(reverse("console-dashboard"))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="chart-usage-runs"' in html and "Never refreshed" in html and 'id="usage-runs">0<' in html
    response = admin_client.post(reverse("console-metrics-refresh"), {"days": "30"})
    assert response.status_code == 302 and response["Location"] == f"{reverse('console-dashboard')}?days=30"
    job = Job.objects.unscoped("test: the refresh job an operator started").get(job_type="metrics_refresh")
    assert (job.user_id, job.payload) == (None, {"scope": "all", "user_id": None, "full": False})
    again = admin_client.post(reverse("console-metrics-refresh"), follow=True)
    assert "A metrics refresh is already running." in again.content.decode()


# Committed rows: the job runs in a run thread, on its own connection (job_run drives the one async path).
@pytest.mark.django_db(transaction=True)
def test_the_dashboard_follows_a_background_refresh_to_its_end(admin_client, settings):
    from jobs.services.claims import job_claim
    from jobs.services.jobs import job_progress, job_run

    settings.EMBEDDED_WORKER = False  # the test plays the worker
    seed_run("alice", timezone.now() - timedelta(hours=1))
    status_url = reverse("console-metrics-refresh-status")
    assert admin_client.get(status_url).json() == {"status": "idle", "progress": None, "error": None, "started_at": None, "finished_at": None}
    started = admin_client.post(reverse("console-metrics-refresh"), {"days": "30"}, follow=True).content.decode()
    assert "Metrics refresh started in the background; its progress shows below." in started
    assert 'data-status="running"' in started and '<progress id="metrics-refresh-progress" max="1" value="0">' in started
    # The request only queued it; a worker takes it and reports how far it has got.
    job = job_claim(worker="w1")
    assert job.job_type == "metrics_refresh" and not MetricsAggregate.all_users.exists()
    job_progress(job=job, worker="w1", months_done=1, months_total=2, days_total=3)
    running = admin_client.get(status_url).json()
    assert (running["status"], running["progress"], running["error"], running["finished_at"]) == (
        "running", {"months_done": 1, "months_total": 2, "days_total": 3}, None, None,
    )
    page = admin_client.get(reverse("console-dashboard")).content.decode()
    assert "running (month 1 of 2)" in page and '<progress id="metrics-refresh-progress" max="2" value="1">' in page
    assert job_run(job, "w1") == "COMPLETED"
    done = admin_client.get(status_url).json()
    assert (done["status"], done["progress"], done["error"]) == ("completed", None, None) and done["finished_at"]
    assert list(MetricsAggregate.all_users.filter(aggregation_period="daily").values_list("user_id", flat=True)) == ["alice"]


def test_the_refresh_status_needs_staff(client):
    response = client.get(reverse("console-metrics-refresh-status"))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_the_refresh_button_needs_staff(client):
    response = client.post(reverse("console-metrics-refresh"))
    assert response.status_code == 302 and "/login/" in response["Location"]
    assert not Job.objects.unscoped("test").filter(job_type="metrics_refresh").exists()
