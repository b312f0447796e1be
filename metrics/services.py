"""The metrics refresh: recompute the daily and monthly rows of the days whose runs changed.

Incremental: each refresh scope keeps a watermark (when its last refresh started); the next one
recomputes only the days (in ``METRICS_TIMEZONE``) of runs updated since then, minus an overlap
(``METRICS_REFRESH_OVERLAP_SECONDS``) that covers a run written just before the watermark but
committed after it. Changing the time zone, or asking for ``full``, recomputes every day.

Idempotent: a row is rewritten only when its numbers change, so running a refresh twice leaves
the same rows, ``updated_at`` included. A day's monthly row is recomputed with it (from the
month's runs: sessions and users counted once however many days they span, exact percentiles).

Scopes (``RefreshScope``): an operator's refresh ("all") writes every user's rows and the shared
bucket; a user's refresh writes only their own rows; an anonymous caller's only the shared bucket.
"""
from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import connection, transaction
from django.db.models.functions import TruncDate
from django.utils import timezone

from core.statements import Insert
from core.tenancy import ALL_USERS, AllUsers
from sessions.models import Run, RunStatus

from .models import DURATION_BUCKETS, AggregationPeriod, MetricsAggregate, MetricsRefreshState, RefreshStatus

logger = logging.getLogger("agno_site.metrics")

# Agno's RunMetrics token counters, in token_metrics' order.
TOKEN_KEYS = (
    "input_tokens", "output_tokens", "total_tokens", "audio_input_tokens", "audio_output_tokens", "audio_total_tokens",
    "cache_read_tokens", "cache_write_tokens", "reasoning_tokens",
)
# The columns a refresh compares to decide whether a row changed.
CONTENT_FIELDS = (
    "agent_runs_count", "team_runs_count", "workflow_runs_count", "agent_sessions_count", "team_sessions_count",
    "workflow_sessions_count", "users_count", "token_metrics", "model_metrics", "component_metrics", "errors_count", "cost",
    "duration_p50", "duration_p95", "duration_histogram", "time_zone", "completed",
)
# The refresh's writes are serialized: PostgreSQL takes this transaction-scoped advisory lock;
# SQLite's transactions begin IMMEDIATE and hold its one write lock already.
REFRESH_LOCK_KEY = 0x61676E6F2D6D6574  # "agno-met"


class RefreshAlreadyRunning(Exception):
    """A refresh of this scope is in flight."""


@dataclass(frozen=True)
class RefreshScope:
    """Whose rows a refresh recomputes: "all", "user:<id>" or "shared"."""

    key: str
    user_id: str | None  # a user's scope; None for "all" and "shared"

    @classmethod
    def of(cls, user: str | None | AllUsers) -> RefreshScope:
        """The scope a caller's read scope (``Principal.read_scope()``) may refresh."""
        if user is ALL_USERS:
            return cls("all", None)
        if user is None:
            return cls("shared", None)
        return cls(f"user:{user}", user)

    @property
    def everyone(self) -> bool:
        return self.key == "all"

    def runs(self):
        if self.everyone:
            return Run.objects.unscoped("metrics refresh for an operator: every user's runs")
        if self.user_id is None:
            return Run.objects.unscoped("metrics refresh of the shared bucket: the runs nobody owns").filter(user_id__isnull=True)
        return Run.objects.for_user(self.user_id)

    def rows(self):
        if self.everyone:
            return MetricsAggregate.objects.unscoped("metrics refresh for an operator: every user's rows and the shared bucket")
        if self.user_id is None:
            return MetricsAggregate.objects.unscoped("metrics refresh of the shared bucket").filter(user_id__isnull=True)
        return MetricsAggregate.objects.for_user(self.user_id)


def states():
    return MetricsRefreshState.objects.unscoped("refresh states are keyed by scope; callers pick theirs by key")


def metrics_timezone() -> ZoneInfo:
    return ZoneInfo(settings.METRICS_TIMEZONE)


# ---- starting and ending (the status AgentOS reports) -------------------------------------------

