"""The operator dashboard's numbers: a fixed handful of aggregate queries, whatever the volume.

Every series is grouped in the database (per day, per status, per agent); Python only reshapes
the grouped rows (at most days x statuses of them) into chart series.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from django.db.models import Count, F, Q, Sum, Window
from django.db.models.functions import Ceil, RowNumber, TruncDate
from django.utils import timezone

from sessions.models import FeedbackRating, Run, RunFeedback, RunStatus

PERIODS = (7, 30, 90)
DEFAULT_PERIOD = 7
BUSIEST_AGENTS = 10
LATEST_COMMENTS = 10
# The order statuses are stacked in on the chart.
STATUS_ORDER = (
    RunStatus.COMPLETED, RunStatus.ERROR, RunStatus.CANCELLED, RunStatus.PAUSED,
    RunStatus.RUNNING, RunStatus.PENDING, RunStatus.REGENERATED,
)
# The error rate's denominator: runs that ended (a paused, running or queued run may still fail).
FINISHED = (RunStatus.COMPLETED, RunStatus.ERROR, RunStatus.CANCELLED)


@dataclass(frozen=True)
class QueueDepth:
    """Work waiting and in flight right now.

    Today a run waits as a PENDING run row; when background jobs get their own table, this is
    the one function to point at it (same shape).
    """

    pending: int
    running: int
    paused: int


@dataclass(frozen=True)
class FeedbackSummary:
    """Users' ratings of replies in the period (by when they were last given or changed)."""

    up: int
    down: int
    latest: list[dict[str, Any]]

    @property
    def total(self) -> int:
        return self.up + self.down


@dataclass
class Dashboard:
    days: int
    start: date
    labels: list[str]
    runs_by_status: dict[str, list[int]]
    tokens: dict[str, list[int]]
    duration_p50: list[float | None]
    duration_p95: list[float | None]
    error_rate: list[float | None]
    # The error rate's numerator and denominator, per day: failed runs, and finished ones.
    errors: list[int]
    finished: list[int]
    busiest_agents: list[dict[str, Any]]
    queue: QueueDepth
    totals: dict[str, Any] = field(default_factory=dict)
    feedback: FeedbackSummary | None = None

    def chart_data(self) -> dict[str, Any]:
        return {
            "days": self.days,
            "labels": self.labels,
            "runsByStatus": self.runs_by_status,
            "tokens": self.tokens,
            "durationP50": self.duration_p50,
            "durationP95": self.duration_p95,
            "errorRate": self.error_rate,
            "errors": self.errors,
            "finished": self.finished,
            "busiestAgents": self.busiest_agents,
            "queue": {"pending": self.queue.pending, "running": self.queue.running, "paused": self.queue.paused},
        }


def _runs():
    return Run.objects.unscoped("operator dashboard: every user's runs")


def dashboard_feedback(*, since: datetime) -> FeedbackSummary:
    """Up and down counts since ``since``, and the latest comments: two queries."""
    feedback = RunFeedback.objects.unscoped("operator dashboard: every user's reply feedback").filter(updated_at__gte=since)
    counts = feedback.aggregate(
        up=Count("pk", filter=Q(rating=FeedbackRating.UP)),
        down=Count("pk", filter=Q(rating=FeedbackRating.DOWN)),
    )
    latest = list(
        feedback.exclude(comment="")
        .order_by("-updated_at", "-pk")
        .values("pk", "run_id", "component_id", "user_id", "rating", "comment", "updated_at")[:LATEST_COMMENTS]
    )
    return FeedbackSummary(up=counts["up"], down=counts["down"], latest=latest)


def dashboard_queue_depth() -> QueueDepth:
    """One query."""
    row = _runs().filter(status__in=(RunStatus.PENDING, RunStatus.RUNNING, RunStatus.PAUSED)).aggregate(
        pending=Count("pk", filter=Q(status=RunStatus.PENDING)),
        running=Count("pk", filter=Q(status=RunStatus.RUNNING)),
        paused=Count("pk", filter=Q(status=RunStatus.PAUSED)),
    )
    return QueueDepth(pending=row["pending"], running=row["running"], paused=row["paused"])


def _day_key(value: date | datetime | str) -> str:
    # SQLite hands TruncDate back as a date already; keep strings as they are.
    if isinstance(value, datetime):
        value = value.date()
    return value.isoformat() if isinstance(value, date) else str(value)[:10]


