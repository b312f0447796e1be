"""The operator console: dashboard numbers, run actions (cancel, retry), user data pages."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.urls import reverse

from jobs.models import CancelIntent, Job
from agents.pipeline.submit import RunNotRetryable, submit_retry
from chat.console.selectors import dashboard_data
from sessions.models import Run, RunStatus
from tests.factories import make_memory, make_run, make_session

from .conftest import wait_until

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=timezone.utc)


def _run(user: str, agent: str, status: str, *, day: int, tokens: int = 0, duration: float | None = None) -> Run:
    session = make_session(user, component_id=agent)
    run = make_run(user, session=session, component_id=agent, status=status, created_at=NOW - timedelta(days=day))
    Run.all_users.filter(pk=run.pk).update(input_tokens=tokens // 2, output_tokens=tokens - tokens // 2, total_tokens=tokens, duration=duration)
    return run


@pytest.mark.django_db
def test_dashboard_numbers(django_assert_num_queries):
    _run("alice", "demo", RunStatus.COMPLETED, day=0, tokens=100, duration=1.0)
    _run("alice", "demo", RunStatus.COMPLETED, day=0, tokens=50, duration=3.0)
    _run("bob", "demo", RunStatus.ERROR, day=0, tokens=10, duration=2.0)
    _run("bob", "helper", RunStatus.CANCELLED, day=1, tokens=20, duration=5.0)
    _run("bob", "helper", RunStatus.PENDING, day=0)
    _run("carol", "helper", RunStatus.RUNNING, day=2)
    _run("carol", "demo", RunStatus.COMPLETED, day=9, tokens=999, duration=9.0)  # outside 7 days

    with django_assert_num_queries(7):  # five for runs, two for reply feedback
        data = dashboard_data(days=7, now=NOW)

    assert data.labels == [f"2026-03-{day:02d}" for day in range(4, 11)]
    chart = data.chart_data()
    assert chart["runsByStatus"] == {
        "COMPLETED": [0, 0, 0, 0, 0, 0, 2],
        "ERROR": [0, 0, 0, 0, 0, 0, 1],
        "CANCELLED": [0, 0, 0, 0, 0, 1, 0],
        "PAUSED": [0] * 7,
        "RUNNING": [0, 0, 0, 0, 1, 0, 0],
        "PENDING": [0, 0, 0, 0, 0, 0, 1],
        "REGENERATED": [0] * 7,
    }
    assert chart["tokens"]["total"] == [0, 0, 0, 0, 0, 20, 160]
    assert chart["tokens"]["input"] == [0, 0, 0, 0, 0, 10, 80]
    assert chart["durationP50"] == [None, None, None, None, None, 5.0, 2.0]
    assert chart["durationP95"] == [None, None, None, None, None, 5.0, 3.0]
    assert chart["errorRate"] == [None, None, None, None, None, 0.0, 0.3333]
    # The rate's numerator and denominator: failed runs of the finished (completed, failed, cancelled) ones.
    assert (chart["errors"], chart["finished"]) == ([0, 0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 1, 3])
    assert chart["busiestAgents"] == [  # most runs first; ties by agent id
        {"agent": "demo", "runs": 3, "errors": 1, "tokens": 160},
        {"agent": "helper", "runs": 3, "errors": 0, "tokens": 20},
    ]
    assert chart["queue"] == {"pending": 1, "running": 1, "paused": 0}
    assert data.totals["runs"] == 6 and data.totals["users"] == 3 and data.totals["error_rate"] == 0.25
    assert (data.totals["error_rate_percent"], data.totals["error_rate_basis"]) == ("25.0%", "1 failed of 4 finished runs")


@pytest.mark.django_db
def test_dashboard_percentiles_are_nearest_rank_and_query_count_is_fixed(django_assert_num_queries):
    for duration in range(1, 21):
        _run("alice", "demo", RunStatus.COMPLETED, day=0, duration=float(duration))
    with django_assert_num_queries(7):  # five for runs, two for reply feedback
        data = dashboard_data(days=30, now=NOW)
    assert data.duration_p50[-1] == 10.0
    assert data.duration_p95[-1] == 19.0
    assert len(data.labels) == 30


@pytest.mark.django_db
def test_dashboard_page_needs_staff_and_renders_chart_data(client, admin_client):
    url = reverse("console-dashboard")
    response = client.get(url)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    _run("alice", "demo", RunStatus.COMPLETED, day=0, tokens=7)
    response = admin_client.get(url + "?days=30")
    assert response.status_code == 200
    body = response.content.decode()
    assert "vendor/chartjs/chart.umd.min.js" in body
    assert response.context["chart_data"]["days"] == 30
    assert admin_client.get(url + "?days=banana").context["chart_data"]["days"] == 7
    assert reverse("console-dashboard") in admin_client.get(reverse("admin:index")).content.decode()


@pytest.mark.django_db
def test_cancel_action_asks_pending_and_running_runs_to_stop(admin_client):
    running = _run("alice", "demo", RunStatus.RUNNING, day=0)
    pending = _run("bob", "demo", RunStatus.PENDING, day=0)
    done = _run("bob", "demo", RunStatus.COMPLETED, day=0)
    response = admin_client.post(reverse("admin:agno_sessions_run_changelist"), {
        "action": "cancel_runs", "_selected_action": [running.pk, pending.pk, done.pk],
    }, follow=True)
    assert response.status_code == 200
    intents = dict(CancelIntent.objects.unscoped("test").values_list("run_id", "user_id"))
    # The API's cancel as an operator: the intent applies to the run whoever owns it.
    assert intents == {running.pk: None, pending.pk: None}
    text = response.content.decode()
    assert "Asked 2 run(s) to stop" in text and "1 run(s) were not pending or running" in text


@pytest.mark.django_db(transaction=True)
def test_retry_runs_the_same_input_as_a_new_durable_run_in_the_same_session():
    session = make_session("alice", component_id="assistant")
    failed = make_run("alice", session=session, component_id="assistant", status=RunStatus.ERROR, input={"input_content": "try again please"})
    accepted = submit_retry(run_id=failed.pk)
    # A background job of alice's, committed before the operator sees "queued": a restart loses nothing.
    assert Job.objects.for_user("alice").filter(pk=accepted.job.pk).exists()
    new = wait_until(lambda: Run.objects.for_user("alice").filter(pk=accepted.job.pk, status=RunStatus.COMPLETED).first(), message="the retried run")
    assert (new.session_id, new.user_id, new.component_id, new.status) == (session.pk, "alice", "assistant", RunStatus.COMPLETED)
    assert new.input["input_content"] == "try again please"
    assert new.run_index > failed.run_index
    assert Run.objects.for_user("alice").get(pk=failed.pk).status == RunStatus.ERROR  # the original stays as it was


@pytest.mark.django_db
def test_retry_refuses_runs_that_did_not_fail():
    run = make_run("alice", status=RunStatus.COMPLETED, component_id="assistant")
    with pytest.raises(RunNotRetryable, match="Only failed or cancelled"):
        submit_retry(run_id=run.pk)
    with pytest.raises(RunNotRetryable, match="does not exist"):
        submit_retry(run_id="nope")


@pytest.mark.django_db(transaction=True)
def test_retry_action_from_the_run_list(admin_user, client):
    client.force_login(admin_user)
    session = make_session("alice", component_id="assistant")
    cancelled = make_run("alice", session=session, component_id="assistant", status=RunStatus.CANCELLED, input={"input_content": "once more"})
    completed = make_run("alice", session=session, component_id="assistant", status=RunStatus.COMPLETED)
    response = client.post(reverse("admin:agno_sessions_run_changelist"), {
        "action": "retry_runs", "_selected_action": [cancelled.pk, completed.pk],
    }, follow=True)
    text = response.content.decode()
    assert "Queued 1 new run(s)" in text and "1 run(s) had not failed" in text
    retried = wait_until(
        lambda: Run.objects.for_user("alice").filter(session_id=session.pk, status=RunStatus.COMPLETED).exclude(pk=completed.pk).first(),
        message="the retried run",
    )
    assert retried.input["input_content"] == "once more"


@pytest.mark.django_db
def test_user_data_export_download(admin_client):
    make_run("alice")
    make_memory("alice", memory="likes tea")
    make_memory("bob", memory="likes coffee")
    page = admin_client.get(reverse("console-userdata") + "?user_id=alice")
    assert page.status_code == 200 and page.context["counts"]["agno_sessions.UserMemory"] == 1
    response = admin_client.get(reverse("console-userdata-export") + "?user_id=alice")
    assert response["Content-Disposition"] == 'attachment; filename="userdata-alice.json"'
    export = json.loads(response.content)
    assert [row["memory"] for row in export["tables"]["agno_sessions.UserMemory"]] == ["likes tea"]


@pytest.mark.django_db
def test_user_data_erasure_needs_the_typed_confirmation(admin_client):
    make_run("alice")
    make_run("bob")
    url = reverse("console-userdata-erase") + "?user_id=alice"
    page = admin_client.get(url)
    assert page.status_code == 200 and "This cannot be undone" in page.content.decode()
    admin_client.post(url, {"user_id": "alice", "confirm": "alic"})
    assert Run.objects.for_user("alice").count() == 1
    response = admin_client.post(url, {"user_id": "alice", "confirm": "alice"}, follow=True)
    assert "Erased 2 rows belonging to alice" in response.content.decode()  # the session and its run
    assert Run.objects.for_user("alice").count() == 0
    assert Run.objects.for_user("bob").count() == 1


@pytest.mark.django_db
def test_user_data_pages_need_permissions(client):
    staff = get_user_model().objects.create_user(username="staff", password="x-long-password", is_staff=True)
    client.force_login(staff)
    assert client.get(reverse("console-userdata") + "?user_id=alice").status_code == 403
    assert client.get(reverse("console-userdata-export") + "?user_id=alice").status_code == 403
    from core.tenancy import owned_models

    views = Permission.objects.filter(codename__in=[f"view_{model._meta.model_name}" for model in owned_models()])
    staff.user_permissions.add(*views)
    client.force_login(get_user_model().objects.get(pk=staff.pk))
    assert client.get(reverse("console-userdata-export") + "?user_id=alice").status_code == 200
    assert client.post(reverse("console-userdata-erase"), {"user_id": "alice", "confirm": "alice"}).status_code == 403


@pytest.mark.django_db
def test_user_admin_actions_lead_to_export_and_erasure(admin_client):
    alice = get_user_model().objects.create_user(username="alice", password="x-long-password")
    changelist = reverse("admin:auth_user_changelist")
    response = admin_client.post(changelist, {"action": "export_data", "_selected_action": [alice.pk]})
    assert response.status_code == 302 and response["Location"] == reverse("console-userdata-export") + "?user_id=alice"
    response = admin_client.post(changelist, {"action": "erase_data", "_selected_action": [alice.pk]})
    assert response["Location"] == reverse("console-userdata-erase") + "?user_id=alice"
    assert "export / erase" in admin_client.get(changelist).content.decode()