def refresh_start(*, scope: RefreshScope, job_id: str = "", now: datetime | None = None) -> MetricsRefreshState:
    """Mark ``scope``'s refresh running (a conditional update: RefreshAlreadyRunning when one is
    already in flight and not stale)."""
    now = now or timezone.now()
    state, _ = states().get_or_create(scope=scope.key, defaults={"user_id": scope.user_id})
    stale_before = now - timedelta(seconds=settings.METRICS_REFRESH_STALE_SECONDS)
    claimed = states().filter(scope=scope.key).exclude(status=RefreshStatus.RUNNING, started_at__gte=stale_before).update(
        status=RefreshStatus.RUNNING, job_id=job_id, started_at=now, finished_at=None, error="", updated_at=now,
    )
    if not claimed:
        raise RefreshAlreadyRunning(scope.key)
    state.refresh_from_db()
    return state


def refresh_attach_job(*, scope: RefreshScope, job_id: str) -> None:
    states().filter(scope=scope.key, status=RefreshStatus.RUNNING).update(job_id=job_id, updated_at=timezone.now())


def refresh_finish(*, scope: RefreshScope, error: str = "", watermark: datetime | None = None, tz: str = "", days: int = 0) -> None:
    now = timezone.now()
    values: dict[str, Any] = {"status": RefreshStatus.FAILED if error else RefreshStatus.COMPLETED, "finished_at": now, "error": error, "updated_at": now}
    if not error:
        values.update(watermark=watermark, time_zone=tz, days_recomputed=days)
    states().filter(scope=scope.key, status=RefreshStatus.RUNNING).update(**values)


def metrics_refresh_run(*, scope: RefreshScope, job_id: str = "", full: bool = False, report: Callable[..., None] | None = None) -> list[MetricsAggregate]:
    """A whole refresh of ``scope`` (the sync endpoint, the job handler, the management command):
    marks it running, recomputes, marks it completed or failed. Returns the rows it wrote."""
    state = refresh_start(scope=scope, job_id=job_id)
    try:
        result = metrics_recompute(scope=scope, since=None if full else state.watermark, previous_tz=state.time_zone, report=report)
    except BaseException as exc:
        refresh_finish(scope=scope, error=str(exc) or type(exc).__name__)
        raise
    refresh_finish(scope=scope, watermark=result.watermark, tz=result.timezone, days=len(result.days))
    return result.rows


# ---- the computation ------------------------------------------------------------------------

@dataclass
class RefreshResult:
    watermark: datetime
    timezone: str
    days: list[date]
    rows: list[MetricsAggregate]


def metrics_recompute(
    *, scope: RefreshScope, since: datetime | None, previous_tz: str = "", now: datetime | None = None,
    report: Callable[..., None] | None = None,
) -> RefreshResult:
    """Recompute ``scope``'s rows of the days with runs updated at or after ``since`` (every day
    when None, or when the time zone changed since ``previous_tz``)."""
    tz = metrics_timezone()
    now = now or timezone.now()
    watermark = now
    full = since is None or previous_tz != tz.key
    runs = scope.runs()
    if full:
        dirty = set(_days(runs, tz)) | set(scope.rows().filter(aggregation_period=AggregationPeriod.DAILY).values_list("date", flat=True))
    else:
        overlap = timedelta(seconds=settings.METRICS_REFRESH_OVERLAP_SECONDS)
        dirty = set(_days(runs.filter(updated_at__gte=since - overlap), tz))
    # Rows of periods that have ended since they were written say so now (``completed``).
    today = now.astimezone(tz).date()
    open_rows = scope.rows().filter(completed=False).values_list("aggregation_period", "date").order_by()
    ended_months: set[date] = set()
    for period, day in open_rows:
        if period == AggregationPeriod.DAILY and day < today:
            dirty.add(day)
        elif period == AggregationPeriod.MONTHLY and _next_month(day) <= today:
            ended_months.add(day)
    by_month: dict[date, set[date]] = defaultdict(set)
    for month in ended_months:
        by_month.setdefault(month, set())
    for day in dirty:
        by_month[day.replace(day=1)].add(day)
    written: list[MetricsAggregate] = []
    for done, month in enumerate(sorted(by_month), start=1):
        written += _recompute_month(scope=scope, month=month, days=by_month[month], tz=tz, now=now)
        if report is not None:
            report(months_done=done, months_total=len(by_month), days_total=len(dirty))
    return RefreshResult(watermark=watermark, timezone=tz.key, days=sorted(dirty), rows=written)