def _percentiles(runs, index: dict[str, int]) -> tuple[list[float | None], list[float | None]]:
    """Nearest-rank p50 and p95 of duration per day, in one query on SQLite and PostgreSQL alike.

    Each run is numbered within its day by duration; only the rows at rank ceil(p * n) come back.
    """
    ranked = (
        runs.filter(duration__isnull=False)
        .annotate(day=TruncDate("created_at"))
        .annotate(
            rank=Window(RowNumber(), partition_by=[F("day")], order_by=[F("duration").asc(), F("run_id").asc()]),
            n=Window(Count("pk"), partition_by=[F("day")]),
        )
        .filter(Q(rank=Ceil(F("n") * 0.5)) | Q(rank=Ceil(F("n") * 0.95)))
        .values_list("day", "rank", "n", "duration")
    )
    p50: list[float | None] = [None] * len(index)
    p95: list[float | None] = [None] * len(index)
    for day, rank, n, duration in ranked:
        slot = index.get(_day_key(day))
        if slot is None:
            continue
        if rank == _ceil(n * 0.5):
            p50[slot] = round(duration, 3)
        if rank == _ceil(n * 0.95):
            p95[slot] = round(duration, 3)
    return p50, p95


def _ceil(value: float) -> int:
    whole = int(value)
    return whole if whole == value else whole + 1


def dashboard_data(*, days: int = DEFAULT_PERIOD, now: datetime | None = None) -> Dashboard:
    """The last ``days`` days (UTC), today included. Seven queries."""
    if days not in PERIODS:
        days = DEFAULT_PERIOD
    now = now or timezone.now()
    today = now.date()
    start = today - timedelta(days=days - 1)
    start_at = datetime.combine(start, datetime.min.time(), tzinfo=now.tzinfo)
    labels = [(start + timedelta(days=offset)).isoformat() for offset in range(days)]
    index = {label: position for position, label in enumerate(labels)}
    runs = _runs().filter(created_at__gte=start_at)

    # 1. runs and tokens per day and status
    runs_by_status: dict[str, list[int]] = {status.value: [0] * days for status in STATUS_ORDER}
    tokens = {"input": [0] * days, "output": [0] * days, "total": [0] * days}
    per_day = (
        runs.annotate(day=TruncDate("created_at"))
        .values("day", "status")
        .annotate(n=Count("pk"), input=Sum("input_tokens"), output=Sum("output_tokens"), total=Sum("total_tokens"))
        .order_by()
    )
    for row in per_day:
        slot = index.get(_day_key(row["day"]))
        if slot is None:
            continue
        runs_by_status.setdefault(row["status"], [0] * days)[slot] += row["n"]
        tokens["input"][slot] += row["input"] or 0
        tokens["output"][slot] += row["output"] or 0
        tokens["total"][slot] += row["total"] or 0

    finished = [sum(runs_by_status[status][slot] for status in FINISHED) for slot in range(days)]
    errors = runs_by_status[RunStatus.ERROR]
    error_rate = [round(errors[slot] / finished[slot], 4) if finished[slot] else None for slot in range(days)]

    # 2. duration percentiles per day
    p50, p95 = _percentiles(runs, index)

    # 3. busiest agents
    busiest = [
        {
            "agent": row["component_id"] or "(none)",
            "runs": row["n"],
            "errors": row["errors"],
            "tokens": row["tokens"] or 0,
        }
        for row in runs.values("component_id")
        .annotate(n=Count("pk"), errors=Count("pk", filter=Q(status=RunStatus.ERROR)), tokens=Sum("total_tokens"))
        .order_by("-n", "component_id")[:BUSIEST_AGENTS]
    ]

    # 4. period totals
    totals = runs.aggregate(
        runs=Count("pk"),
        tokens=Sum("total_tokens"),
        errors=Count("pk", filter=Q(status=RunStatus.ERROR)),
        finished=Count("pk", filter=Q(status__in=FINISHED)),
        users=Count("user_id", distinct=True),
        agents=Count("component_id", distinct=True),
    )
    totals["tokens"] = totals["tokens"] or 0
    totals["error_rate"] = round(totals["errors"] / totals["finished"], 4) if totals["finished"] else None
    totals["error_rate_percent"] = "–" if totals["error_rate"] is None else f"{totals['error_rate'] * 100:.1f}%"
    totals["error_rate_basis"] = f"{totals['errors']} failed of {totals['finished']} finished runs"

    # 5. queue depth (now, not over the period)
    queue = dashboard_queue_depth()

    # 6, 7. reply feedback: up and down, and the latest comments
    feedback = dashboard_feedback(since=start_at)

    return Dashboard(
        days=days, start=start, labels=labels, runs_by_status=runs_by_status,
        tokens=tokens, duration_p50=p50, duration_p95=p95, error_rate=error_rate, errors=list(errors), finished=finished,
        busiest_agents=busiest, queue=queue, totals=totals, feedback=feedback,
    )
