"""The chat's "My usage" page: a signed-in user's own runs and tokens per day, from the metrics tables."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from metrics.models import MetricsAggregate

from .conftest import seed_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(client):
    client.force_login(get_user_model().objects.create_user(username="alice", password="x-long-password"))


def test_my_usage_shows_my_runs_and_tokens_per_day_and_never_another_users(client, alice):
    yesterday = timezone.now() - timedelta(days=1)
    seed_run("alice", yesterday, tokens=(100, 20))
    seed_run("alice", yesterday, tokens=(10, 2), status="ERROR")
    seed_run("bob", yesterday, tokens=(5000, 5000))
    page = client.get("/chat/usage/").content.decode()  # opening the page counts: no zeros until "Count again"
    assert set(MetricsAggregate.all_users.values_list("user_id", flat=True)) == {"alice"}  # her count counts only her runs
    assert "Not counted yet" not in page and "Counted up to" in page
    assert 'id="usage-total-runs">2<' in page and 'id="usage-total-tokens">132<' in page
    day = yesterday.date().isoformat()
    assert f'<th scope="row">{day}</th>' in page and "(1 failed)" in page and "(110 / 22)" in page
    assert "10000" not in page
    assert 'id="my-usage"' in client.get("/chat/").content.decode()


def test_count_again_counts_runs_made_since_the_page_was_opened(client, alice):
    client.get("/chat/usage/")
    seed_run("alice", timezone.now(), tokens=(7, 3))
    assert client.post("/chat/usage/")["Location"] == "/chat/usage/"
    page = client.get("/chat/usage/").content.decode()
    assert 'id="usage-total-runs">1<' in page and 'id="usage-total-tokens">10<' in page


def test_my_usage_needs_a_login(client):
    assert client.get("/chat/usage/")["Location"] == "/chat/login/?next=/chat/usage/"
    assert client.post("/chat/usage/").status_code == 302
    assert not MetricsAggregate.all_users.exists()