def _days(runs, tz: ZoneInfo) -> Iterable[date]:
    """The distinct local days of ``runs``' creation (grouped in the database)."""
    for value in runs.annotate(day=TruncDate("created_at", tzinfo=tz)).values_list("day", flat=True).order_by().distinct():
        yield value if isinstance(value, date) else date.fromisoformat(str(value)[:10])


def _local_midnight(day: date, tz: ZoneInfo) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=tz)


def _next_month(month: date) -> date:
    return date(month.year + (month.month == 12), month.month % 12 + 1, 1)


@dataclass
class _Totals:
    """One row's numbers while the runs go by."""

    runs: dict[str, int] = field(default_factory=lambda: {"agent": 0, "team": 0, "workflow": 0})
    sessions: dict[str, set[str]] = field(default_factory=lambda: {"agent": set(), "team": set(), "workflow": set()})
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKEN_KEYS, 0))
    models: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    components: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    errors: int = 0
    cost: float | None = None
    durations: list[float] = field(default_factory=list)

    def add(self, run: _RunFacts) -> None:
        kind = run.session_type if run.session_type in self.runs else "agent"
        self.runs[kind] += 1
        self.sessions[kind].add(run.session_id)
        metrics = run.metrics
        self.tokens["input_tokens"] += run.input_tokens
        self.tokens["output_tokens"] += run.output_tokens
        self.tokens["total_tokens"] += run.total_tokens
        for key in TOKEN_KEYS[3:]:
            self.tokens[key] += _int(metrics.get(key))
        if isinstance(metrics.get("cost"), (int, float)):
            self.cost = (self.cost or 0.0) + float(metrics["cost"])
        failed = run.status == RunStatus.ERROR
        self.errors += failed
        for model_id, provider, tokens in _models_of(run):
            entry = self.models.setdefault((model_id, provider), {"count": 0, "input_tokens": 0, "output_tokens": 0, "total_tokens": 0})
            entry["count"] += 1
            for key in ("input_tokens", "output_tokens", "total_tokens"):
                entry[key] += tokens.get(key, 0)
        component = self.components.setdefault((run.run_type, run.component_id), {"runs": 0, "errors": 0, "total_tokens": 0})
        component["runs"] += 1
        component["errors"] += failed
        component["total_tokens"] += run.total_tokens
        # Latency is what a caller waits for: top-level runs (a member's run is inside its leader's).
        if run.duration is not None and run.parent_run_id is None:
            self.durations.append(float(run.duration))

    def fields(self, *, owned: bool) -> dict[str, Any]:
        durations = sorted(self.durations)
        histogram = [0] * (len(DURATION_BUCKETS) + 1)
        for value in durations:
            histogram[next((i for i, bound in enumerate(DURATION_BUCKETS) if value <= bound), len(DURATION_BUCKETS))] += 1
        return {
            "agent_runs_count": self.runs["agent"], "team_runs_count": self.runs["team"], "workflow_runs_count": self.runs["workflow"],
            "agent_sessions_count": len(self.sessions["agent"]), "team_sessions_count": len(self.sessions["team"]),
            "workflow_sessions_count": len(self.sessions["workflow"]), "users_count": 1 if owned else 0,
            "token_metrics": dict(self.tokens),
            "model_metrics": [
                {"model_id": model_id, "model_provider": provider, **numbers}
                for (model_id, provider), numbers in sorted(self.models.items(), key=lambda item: (-item[1]["count"], item[0]))
            ],
            "component_metrics": [
                {"component_type": kind, "component_id": component_id, **numbers}
                for (kind, component_id), numbers in sorted(self.components.items(), key=lambda item: (-item[1]["runs"], item[0]))
            ],
            "errors_count": self.errors,
            "cost": None if self.cost is None else round(self.cost, 10),
            "duration_p50": nearest_rank(durations, 0.5),
            "duration_p95": nearest_rank(durations, 0.95),
            "duration_histogram": histogram,
        }


