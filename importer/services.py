"""Import an Agno database (sessions, runs, user memories; eval runs, metrics, knowledge contents and
schedules through ``importer.extras``; learnings through ``importer.learnings``) into ours: ``agno_import``.

Rules (documented in the README, "Importing an Agno database"):

* **Keys.** Our rows keep the source ids (session_id, run_id, memory_id), so a second import finds
  them and adds nothing. A session already imported gets only the runs it lacks, appended after
  its runs (a source that grew since the first import).
* **Order.** Runs keep the source order: the ``agno_runs`` rows by ``run_index`` (3.x), the blob's
  order (2.x), or both merged as Agno 3.x reads them (blob order, the table's copy wins for an id in
  both, table-only runs after). Nothing is imported twice. Team member runs are the member rows
  (``parent_run_id`` = the team run); the copies nested in ``member_responses`` stay in the team
  run's data. Workflow step runs (only nested in ``step_executor_runs``) become their own rows,
  right after their workflow run, with ``parent_run_id`` = the workflow run.
* **All or nothing per session.** A session and its runs are written in one transaction; a
  malformed cell (JSON that is not JSON, a run without an id, a run id taken by another session)
  fails that session, which is reported with its id and left out entirely. A run row whose session
  is missing from the source is reported as a failed run.
* **User collisions.** A source user id that already owns sessions or memories here that no
  import wrote (a native user of ours with the same id) collides: that user's sessions and
  memories (and their evals, metrics, knowledge and schedules) are skipped and the user is
  reported, unless ``merge_users`` names them (or is True).
  A session or memory id already held by another user here is reported as failed.
* The source is opened read-only (``importer.sources``).
"""
from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone as dt_timezone
from typing import Any, NamedTuple

from django.db import DatabaseError, transaction
from django.db.models import F
from django.utils import timezone

from engine.output import has_usage, session_metrics_add
from sessions.models import Run, RunEvent, RunStatus, Session, SessionType, UserMemory
from sessions.services.memories import memory_topics_key
from sessions.services.runs import content_text, session_name_from_input

from .extras import EXTRA_TABLES, IMPORTERS, ORDER, RowError, row_id, row_owner
from .learnings import ORDER as LEARNINGS_ORDER, TABLE as LEARNINGS_TABLE, import_learning
from .models import ImportedRecord
from .sources import AgnoSource, MalformedValue, decode_json, decode_text, open_source

KINDS = ("sessions", "runs", "members", "steps", "memories", "evals", "metrics", "knowledge", "schedules", "schedule_runs", "learnings")
_SINGULAR = {
    "sessions": "session", "runs": "run", "members": "member run", "steps": "step run", "memories": "memory",
    "evals": "eval run", "metrics": "metrics row", "knowledge": "knowledge content", "schedules": "schedule", "schedule_runs": "schedule run",
    "learnings": "learning",
}
_STEP_NAMESPACE = uuid.UUID("5b0d8a4e-4f4e-4c55-9a55-6f0d1f6f1a36")
# The tables besides sessions, runs and memories, in import order (learnings last: their rows name
# the users, agents and sessions the others bring).
TABLES = {**EXTRA_TABLES, "learnings": LEARNINGS_TABLE}
ORDERS = {**ORDER, "learnings": LEARNINGS_ORDER}
ROW_IMPORTERS = {**IMPORTERS, "learnings": import_learning}
_TERMINAL = (RunStatus.COMPLETED, RunStatus.ERROR, RunStatus.CANCELLED, RunStatus.REGENERATED)


class Failure(NamedTuple):
    """A source row left out, and why. ``users``: whose row it is and any user of ours its reason
    names, so that erasing one of them can anonymise it in the reports kept (``importer.erasure``)."""

    kind: str
    source_id: str
    reason: str
    users: tuple[str, ...] = ()


