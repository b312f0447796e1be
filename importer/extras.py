"""The rest of an Agno database: eval runs, metrics rows, knowledge contents and schedules.

Each source row becomes one row of ours under its source id (metrics: under its owner, day and
period), so a second import finds it and adds nothing; a row that cannot be imported as it is
raises ``RowError`` and nothing of it is written. Every row keeps its source ``user_id``
(agno's ``''`` owner of metrics rows is our NULL, the shared bucket).

* **Eval runs** (``agno_eval_runs``) keep their run id, type, name, component ids, model,
  input and result; they are completed runs here, with the score our evals compute from the result.
* **Metrics** (``agno_metrics``) keep their counts, token and model metrics per (user, date,
  period). Ours are derived from the runs: a day we have a row for already keeps ours, and a
  refresh recomputes the imported days from the imported runs.
* **Knowledge contents** (``agno_knowledge``): agno keeps only the content's description there
  (its text is in a vector database this import does not read). Each becomes a content of a
  knowledge base named after its ``linked_to`` (agno's knowledge name; ``Imported from Agno``
  when unnamed), owned as the source row, marked ``failed`` with a message that says how to
  ingest it again: a content whose name is a URL is ``url`` content, which *Refresh* fetches and
  embeds; another must be uploaded again. Agno's own fields stay in ``metadata["agno"]``.
* **Schedules** (``agno_schedules``) come in **disabled** (``disabled_reason`` says why): an
  imported schedule holds no grant of ours, so its owner reviews and enables it, which records
  the rights it fires with. Their fires (``agno_schedule_runs``) come with them, under the
  schedule's owner, as the history of the schedule.

The rows are written here rather than through each family's create service, as the importer
writes sessions and runs: those services mint new ids, times, jobs and grants, where an import
keeps the source's (and must start nothing: no eval runs, no ingestion, no schedule fires).
"""
from __future__ import annotations

from datetime import date, datetime, timezone as dt_timezone
from typing import Any

from django.db import transaction
from django.utils import timezone

from evals.kinds import score_of
from evals.models import ComponentKind, EvalRun, EvalStatus, EvalType
from knowledge.models import Content, ContentStatus, KnowledgeBase, SourceType
from metrics.models import AggregationPeriod, MetricsAggregate
from scheduler.models import Schedule, ScheduleRun, ScheduleRunStatus

from .models import ImportedRecord
from .sources import MalformedValue, decode_json

EXTRA_TABLES = {
    "evals": "agno_eval_runs", "metrics": "agno_metrics", "knowledge": "agno_knowledge", "schedules": "agno_schedules",
    "schedule_runs": "agno_schedule_runs",
}
ORDER = {
    "evals": "created_at, run_id", "metrics": "date, aggregation_period, user_id", "knowledge": "id", "schedules": "created_at, id",
    "schedule_runs": "created_at, id",
}
DEFAULT_BASE = "Imported from Agno"
SCHEDULE_DISABLED = "Imported from Agno disabled: review it and enable it to let it fire"


class RowError(Exception):
    """A source row that cannot be imported as it is (importer.services re-raises it as its own).

    ``users``: the users of ours its reason names (the holder of a taken id), so that erasing
    one of them anonymises the failure in the reports kept (``importer.erasure``)."""

    def __init__(self, message: str, *, users: tuple[str | None, ...] = ()) -> None:
        super().__init__(message)
        self.users = tuple(user for user in users if user)


def _when(epoch: Any) -> datetime | None:
    try:
        value = float(epoch)
    except (TypeError, ValueError):
        return None
    return datetime.fromtimestamp(value, tz=dt_timezone.utc) if value > 0 else None


def json_cell(row: dict[str, Any], column: str, kind: type, default: Any) -> Any:
    """A JSON cell of ``kind`` (dict or list), ``default`` when null; RowError when it is not."""
    try:
        value = decode_json(row.get(column), column=column)
    except MalformedValue as exc:
        raise RowError(str(exc)) from None
    if value is None:
        return default
    if not isinstance(value, kind):
        raise RowError(f"{column} is not a JSON {'object' if kind is dict else 'list'}")
    return value


def _any_json(row: dict[str, Any], column: str) -> Any:
    try:
        return decode_json(row.get(column), column=column)
    except MalformedValue as exc:
        raise RowError(str(exc)) from None


def _record(kind: str, source_id: str, owner: str | None, label: str) -> None:
    ImportedRecord.all_users.get_or_create(kind=kind, source_id=source_id, defaults={"user_id": owner, "source": label})


def _held(model: Any, pk: str, owner: str | None) -> bool:
    """True when the id is this owner's already (imported before); RowError when another user holds it."""
    holders = list(model.all_users.filter(pk=pk).values_list("user_id", flat=True)[:1])
    if not holders:
        return False
    if holders[0] != owner:
        raise RowError(f"id is taken here by another user ({holders[0]!r})", users=(holders[0],))
    return True