def nearest_rank(ordered: list[float], p: float) -> float | None:
    """The nearest-rank percentile of an ascending list (as the dashboard computes it)."""
    if not ordered:
        return None
    rank = -(-len(ordered) * p // 1)  # ceil without float surprises for exact products
    return round(ordered[max(int(rank), 1) - 1], 3)


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _models_of(run: _RunFacts) -> list[tuple[str, str, dict[str, int]]]:
    """The models a run called (Agno's ``metrics.details.model`` entries), else its model column."""
    details = run.metrics.get("details") if isinstance(run.metrics.get("details"), dict) else {}
    entries = [entry for entry in (details.get("model") or []) if isinstance(entry, dict)]
    if entries:
        return [
            (str(entry.get("id") or ""), str(entry.get("provider") or ""), {key: _int(entry.get(key)) for key in ("input_tokens", "output_tokens", "total_tokens")})
            for entry in entries
        ]
    if run.model:
        return [(run.model, "", {"input_tokens": run.input_tokens, "output_tokens": run.output_tokens, "total_tokens": run.total_tokens})]
    return []


@dataclass(frozen=True)
class _RunFacts:
    user_id: str | None
    session_id: str
    session_type: str
    run_type: str
    component_id: str
    status: str
    parent_run_id: str | None
    duration: float | None
    input_tokens: int
    output_tokens: int
    total_tokens: int
    model: str
    metrics: dict[str, Any]
    created_at: datetime


_RUN_COLUMNS = (
    "user_id", "session_id", "session__session_type", "run_type", "component_id", "status", "parent_run_id", "duration",
    "input_tokens", "output_tokens", "total_tokens", "model", "run_data__metrics", "created_at",
)


def _recompute_month(*, scope: RefreshScope, month: date, days: set[date], tz: ZoneInfo, now: datetime) -> list[MetricsAggregate]:
    start, end = _local_midnight(month, tz), _local_midnight(_next_month(month), tz)
    daily: dict[tuple[str | None, date], _Totals] = defaultdict(_Totals)
    monthly: dict[str | None, _Totals] = defaultdict(_Totals)
    # Only the metrics subtree of run_data is read (not the messages), in chunks.
    facts = scope.runs().filter(created_at__gte=start, created_at__lt=end).values_list(*_RUN_COLUMNS).order_by()
    for row in facts.iterator(chunk_size=5000):
        run = _RunFacts(*row[:12], metrics=row[12] if isinstance(row[12], dict) else {}, created_at=row[13])
        monthly[run.user_id].add(run)
        day = run.created_at.astimezone(tz).date()
        if day in days:
            daily[(run.user_id, day)].add(run)
    fresh: dict[str, MetricsAggregate] = {}
    for (owner, day), totals in daily.items():
        row = _row(owner, day, AggregationPeriod.DAILY, totals, tz, completed=_local_midnight(day + timedelta(days=1), tz) <= now, now=now)
        fresh[row.id] = row
    for owner, totals in monthly.items():
        row = _row(owner, month, AggregationPeriod.MONTHLY, totals, tz, completed=end <= now, now=now)
        fresh[row.id] = row
    return _write(scope=scope, month=month, days=days, fresh=fresh)


def row_id(owner: str | None, day: date, period: str) -> str:
    return f"{day.isoformat()}_{period}" + ("" if owner is None else f"_{owner}")


def _row(owner: str | None, day: date, period: str, totals: _Totals, tz: ZoneInfo, *, completed: bool, now: datetime) -> MetricsAggregate:
    return MetricsAggregate(
        id=row_id(owner, day, period), user_id=owner, date=day, aggregation_period=period, time_zone=tz.key, completed=completed,
        created_at=now, updated_at=now, **totals.fields(owned=owner is not None),
    )


def _write(*, scope: RefreshScope, month: date, days: set[date], fresh: dict[str, MetricsAggregate]) -> list[MetricsAggregate]:
    """Replace the scope's rows of ``days`` and of ``month`` by ``fresh``: rows whose numbers are
    the same stay as they are; changed ones keep their created_at; rows of days that lost all
    their runs go."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [REFRESH_LOCK_KEY])
        current = scope.rows().filter(date__in=sorted(days), aggregation_period=AggregationPeriod.DAILY) | scope.rows().filter(
            date=month, aggregation_period=AggregationPeriod.MONTHLY,
        )
        existing = {row.id: row for row in current}
        gone = [row_id for row_id in existing if row_id not in fresh]
        changed: list[MetricsAggregate] = []
        for key, row in fresh.items():
            old = existing.get(key)
            if old is not None and all(getattr(old, name) == getattr(row, name) for name in CONTENT_FIELDS):
                continue
            if old is not None:
                row.created_at = old.created_at
                gone.append(key)
            changed.append(row)
        if gone:
            scope.rows().filter(id__in=gone).delete()
        # The project's compiled INSERT (one executemany; bulk_create's per-value preparation and
        # PostgreSQL array encoding of the JSON columns cost 20x more, bench/metrics_refresh.py).
        _ROW_INSERT.rows([getattr(row, field.attname) for field in _ROW_INSERT.fields] for row in changed)
    return changed


_ROW_INSERT = Insert(MetricsAggregate)


def metrics_refresh_enqueue(*, scope: RefreshScope, full: bool = False, idempotency_key: str | None = None) -> str | None:
    """Start ``scope``'s refresh as a background job (RefreshAlreadyRunning when one is in
    flight). Returns the job's id; ``GET /metrics/refresh/status`` follows it.

    The claim (the state marked running) and the job commit together, so two processes asking at
    once start one refresh. ``idempotency_key``: None, and nothing started, when a refresh was
    already accepted under it (the periodic refresh's key names its interval)."""
    from jobs.services.jobs import DuplicateJob, QueueFull, job_enqueue

    from .tasks import METRICS_REFRESH_JOB

    try:
        with transaction.atomic():
            refresh_start(scope=scope)
            job = job_enqueue(
                job_type=METRICS_REFRESH_JOB, owner_id=scope.user_id, idempotency_key=idempotency_key,
                payload={"scope": scope.key, "user_id": scope.user_id, "full": full},
            )
            refresh_attach_job(scope=scope, job_id=job.pk)
    except DuplicateJob:
        return None
    except QueueFull as exc:  # nothing runs: the status says why
        refresh_refused(scope=scope, error=str(exc))
        raise
    return job.pk


def refresh_refused(*, scope: RefreshScope, error: str) -> None:
    """A refresh that could not start (the queue is full) reads as failed, with the reason."""
    now = timezone.now()
    states().get_or_create(scope=scope.key, defaults={"user_id": scope.user_id})
    states().filter(scope=scope.key).exclude(status=RefreshStatus.RUNNING).update(
        status=RefreshStatus.FAILED, started_at=now, finished_at=now, error=error, updated_at=now,
    )


def metrics_refresh_periodic(*, now: datetime | None = None) -> str | None:
    """The periodic refresh of every user's rows (beat's task, or the embedded refresher), every
    ``METRICS_REFRESH_INTERVAL_SECONDS`` (0: never). Idempotent: the job's key names the interval
    (``now`` cut into intervals since the epoch), so however many beats, web processes or
    deliveries ask during one interval, one refresh is accepted; and none starts while another
    refresh of everyone is running. Returns the accepted job's id, or None."""
    interval = settings.METRICS_REFRESH_INTERVAL_SECONDS
    if interval <= 0:
        return None
    now = now or timezone.now()
    key = f"periodic:{interval}:{int(now.timestamp()) // interval}"
    from jobs.services.jobs import QueueFull

    try:
        job_id = metrics_refresh_enqueue(scope=RefreshScope.of(ALL_USERS), idempotency_key=key)
    except RefreshAlreadyRunning:
        logger.info("periodic metrics refresh skipped: a refresh of every user's rows is running")
        return None
    except QueueFull as exc:  # the next interval tries again; the status says why meanwhile
        logger.warning("periodic metrics refresh not started: %s", exc)
        return None
    if job_id is not None:
        logger.info("periodic metrics refresh accepted as job %s", job_id)
    return job_id