@dataclass
class ImportReport:
    source: str = ""
    layout: str = ""
    imported: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    skipped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    failed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    failures: list[Failure] = field(default_factory=list)
    colliding_users: list[str] = field(default_factory=list)

    def fail(self, kind: str, source_id: str, reason: str, *, users: Iterable[str | None] = ()) -> None:
        self.failed[kind] += 1
        self.failures.append(Failure(kind, source_id, reason, tuple(sorted({str(user) for user in users if user}))))

    def as_dict(self) -> dict[str, Any]:
        """The report as the admin keeps and shows it (``AgnoImport.report``)."""
        return {
            "source": self.source, "layout": self.layout,
            "counts": [
                {"kind": kind, "imported": self.imported[kind], "skipped": self.skipped[kind], "failed": self.failed[kind]}
                for kind in KINDS
            ],
            "colliding_users": list(self.colliding_users),
            "failures": [
                {"kind": _SINGULAR[kind], "id": source_id, "reason": reason, "users": list(users)}
                for kind, source_id, reason, users in self.failures
            ],
        }

    def lines(self) -> list[str]:
        out = [f"Imported from {self.source} (Agno {self.layout} layout)", f"{'':14}{'imported':>10}{'skipped':>10}{'failed':>10}"]
        for kind in KINDS:
            out.append(f"{kind:14}{self.imported[kind]:>10}{self.skipped[kind]:>10}{self.failed[kind]:>10}")
        for user in self.colliding_users:
            out.append(f"user {user!r} already has rows here that no import wrote: skipped (pass --merge-user {user} to import into them)")
        for kind, source_id, reason, _ in self.failures:
            out.append(f"failed {_SINGULAR[kind]} {source_id}: {reason}")
        return out


def _when(epoch: Any, default: datetime | None = None) -> datetime | None:
    try:
        value = float(epoch)
    except (TypeError, ValueError):
        return default
    if value <= 0:
        return default
    return datetime.fromtimestamp(value, tz=dt_timezone.utc)


def _dict_or_none(value: Any, column: str) -> dict[str, Any] | None:
    value = decode_json(value, column=column)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise MalformedValue(f"{column} is not a JSON object")
    return value


# -- the runs of one source session, in order -------------------------------------------------


@dataclass
class SourceRun:
    data: dict[str, Any]
    run_type: str
    parent_run_id: str | None
    status: str
    created_at: datetime
    updated_at: datetime
    kind: str  # "runs", "members" or "steps"


def _run_kind(data: dict[str, Any], declared: Any = None) -> str:
    if declared in (SessionType.AGENT, SessionType.TEAM, SessionType.WORKFLOW):
        return str(declared)
    if data.get("agent_id"):
        return SessionType.AGENT
    if data.get("team_id"):
        return SessionType.TEAM
    return SessionType.WORKFLOW


def _source_run(data: Any, *, row: dict[str, Any] | None, session_created: datetime, where: str) -> SourceRun:
    if not isinstance(data, dict):
        raise RowError(f"{where} is not a JSON object")
    run_id = data.get("run_id") or (row or {}).get("run_id")
    if not isinstance(run_id, str) or not run_id:
        raise RowError(f"{where} has no run_id")
    if len(run_id) > Run._meta.get_field("run_id").max_length:
        raise RowError(f"run {run_id[:80]!r} has an id longer than {Run._meta.get_field('run_id').max_length} characters")
    data = {**data, "run_id": run_id}
    row = row or {}
    parent = row.get("parent_run_id") or data.get("parent_run_id") or None
    status = str(row.get("status") or data.get("status") or RunStatus.COMPLETED).upper()
    if status not in RunStatus.values:
        raise RowError(f"run {run_id} has an unknown status {status!r}")
    created = _when(data.get("created_at")) or _when(row.get("created_at")) or session_created
    updated = _when(row.get("updated_at")) or created
    return SourceRun(
        data=data, run_type=_run_kind(data, row.get("run_type")), parent_run_id=parent, status=status,
        created_at=created, updated_at=updated, kind="members" if parent else "runs",
    )


def _ordered_runs(source: AgnoSource, session_row: dict[str, Any], session_created: datetime) -> list[SourceRun]:
    """Blob order first with the table's copy substituted, then table-only runs (Agno 3.x's merge)."""
    table: list[SourceRun] = []
    for row in source.session_runs(session_row["session_id"]):
        try:
            data = decode_json(row["run_data"], column=f"run_data of run {row['run_id']}")
        except MalformedValue as exc:
            raise RowError(str(exc)) from None
        table.append(_source_run(data, row=row, session_created=session_created, where=f"run {row['run_id']}"))
    blob: list[SourceRun] = []
    if "runs" in session_row:
        try:
            entries = decode_json(session_row["runs"], column="runs")
        except MalformedValue as exc:
            raise RowError(str(exc)) from None
        if entries is not None and not isinstance(entries, list):
            raise RowError("runs is not a JSON list")
        for position, entry in enumerate(entries or []):
            blob.append(_source_run(entry, row=None, session_created=session_created, where=f"runs[{position}]"))
    by_id = {run.data["run_id"]: run for run in table}
    ordered, seen = [], set()
    for run in [*blob, *table]:
        run_id = run.data["run_id"]
        if run_id in seen:
            continue
        seen.add(run_id)
        ordered.append(by_id.get(run_id, run))
    # Workflow step runs exist only inside their workflow run: explode them after it.
    exploded: list[SourceRun] = []
    for run in ordered:
        exploded.append(run)
        for position, step in enumerate(run.data.get("step_executor_runs") or []):
            if not isinstance(step, dict):
                raise RowError(f"run {run.data['run_id']}: step_executor_runs[{position}] is not a JSON object")
            if not step.get("run_id"):
                step = {**step, "run_id": str(uuid.uuid5(_STEP_NAMESPACE, f"{run.data['run_id']}/{position}"))}
            child = _source_run({**step, "parent_run_id": step.get("parent_run_id") or run.data["run_id"]}, row=None,
                                session_created=run.created_at, where=f"run {run.data['run_id']} step {position}")
            child.kind = "steps"
            if child.data["run_id"] not in seen:
                seen.add(child.data["run_id"])
                exploded.append(child)
    return exploded


