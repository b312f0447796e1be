"""The metrics refresh: days in the configured time zone, the shared bucket, idempotent and
incremental recomputation, per-user scopes."""
from __future__ import annotations

from datetime import date, datetime, timedelta, timezone as dt_timezone

import pytest
from django.utils import timezone

from core.tenancy import ALL_USERS
from metrics.models import MetricsAggregate, MetricsRefreshState
from metrics.services import RefreshAlreadyRunning, RefreshScope, metrics_recompute, metrics_refresh_run, refresh_start
from sessions.models import Run
from tests.factories import make_session

from .conftest import seed_run

pytestmark = pytest.mark.django_db

UTC = dt_timezone.utc
EVERYONE = RefreshScope.of(ALL_USERS)


def rows(period: str = "daily") -> dict[tuple[str | None, str], MetricsAggregate]:
    return {(row.user_id, row.date.isoformat()): row for row in MetricsAggregate.all_users.filter(aggregation_period=period)}


def counts(period: str = "daily") -> dict[tuple[str | None, str], int]:
    return {key: row.agent_runs_count for key, row in rows(period).items()}


def snapshot() -> list[tuple]:
    return sorted(MetricsAggregate.all_users.values_list())


def state(scope: RefreshScope = EVERYONE) -> MetricsRefreshState:
    return MetricsRefreshState.all_users.get(scope=scope.key)


def test_days_are_cut_in_the_configured_time_zone_across_midnight(metrics_settings):
    metrics_settings.METRICS_TIMEZONE = "America/New_York"  # UTC-5 in November
    seed_run("alice", datetime(2026, 11, 30, 4, 30, tzinfo=UTC))  # 23:30 on the 29th in New York
    seed_run("alice", datetime(2026, 11, 30, 5, 30, tzinfo=UTC))  # 00:30 on the 30th
    seed_run("alice", datetime(2026, 12, 1, 4, 59, tzinfo=UTC))  # 23:59 on the 30th: still November there
    metrics_refresh_run(scope=EVERYONE)
    assert counts() == {("alice", "2026-11-29"): 1, ("alice", "2026-11-30"): 2}
    assert counts("monthly") == {("alice", "2026-11-01"): 3}
    assert {row.time_zone for row in rows().values()} == {"America/New_York"}

    # The same runs cut in UTC: another time zone recomputes every day, and the stale days go.
    metrics_settings.METRICS_TIMEZONE = "UTC"
    metrics_refresh_run(scope=EVERYONE)
    assert counts() == {("alice", "2026-11-30"): 2, ("alice", "2026-12-01"): 1}
    assert counts("monthly") == {("alice", "2026-11-01"): 2, ("alice", "2026-12-01"): 1}


def test_sessions_without_a_user_aggregate_into_one_shared_bucket():
    at = datetime(2026, 11, 20, 12, tzinfo=UTC)
    guest_a, guest_b = make_session(None), make_session(None)
    seed_run(None, at, session=guest_a)
    seed_run(None, at + timedelta(minutes=5), session=guest_a)
    seed_run(None, at + timedelta(minutes=9), session=guest_b)
    seed_run("alice", at)
    metrics_refresh_run(scope=EVERYONE)
    shared = rows()[(None, "2026-11-20")]
    assert (shared.id, shared.agent_runs_count, shared.agent_sessions_count, shared.users_count) == ("2026-11-20_daily", 3, 2, 0)
    assert rows()[("alice", "2026-11-20")].users_count == 1
    # The bucket is unique like any user's row: a second shared row for the day is refused.
    with pytest.raises(Exception):
        MetricsAggregate.objects.create(id="another", user_id=None, date=date(2026, 11, 20), aggregation_period="daily")


def test_a_refresh_run_twice_leaves_the_same_rows(metrics_settings):
    metrics_settings.METRICS_TIMEZONE = "Asia/Tokyo"
    for hour in (1, 14, 15, 23):
        seed_run("alice", datetime(2026, 11, 10, hour, tzinfo=UTC))
        seed_run("bob", datetime(2026, 11, 10, hour, 30, tzinfo=UTC), status="ERROR")
    metrics_refresh_run(scope=EVERYONE)
    first = snapshot()
    assert metrics_refresh_run(scope=EVERYONE) == []  # nothing changed, nothing written
    assert snapshot() == first
    metrics_refresh_run(scope=EVERYONE, full=True)  # every day recomputed: still the same rows
    assert snapshot() == first


def test_only_days_with_new_or_changed_runs_are_recomputed(metrics_settings):
    metrics_settings.METRICS_REFRESH_OVERLAP_SECONDS = 0
    now = timezone.now()
    old = now - timedelta(days=40)
    seed_run("alice", old)
    changed = seed_run("alice", old + timedelta(days=3))
    seed_run("alice", old + timedelta(days=6))
    metrics_refresh_run(scope=EVERYONE)
    assert state().days_recomputed == 3
    untouched = rows()[("alice", old.date().isoformat())].updated_at

    fresh = seed_run("alice", timezone.now())  # a new run
    Run.all_users.filter(pk=changed.pk).update(status="ERROR", updated_at=timezone.now())  # a run that changed
    written = metrics_refresh_run(scope=EVERYONE)
    assert state().days_recomputed == 2
    assert {(row.date, row.aggregation_period) for row in written if row.aggregation_period == "daily"} == {
        ((old + timedelta(days=3)).date(), "daily"), (fresh.created_at.date(), "daily"),
    }
    assert rows()[("alice", (old + timedelta(days=3)).date().isoformat())].errors_count == 1
    assert rows()[("alice", old.date().isoformat())].updated_at == untouched


