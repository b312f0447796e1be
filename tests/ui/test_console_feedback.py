"""Reply feedback for operators: the dashboard's counts and latest comments, and the admin list."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from django.urls import reverse

from chat.console.selectors import dashboard_feedback
from sessions.models import RunFeedback, RunStatus
from tests.factories import make_feedback, make_run, make_session

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=timezone.utc)


def rated(user: str, agent: str, rating: str, comment: str = "", *, days_ago: int = 0) -> RunFeedback:
    run = make_run(user, session=make_session(user, component_id=agent), component_id=agent, status=RunStatus.COMPLETED)
    feedback = make_feedback(user, run=run, rating=rating, comment=comment)
    moment = NOW - timedelta(days=days_ago, minutes=len(comment))
    RunFeedback.all_users.filter(pk=feedback.pk).update(updated_at=moment, created_at=moment)
    return feedback


@pytest.fixture
def ratings() -> None:
    rated("alice", "demo", "up", "Great")
    rated("bob", "demo", "down", "Wrong date")
    rated("bob", "helper", "down")
    rated("carol", "helper", "up", "Old praise", days_ago=20)  # outside a 7-day period


def test_counts_and_latest_comments_of_the_period(ratings, django_assert_num_queries) -> None:
    with django_assert_num_queries(2):
        summary = dashboard_feedback(since=NOW - timedelta(days=7))
    assert (summary.up, summary.down, summary.total) == (1, 2, 3)
    assert [(row["user_id"], row["component_id"], row["rating"], row["comment"]) for row in summary.latest] == [
        ("alice", "demo", "up", "Great"),  # newest first; ratings without a comment are not listed
        ("bob", "demo", "down", "Wrong date"),
    ]


def test_the_dashboard_page_shows_them(admin_client, ratings) -> None:
    RunFeedback.all_users.update(updated_at=datetime.now(timezone.utc))  # inside today's period
    response = admin_client.get(reverse("console-dashboard") + "?days=7")
    assert response.status_code == 200
    body = response.content.decode()
    assert 'id="tile-feedback">2 / 2<' in body
    assert "Wrong date" in body and "Old praise" in body and "Latest feedback comments" in body
    assert reverse("admin:agno_sessions_runfeedback_changelist") in body


def test_the_admin_lists_feedback_read_only_with_filters(admin_client, ratings) -> None:
    url = reverse("admin:agno_sessions_runfeedback_changelist")
    page = admin_client.get(url)
    assert page.status_code == 200
    assert len(page.context["cl"].result_list) == 4
    assert {obj.comment for obj in admin_client.get(url, {"rating__exact": "down"}).context["cl"].result_list} == {"Wrong date", ""}
    assert [obj.user_id for obj in admin_client.get(url, {"component_id": "demo", "user_id": "bob"}).context["cl"].result_list] == ["bob"]
    assert [obj.comment for obj in admin_client.get(url, {"q": "praise"}).context["cl"].result_list] == ["Old praise"]
    one = RunFeedback.all_users.get(comment="Great")
    change = admin_client.get(reverse("admin:agno_sessions_runfeedback_change", args=[one.pk]))
    assert change.status_code == 200
    assert 'name="_save"' not in change.content.decode()  # read-only: no Save buttons
    assert admin_client.get(reverse("admin:agno_sessions_runfeedback_add")).status_code == 403