def row_id(kind: str, row: dict[str, Any]) -> str:
    if kind == "evals":
        return str(row.get("run_id") or "")
    if kind == "metrics":
        return f"{row.get('date')}/{row.get('aggregation_period')}/{row.get('user_id') or ''}"
    if kind == "learnings":
        return str(row.get("learning_id") or "")
    return str(row.get("id") or "")


def row_owner(kind: str, row: dict[str, Any]) -> str | None:
    return row.get("user_id") or None


def import_eval(row: dict[str, Any], label: str) -> bool:
    run_id, owner = row_id("evals", row), row_owner("evals", row)
    if not run_id:
        raise RowError("eval run has no run_id")
    if _held(EvalRun, run_id, owner):
        return False
    eval_type = str(row.get("eval_type") or "")
    if eval_type not in EvalType.values:
        raise RowError(f"unknown eval_type {eval_type!r}")
    eval_data = json_cell(row, "eval_data", dict, {})
    eval_input = json_cell(row, "eval_input", dict, {})
    kind = ComponentKind.TEAM if row.get("team_id") else ComponentKind.WORKFLOW if row.get("workflow_id") else ComponentKind.AGENT
    created = _when(row.get("created_at")) or timezone.now()
    with transaction.atomic():
        EvalRun(
            run_id=run_id, user_id=owner, eval_type=eval_type, name=row.get("name"), component_kind=kind,
            agent_id=row.get("agent_id"), team_id=row.get("team_id"), workflow_id=row.get("workflow_id"),
            model_id=row.get("model_id"), model_provider=row.get("model_provider"),
            evaluated_component_name=row.get("evaluated_component_name"), eval_input=eval_input, eval_data=eval_data,
            status=EvalStatus.COMPLETED, score=score_of(eval_type, eval_data), created_at=created,
            updated_at=_when(row.get("updated_at")) or created,
        ).save(force_insert=True)
        _record("eval", run_id, owner, label)
    return True


def _day(value: Any) -> date:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value)[:10])
    except ValueError:
        raise RowError(f"date {value!r} is not a date") from None


def import_metrics(row: dict[str, Any], label: str) -> bool:
    owner = row_owner("metrics", row)
    day = _day(row.get("date"))
    period = str(row.get("aggregation_period") or "")
    if period not in AggregationPeriod.values:
        raise RowError(f"unknown aggregation_period {period!r}")
    existing = MetricsAggregate.all_users.filter(date=day, aggregation_period=period)
    existing = existing.filter(user_id=owner) if owner else existing.filter(user_id__isnull=True)
    if existing.exists():
        return False  # ours (computed here, or imported before) stands
    model_metrics = json_cell(row, "model_metrics", (list, dict), [])
    if isinstance(model_metrics, dict):  # agno writes a list; an empty object is its column default
        model_metrics = [{"model_id": key, "count": value} for key, value in model_metrics.items()]
    counts = {}
    for name in ("agent_runs_count", "team_runs_count", "workflow_runs_count", "agent_sessions_count",
                 "team_sessions_count", "workflow_sessions_count", "users_count"):
        try:
            counts[name] = max(0, int(row.get(name) or 0))
        except (TypeError, ValueError):
            raise RowError(f"{name} is not a number") from None
    created = _when(row.get("created_at")) or timezone.now()
    key = f"{day.isoformat()}_{period}" + (f"_{owner}" if owner else "")
    with transaction.atomic():
        MetricsAggregate(
            id=key, user_id=owner, date=day, aggregation_period=period, **counts,
            token_metrics=json_cell(row, "token_metrics", dict, {}), model_metrics=model_metrics,
            completed=bool(row.get("completed")), created_at=created, updated_at=_when(row.get("updated_at")) or created,
        ).save(force_insert=True)
        _record("metrics", row_id("metrics", row), owner, label)
    return True


def _base(name: str, owner: str | None) -> KnowledgeBase:
    from knowledge.services.bases import base_get_or_create

    return base_get_or_create(name=name[:255], user_id=owner)


def import_knowledge(row: dict[str, Any], label: str) -> bool:
    content_id, owner = row_id("knowledge", row), row_owner("knowledge", row)
    if not content_id:
        raise RowError("knowledge content has no id")
    if len(content_id) > Content._meta.get_field("id").max_length:
        raise RowError("id is longer than 64 characters")
    if _held(Content, content_id, owner):
        return False
    metadata = json_cell(row, "metadata", dict, {})
    name = str(row.get("name") or "")
    is_url = name.startswith(("http://", "https://")) and len(name) <= 2000
    agno = {
        key: row.get(key) for key in ("type", "size", "linked_to", "access_count", "status", "status_message", "external_id")
        if row.get(key) is not None
    }
    again = "Refresh it to fetch and embed it again" if is_url else "Upload it again to search it"
    created = _when(row.get("created_at")) or timezone.now()
    with transaction.atomic():
        base = _base(str(row.get("linked_to") or DEFAULT_BASE), owner)
        Content(
            id=content_id, user_id=owner, base=base, name=name[:500], description=str(row.get("description") or ""),
            source_type=SourceType.URL if is_url else SourceType.UPLOAD, url=name if is_url else "",
            file_name="" if is_url else name[:500], size=row.get("size") if isinstance(row.get("size"), int) else None,
            metadata={**metadata, "agno": agno}, status=ContentStatus.FAILED,
            status_message=f"Imported from Agno without its text (agno keeps it in its vector database). {again}.",
            created_at=created, updated_at=_when(row.get("updated_at")) or created,
        ).save(force_insert=True)
        _record("content", content_id, owner, label)
    return True