def test_a_users_refresh_writes_only_their_own_rows():
    at = datetime(2026, 11, 5, 9, tzinfo=UTC)
    seed_run("alice", at)
    seed_run("bob", at)
    seed_run(None, at)
    metrics_refresh_run(scope=RefreshScope.of("bob"))
    assert counts() == {("bob", "2026-11-05"): 1}
    assert state(RefreshScope.of("bob")).user_id == "bob"
    metrics_refresh_run(scope=EVERYONE)
    assert counts() == {("alice", "2026-11-05"): 1, ("bob", "2026-11-05"): 1, (None, "2026-11-05"): 1}


def test_a_row_holds_tokens_per_model_errors_cost_and_latency():
    at = datetime(2026, 11, 3, 10, tzinfo=UTC)
    team = make_session("alice", component_id="research-team", session_type="team")
    leader = seed_run("alice", at, session=team, component_id="research-team", run_type="team", tokens=(100, 40), duration=4.0,
                      model=("claude-sonnet", "Anthropic"))
    seed_run("alice", at, session=team, component_id="researcher", parent_run_id=leader.pk, tokens=(30, 10), duration=2.0)
    for seconds in (0.5, 1.0, 1.5):
        seed_run("alice", at, tokens=(10, 5), duration=seconds, status="ERROR" if seconds == 1.5 else "COMPLETED")
    Run.all_users.filter(pk=leader.pk).update(run_data={"metrics": {"input_tokens": 100, "output_tokens": 40, "total_tokens": 140, "cost": 0.25,
                                                                     "reasoning_tokens": 7, "details": {"model": [{"id": "claude-sonnet", "provider": "Anthropic", "input_tokens": 100, "output_tokens": 40, "total_tokens": 140}]}}})
    metrics_refresh_run(scope=EVERYONE)
    row = rows()[("alice", "2026-11-03")]
    # A team's member runs count as team runs (as Agno counts a session's runs).
    assert (row.agent_runs_count, row.team_runs_count, row.agent_sessions_count, row.team_sessions_count) == (3, 2, 3, 1)
    assert row.token_metrics == {
        "input_tokens": 160, "output_tokens": 65, "total_tokens": 225, "audio_input_tokens": 0, "audio_output_tokens": 0,
        "audio_total_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0, "reasoning_tokens": 7,
    }
    assert row.model_metrics == [
        {"model_id": "gpt-4o", "model_provider": "OpenAI", "count": 4, "input_tokens": 60, "output_tokens": 25, "total_tokens": 85},
        {"model_id": "claude-sonnet", "model_provider": "Anthropic", "count": 1, "input_tokens": 100, "output_tokens": 40, "total_tokens": 140},
    ]
    assert row.component_metrics == [
        {"component_type": "agent", "component_id": "assistant", "runs": 3, "errors": 1, "total_tokens": 45},
        {"component_type": "agent", "component_id": "researcher", "runs": 1, "errors": 0, "total_tokens": 40},
        {"component_type": "team", "component_id": "research-team", "runs": 1, "errors": 0, "total_tokens": 140},
    ]
    assert (row.errors_count, row.cost) == (1, 0.25)
    # Latency of top-level runs only (0.5, 1.0, 1.5, 4.0): nearest rank.
    assert (row.duration_p50, row.duration_p95) == (1.0, 4.0)
    assert sum(row.duration_histogram) == 4


def test_a_refresh_already_running_is_not_started_twice():
    refresh_start(scope=EVERYONE)
    with pytest.raises(RefreshAlreadyRunning):
        metrics_refresh_run(scope=EVERYONE)
    assert state().status == "running"


def test_a_stale_running_refresh_may_be_started_again(metrics_settings):
    refresh_start(scope=EVERYONE, now=timezone.now() - timedelta(seconds=metrics_settings.METRICS_REFRESH_STALE_SECONDS + 5))
    metrics_refresh_run(scope=EVERYONE)
    assert state().status == "completed"


def test_a_day_that_has_ended_is_marked_completed_by_the_next_refresh(metrics_settings):
    now = timezone.now()
    seed_run("alice", now)
    metrics_refresh_run(scope=EVERYONE)
    assert [row.completed for row in rows().values()] == [False]
    later = now + timedelta(days=1)
    metrics_recompute(scope=EVERYONE, since=state().watermark, previous_tz="UTC", now=later)
    assert [row.completed for row in rows().values()] == [True]


def test_the_management_command_recomputes_every_day_with_full(metrics_settings):
    from django.core.management import call_command

    seed_run("alice", datetime(2026, 11, 2, 10, tzinfo=UTC))
    gone = seed_run("alice", datetime(2026, 11, 4, 10, tzinfo=UTC))
    call_command("metrics_refresh")
    assert counts() == {("alice", "2026-11-02"): 1, ("alice", "2026-11-04"): 1}
    Run.all_users.filter(pk=gone.pk).delete()  # a deletion leaves no changed run for the watermark
    call_command("metrics_refresh")
    assert ("alice", "2026-11-04") in counts()
    call_command("metrics_refresh", "--full")
    assert counts() == {("alice", "2026-11-02"): 1}
    call_command("metrics_refresh", "--user", "alice")
    assert state(RefreshScope.of("alice")).status == "completed"
