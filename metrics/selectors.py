"""Reads of the metrics tables: the API's rows, a refresh's status, the console's series."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from django.db.models import F, Max

from jobs.models import Job, JobStatus
from core.tenancy import AllUsers, scope_queryset

from .models import DURATION_BUCKETS, AggregationPeriod, MetricsAggregate, MetricsRefreshState, RefreshStatus
from .services import RefreshScope, states


def metrics_list(
    *, user: str | None | AllUsers, starting_date: date | None = None, ending_date: date | None = None,
    aggregation_period: str = AggregationPeriod.DAILY,
) -> tuple[list[MetricsAggregate], datetime | None]:
    """The rows ``user`` may see (an admin's scope: every user's and the shared bucket's), oldest
    first, and when the newest of them was updated. Two queries."""
    rows = scope_queryset(MetricsAggregate.objects, user).filter(aggregation_period=aggregation_period)
    if starting_date is not None:
        rows = rows.filter(date__gte=starting_date)
    if ending_date is not None:
        rows = rows.filter(date__lte=ending_date)
    # The shared bucket first on both databases (PostgreSQL sorts NULL last by default).
    items = list(rows.order_by("date", F("user_id").asc(nulls_first=True), "id"))
    updated = max((row.updated_at for row in items), default=None)
    return items, updated


@dataclass(frozen=True)
class RefreshStatusView:
    status: str
    started_at: datetime | None
    finished_at: datetime | None
    error: str | None
    # A running refresh's job's progress (months_done, months_total, days_total), once it has some.
    progress: dict[str, Any] | None = None


# A job in one of these ended without the refresh saying so itself (its worker died, say).
_JOB_ENDED = (JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED)


def refresh_status(*, scope: RefreshScope) -> RefreshStatusView:
    """The latest refresh of ``scope`` ("idle" when none was ever started), with its job's
    progress while it runs. A running refresh whose job ended without finishing it reads as
    failed, with the job's reason. Two queries while one runs (three as its job ends), else one."""
    state: MetricsRefreshState | None = states().filter(scope=scope.key).first()
    if state is None:
        return RefreshStatusView(RefreshStatus.IDLE, None, None, None)
    progress = None
    if state.status == RefreshStatus.RUNNING and state.job_id:
        job = Job.objects.unscoped("the metrics refresh's own job, by the id its state row holds").filter(pk=state.job_id).first()
        if job is None or job.status in _JOB_ENDED:
            # The refresh writes its end before its job settles: a state read before that end and
            # a job read after it would call a finished refresh failed. Read the state again.
            state = states().filter(scope=scope.key).first() or state
            if state.status == RefreshStatus.RUNNING:
                reason = (job.error if job is not None else "") or "the refresh job ended before the refresh finished"
                return RefreshStatusView(RefreshStatus.FAILED, state.started_at, job.completed_at if job else None, reason)
        elif job.progress:
            progress = dict(job.progress)
    return RefreshStatusView(state.status, state.started_at, state.finished_at, state.error or None, progress)


def last_refreshed_at(*, scope: RefreshScope) -> datetime | None:
    return states().filter(scope=scope.key).aggregate(at=Max("finished_at"))["at"]


# ---- the operator console -----------------------------------------------------------------

TOP = 10


def estimate_percentile(histogram: list[int], p: float) -> float | None:
    """The upper bound of the bucket holding the nearest-rank percentile (None: no runs); the
    open last bucket reads as its lower bound."""
    total = sum(histogram)
    if not total:
        return None
    rank = max(1, -(-int(total * p * 1000) // 1000))
    seen = 0
    for index, count in enumerate(histogram):
        seen += count
        if seen >= rank:
            return DURATION_BUCKETS[min(index, len(DURATION_BUCKETS) - 1)]
    return DURATION_BUCKETS[-1]


@dataclass
class UsageSeries:
    """Every user's daily rows of a period, as chart series (one query)."""

    labels: list[str]
    runs: dict[str, list[int]]
    errors: list[int]
    tokens: dict[str, list[int]]
    users: list[int]
    p50: list[float | None]
    p95: list[float | None]
    models: list[dict[str, Any]]
    agents: list[dict[str, Any]]
    top_users: list[dict[str, Any]]
    totals: dict[str, Any]

    def chart_data(self) -> dict[str, Any]:
        return {
            "labels": self.labels, "runs": self.runs, "errors": self.errors, "tokens": self.tokens, "users": self.users,
            "p50": self.p50, "p95": self.p95, "models": self.models, "agents": self.agents,
        }


def usage_series(*, user: str | None | AllUsers, start: date, days: int) -> UsageSeries:
    """``days`` days from ``start`` of the daily rows ``user`` may see, summed per day; latency
    per day estimated from the rows' duration histograms (exact in one user's own row); per
    model, per agent and per user over the whole period. One query."""
    labels = [(start + timedelta(days=offset)).isoformat() for offset in range(days)]
    index = {label: slot for slot, label in enumerate(labels)}
    rows = scope_queryset(MetricsAggregate.objects, user).filter(
        aggregation_period=AggregationPeriod.DAILY, date__gte=start, date__lt=start + timedelta(days=days),
    ).order_by("date", "user_id")
    runs = {kind: [0] * days for kind in ("agent", "team", "workflow")}
    tokens = {"input": [0] * days, "output": [0] * days, "total": [0] * days}
    errors, users = [0] * days, [0] * days
    histograms = [[0] * (len(DURATION_BUCKETS) + 1) for _ in range(days)]
    exact: dict[int, list[tuple[float | None, float | None]]] = defaultdict(list)
    models: dict[tuple[str, str], dict[str, int]] = {}
    agents: dict[tuple[str, str], dict[str, int]] = {}
    people: dict[str | None, dict[str, int]] = {}
    totals = {"runs": 0, "tokens": 0, "errors": 0, "cost": None}
    for row in rows:
        slot = index[row.date.isoformat()]
        counts = {"agent": row.agent_runs_count, "team": row.team_runs_count, "workflow": row.workflow_runs_count}
        for kind, count in counts.items():
            runs[kind][slot] += count
        tm = row.token_metrics or {}
        tokens["input"][slot] += tm.get("input_tokens", 0)
        tokens["output"][slot] += tm.get("output_tokens", 0)
        tokens["total"][slot] += tm.get("total_tokens", 0)
        errors[slot] += row.errors_count
        users[slot] += row.users_count
        for bucket, count in enumerate(row.duration_histogram or []):
            histograms[slot][bucket] += count
        exact[slot].append((row.duration_p50, row.duration_p95))
        for entry in row.model_metrics or []:
            key = (entry.get("model_id", ""), entry.get("model_provider", ""))
            into = models.setdefault(key, {"count": 0, "total_tokens": 0})
            into["count"] += entry.get("count", 0)
            into["total_tokens"] += entry.get("total_tokens", 0)
        for entry in row.component_metrics or []:
            key = (entry.get("component_type", ""), entry.get("component_id", ""))
            into = agents.setdefault(key, {"runs": 0, "errors": 0, "total_tokens": 0})
            for name in into:
                into[name] += entry.get(name, 0)
        person = people.setdefault(row.user_id, {"runs": 0, "total_tokens": 0, "errors": 0})
        person["runs"] += sum(counts.values())
        person["total_tokens"] += tm.get("total_tokens", 0)
        person["errors"] += row.errors_count
        totals["runs"] += sum(counts.values())
        totals["tokens"] += tm.get("total_tokens", 0)
        totals["errors"] += row.errors_count
        if row.cost is not None:
            totals["cost"] = (totals["cost"] or 0.0) + row.cost
    p50: list[float | None] = []
    p95: list[float | None] = []
    for slot in range(days):
        if len(exact[slot]) == 1:  # one row: its own exact percentiles
            p50.append(exact[slot][0][0])
            p95.append(exact[slot][0][1])
        else:
            p50.append(estimate_percentile(histograms[slot], 0.5))
            p95.append(estimate_percentile(histograms[slot], 0.95))
    return UsageSeries(
        labels=labels, runs=runs, errors=errors, tokens=tokens, users=users, p50=p50, p95=p95,
        models=[{"model_id": m, "model_provider": p, **n} for (m, p), n in sorted(models.items(), key=lambda i: (-i[1]["count"], i[0]))[:TOP]],
        agents=[{"component_type": k, "component_id": c, **n} for (k, c), n in sorted(agents.items(), key=lambda i: (-i[1]["runs"], i[0]))[:TOP]],
        top_users=[
            {"user_id": u, **n} for u, n in sorted(people.items(), key=lambda i: (-i[1]["total_tokens"], -i[1]["runs"], i[0] or ""))[:TOP]
        ],
        totals=totals,
    )