def import_schedule(row: dict[str, Any], label: str) -> bool:
    schedule_id, owner = row_id("schedules", row), row_owner("schedules", row)
    if not schedule_id:
        raise RowError("schedule has no id")
    if _held(Schedule, schedule_id, owner):
        return False
    name = str(row.get("name") or "")
    if not name or not row.get("endpoint"):
        raise RowError("schedule has no name or no endpoint")
    same_name = Schedule.all_users.filter(name=name)
    same_name = same_name.filter(user_id=owner) if owner else same_name.filter(user_id__isnull=True)
    if same_name.exists():
        raise RowError(f"this owner already has a schedule named {name!r} here")
    payload = json_cell(row, "payload", dict, None)
    numbers = {}
    for column, default in (("timeout_seconds", 3600), ("max_retries", 0), ("retry_delay_seconds", 60)):
        try:
            numbers[column] = max(0, int(row.get(column) if row.get(column) is not None else default))
        except (TypeError, ValueError):
            raise RowError(f"{column} is not a number") from None
    provenance = {
        column: row.get(column) for column in (
            "managed_by", "target_type", "target_id", "created_by_run_id", "created_by_session_id",
            "updated_by_run_id", "updated_by_session_id",
        )
    }
    reason = row.get("disabled_reason") or SCHEDULE_DISABLED
    created = _when(row.get("created_at")) or timezone.now()
    with transaction.atomic():
        Schedule(
            id=schedule_id, user_id=owner, name=name[:255], description=row.get("description"),
            method=str(row.get("method") or "POST")[:10], endpoint=str(row["endpoint"])[:512], payload=payload,
            cron_expr=str(row.get("cron_expr") or "")[:128], timezone=str(row.get("timezone") or "UTC")[:64], **numbers,
            enabled=False, next_run_at=None, disabled_reason=str(reason)[:1024], grant=None, **provenance,
            created_at=created, updated_at=_when(row.get("updated_at")),
        ).save(force_insert=True)
        _record("schedule", schedule_id, owner, label)
    return True


def import_schedule_run(row: dict[str, Any], label: str) -> bool:
    run_id, owner = row_id("schedule_runs", row), row_owner("schedule_runs", row)
    if not run_id:
        raise RowError("schedule run has no id")
    schedule_id = str(row.get("schedule_id") or "")
    holders = list(Schedule.all_users.filter(pk=schedule_id).values_list("user_id", flat=True)[:1])
    if not holders:
        raise RowError(f"its schedule {schedule_id} is not here (not imported)")
    if row.get("user_id") is not None and holders[0] != owner:
        raise RowError(f"its schedule {schedule_id} belongs to another user here")
    owner = holders[0]  # agno 2.x keeps no owner on a fire: the schedule's
    if _held(ScheduleRun, run_id, owner):
        return False
    status = str(row.get("status") or "").lower()
    if status not in ScheduleRunStatus.values:
        raise RowError(f"unknown status {status!r}")
    created = _when(row.get("created_at")) or timezone.now()
    triggered = _when(row.get("triggered_at")) or created
    completed = _when(row.get("completed_at"))
    if ScheduleRun.all_users.filter(schedule_id=schedule_id, scheduled_for=triggered).filter(
        **({"user_id": owner} if owner else {"user_id__isnull": True})
    ).exists():
        raise RowError("its schedule already has a fire at that time here")
    try:
        attempt, status_code = max(1, int(row.get("attempt") or 1)), row.get("status_code")
        status_code = int(status_code) if status_code is not None else None
    except (TypeError, ValueError):
        raise RowError("attempt or status_code is not a number") from None
    with transaction.atomic():
        ScheduleRun(
            id=run_id, user_id=owner, schedule_id=schedule_id, scheduled_for=triggered, attempt=attempt, status=status,
            status_code=status_code, run_id=row.get("run_id"), session_id=row.get("session_id"), error=row.get("error"),
            input=_any_json(row, "input"), output=_any_json(row, "output"), requirements=_any_json(row, "requirements"), triggered_at=triggered, completed_at=completed,
            duration_ms=int((completed - triggered).total_seconds() * 1000) if completed and completed >= triggered else None,
            created_at=created,
        ).save(force_insert=True)
        _record("schedule_run", run_id, owner, label)
    return True


IMPORTERS = {
    "evals": import_eval, "metrics": import_metrics, "knowledge": import_knowledge, "schedules": import_schedule,
    "schedule_runs": import_schedule_run,
}