# -- writing ------------------------------------------------------------------------------------


def _component_id(data: dict[str, Any], run_type: str) -> str:
    value = data.get(f"{run_type}_id") or data.get("agent_id") or data.get("team_id") or data.get("workflow_id")
    return str(value or "")


def _run_input(data: dict[str, Any]) -> dict[str, Any]:
    value = data.get("input")
    if isinstance(value, dict):
        return value
    if value is None:
        return {}
    # A workflow's input is a bare string in Agno; ours keeps it as input_content (run_data keeps the original).
    return {"input_content": value}


def _branch_tip(session_id: str, owner: str | None) -> str | None:
    """The last top-level run of the active branch of a session runs are appended to."""
    runs = Run.all_users.filter(session_id=session_id, user_id=owner, parent_run_id__isnull=True, branch_active=True)
    return runs.order_by("-run_index").values_list("run_id", flat=True).first()


def _run_row(run: SourceRun, *, session: Session, index: int) -> tuple[Run, list[dict[str, Any]]]:
    data = dict(run.data)
    events = data.pop("events", None) or []
    if not isinstance(events, list) or not all(isinstance(event, dict) for event in events):
        raise RowError(f"run {data['run_id']}: events is not a list of objects")
    metrics = data.get("metrics") if isinstance(data.get("metrics"), dict) else {}
    input_tokens, output_tokens = int(metrics.get("input_tokens") or 0), int(metrics.get("output_tokens") or 0)
    content = content_text(data.get("content"))
    duration = metrics.get("duration")
    return Run(
        run_id=data["run_id"],
        session_id=session.session_id,
        user_id=session.user_id,
        run_type=run.run_type,
        component_id=_component_id(data, run.run_type),
        run_index=index,
        parent_run_id=run.parent_run_id,
        status=run.status,
        input=_run_input(data),
        content=content,
        run_data=data,
        model=str(data.get("model") or "")[:255],
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=input_tokens + output_tokens,
        duration=float(duration) if isinstance(duration, (int, float)) else None,
        error=content if run.status == RunStatus.ERROR else "",
        created_at=run.created_at,
        updated_at=run.updated_at,
        started_at=run.created_at,
        finished_at=run.updated_at if run.status in _TERMINAL else None,
    ), events


def _new_session(row: dict[str, Any], runs: list[SourceRun], *, owner: str | None) -> Session:
    session_id = row["session_id"]
    session_type = str(row.get("session_type") or SessionType.AGENT)
    if session_type not in SessionType.values:
        raise RowError(f"unknown session_type {session_type!r}")
    try:
        session_data = _dict_or_none(row.get("session_data"), "session_data") or {}
        component_data = _dict_or_none(row.get(f"{session_type}_data"), f"{session_type}_data")
        metadata = _dict_or_none(row.get("metadata"), "metadata")
        summary = _dict_or_none(row.get("summary"), "summary")
    except MalformedValue as exc:
        raise RowError(str(exc)) from None
    created = _when(row.get("created_at"), timezone.now())
    name = session_data.get("session_name")
    if not isinstance(name, str) or not name:
        first = next((run for run in runs if run.kind == "runs"), None)
        name = session_name_from_input(str(_run_input(first.data).get("input_content") or "")) if first else ""
    state = session_data.get("session_state")
    metrics = session_data.get("session_metrics") if isinstance(session_data.get("session_metrics"), dict) else None
    if metrics is None:
        # No session metrics stored: add up the runs', as our own writer does for a run and its children.
        metrics = {}
        for run in runs:
            run_metrics = run.data.get("metrics")
            if isinstance(run_metrics, dict) and has_usage(run_metrics):
                metrics = session_metrics_add(metrics, run_metrics)
    return Session(
        session_id=session_id,
        user_id=owner,
        session_type=session_type,
        component_id=str(row.get(f"{session_type}_id") or ""),
        session_name=name[:500],
        session_state=state if isinstance(state, dict) else {},
        metadata=metadata,
        summary=summary,
        component_data=component_data,
        metrics=metrics,
        total_tokens=int(metrics.get("total_tokens") or 0),
        next_run_index=0,
        created_at=created,
        updated_at=_when(row.get("updated_at"), created),
    )


def _import_session(source: AgnoSource, row: dict[str, Any], report: ImportReport) -> None:
    session_id = str(row["session_id"])
    owner = row.get("user_id")
    created = _when(row.get("created_at"), timezone.now())
    runs = _ordered_runs(source, row, created)
    with transaction.atomic():
        existing = Session.all_users.select_for_update().filter(pk=session_id).first()
        if existing is not None and existing.user_id != owner:
            raise RowError(f"session id is taken here by another user ({existing.user_id!r})", users=(existing.user_id,))
        if existing is None:
            session = _new_session(row, runs, owner=owner)
            session.save(force_insert=True)
            ImportedRecord.all_users.get_or_create(kind="session", source_id=session_id, defaults={"user_id": owner, "source": source.label})
            present: set[str] = set()
        else:
            session = existing
            # all_users: the owner may be None (an unowned Agno session), which for_user() refuses.
            present = set(Run.all_users.filter(session_id=session_id, user_id=owner).values_list("run_id", flat=True))
        new = [run for run in runs if run.data["run_id"] not in present]
        taken = set(
            Run.all_users.filter(run_id__in=[run.data["run_id"] for run in new]).values_list("run_id", flat=True)
        )
        if taken:
            raise RowError(f"run id {sorted(taken)[0]} is taken here by another session")
        index = session.next_run_index
        rows, events = [], []
        # An imported conversation is one branch: each top-level run follows the one before it.
        previous = _branch_tip(session_id, owner) if existing is not None else None
        for run in new:
            record, run_events = _run_row(run, session=session, index=index)
            if record.parent_run_id is None:
                record.previous_run_id, previous = previous, record.run_id
            rows.append(record)
            events.extend(
                RunEvent(run_id=record.run_id, user_id=owner, event_index=position, event=str(event.get("event", ""))[:64],
                         payload=event, created_at=_when(event.get("created_at"), record.created_at))
                for position, event in enumerate(run_events)
            )
            index += 1
        Run.all_users.bulk_create(rows)
        RunEvent.all_users.bulk_create(events)
        changes: dict[str, Any] = {"next_run_index": index}
        if existing is not None and rows:  # runs appended to an imported session add their tokens to it
            changes["total_tokens"] = F("total_tokens") + sum(row.total_tokens for row in rows)
        Session.all_users.filter(pk=session_id, user_id=owner).update(**changes)
    if existing is None:
        report.imported["sessions"] += 1
    else:
        report.skipped["sessions"] += 1
    for run in runs:
        bucket = report.skipped if run.data["run_id"] in present else report.imported
        bucket[run.kind] += 1


def _import_memory(row: dict[str, Any], source: AgnoSource, report: ImportReport) -> None:
    memory_id = str(row.get("memory_id") or "")
    owner = row.get("user_id")
    if not memory_id:
        raise RowError("memory has no memory_id")
    text = decode_text(row.get("memory"))
    if not text:
        raise RowError("memory is empty")
    try:
        topics = decode_json(row.get("topics"), column="topics") or []
    except MalformedValue as exc:
        raise RowError(str(exc)) from None
    if not isinstance(topics, list):
        raise RowError("topics is not a JSON list")
    topics = [str(topic) for topic in topics]
    holders = list(UserMemory.all_users.filter(pk=memory_id).values_list("user_id", flat=True))
    if holders:
        existing = holders[0]
        if existing != owner:
            raise RowError(f"memory id is taken here by another user ({existing!r})", users=(existing,))
        report.skipped["memories"] += 1
        return
    created = _when(row.get("created_at"), timezone.now())
    with transaction.atomic():
        UserMemory(
            memory_id=memory_id, user_id=owner, memory=text, topics=topics, topics_key=memory_topics_key(topics),
            input=str(row.get("input") or ""), agent_id=row.get("agent_id"), team_id=row.get("team_id"),
            created_at=created, updated_at=_when(row.get("updated_at"), created),
        ).save(force_insert=True)
        ImportedRecord.all_users.create(kind="memory", source_id=memory_id, user_id=owner, source=source.label)
    report.imported["memories"] += 1


def colliding_users(user_ids: Collection[str | None]) -> list[str]:
    """The user ids that own sessions or memories here which no import wrote (native users)."""
    ids = sorted({user for user in user_ids if user})
    if not ids:
        return []
    imported = {
        kind: set(ImportedRecord.all_users.filter(kind=kind, user_id__in=ids).values_list("source_id", flat=True))
        for kind in ("session", "memory")
    }
    owners = set(Session.all_users.filter(user_id__in=ids).exclude(pk__in=imported["session"]).values_list("user_id", flat=True))
    owners |= set(UserMemory.all_users.filter(user_id__in=ids).exclude(pk__in=imported["memory"]).values_list("user_id", flat=True))
    return sorted(owners)


def agno_import(
    url: str,
    *,
    merge_users: bool | Iterable[str] = False,
    progress: Callable[[str, int, int], None] | None = None,
    **source_options: Any,
) -> ImportReport:
    """Import the Agno database at ``url`` (read-only) and say what was imported, skipped and failed."""
    source = open_source(url, **source_options)
    report = ImportReport(source=source.label, layout=source.layout)
    try:
        session_rows = list(source.sessions())
        memory_rows = list(source.memories())
        extra_rows = {kind: source.table_rows(table, ORDERS[kind]) for kind, table in TABLES.items()}
        users = {row.get("user_id") for row in session_rows} | {row.get("user_id") for row in memory_rows}
        users |= {row_owner(kind, row) for kind, rows in extra_rows.items() for row in rows}
        allowed = set() if merge_users is True else set(merge_users or ())
        blocked = set() if merge_users is True else set(colliding_users(users)) - allowed
        report.colliding_users = sorted(blocked)
        _import_rows(
            "sessions", session_rows, id_key="session_id", blocked=blocked, report=report, progress=progress,
            import_one=lambda row: _import_session(source, row, report),
        )
        for orphan in source.orphan_runs():
            reason = f"its session {orphan['session_id']} is not in the source's sessions table"
            report.fail("runs", str(orphan["run_id"]), reason, users=(orphan.get("user_id"),))
        _import_rows(
            "memories", memory_rows, id_key="memory_id", blocked=blocked, report=report, progress=progress,
            import_one=lambda row: _import_memory(row, source, report),
        )
        for kind, rows in extra_rows.items():
            for position, row in enumerate(rows, start=1):
                if progress:
                    progress(kind, position, len(rows))
                _import_extra(kind, row, source.label, blocked, report)
    finally:
        source.close()
    return report


def _import_rows(
    kind: str,
    rows: list[dict[str, Any]],
    *,
    id_key: str,
    blocked: set[str],
    report: ImportReport,
    progress: Callable[[str, int, int], None] | None,
    import_one: Callable[[dict[str, Any]], None],
) -> None:
    """Sessions or memories one row at a time: a blocked user's rows are skipped, and a row that
    fails is reported in ``report`` while the others go on."""
    for position, row in enumerate(rows, start=1):
        if progress:
            progress(kind, position, len(rows))
        if row.get("user_id") in blocked:
            report.skipped[kind] += 1
            continue
        try:
            import_one(row)
        except RowError as exc:
            report.fail(kind, str(row.get(id_key)), str(exc), users=(row.get("user_id"), *exc.users))
        except DatabaseError as exc:  # a value our schema refuses (too long, NUL byte...): rolled back
            reason = f"refused by the database: {exc}".splitlines()[0]
            report.fail(kind, str(row.get(id_key)), reason, users=(row.get("user_id"),))


def _import_extra(kind: str, row: dict[str, Any], label: str, blocked: set[str], report: ImportReport) -> None:
    """One eval run, metrics row, knowledge content or schedule (importer.extras), counted in ``report``."""
    if row_owner(kind, row) in blocked:
        report.skipped[kind] += 1
        return
    try:
        added = ROW_IMPORTERS[kind](row, label)
    except RowError as exc:
        report.fail(kind, row_id(kind, row), str(exc), users=(row_owner(kind, row), *exc.users))
    except (DatabaseError, ValueError) as exc:  # a value our schema or a service refuses: rolled back
        report.fail(kind, row_id(kind, row), f"refused: {exc}".splitlines()[0], users=(row_owner(kind, row),))
    else:
        (report.imported if added else report.skipped)[kind] += 1
