"""Writes to sessions, runs and run events.

Writing a run costs the same whatever the session's length: the run index comes from a counter
on the session row (one UPDATE ... RETURNING), never from reading the session's runs; a run with
token usage adds its metrics to the session's with one more UPDATE of that row, locked already.
"""
from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from engine.output import has_usage, session_metrics_add
from core.statements import Insert, Update, pipelined
from core.tenancy import owner_clause, scope_queryset

from ..models import Run, RunEvent, RunOrigin, RunStatus, Session, SessionCount, SessionType
from .branches import branch_follow_tip, branch_replace
from .errors import SessionExists, SessionLimitReached, SessionNotFound


def new_id() -> str:
    return str(uuid.uuid4())


def session_name_from_input(text: str) -> str:
    first_line = text.strip().splitlines()[0] if text.strip() else ""
    return first_line[:200]


def session_quota_check(*, owner_id: str | None) -> None:
    """Raise ``SessionLimitReached`` when ``owner_id`` may not create another session.

    Called only when a session is about to be created: one statement reading the owner's count
    (``SessionCount``, kept by the database), whatever the owner holds. Sessions without an
    owner (an open server's anonymous callers) are not counted. Concurrent creations may each
    pass the check, so the bound is soft by at most that many.
    """
    if owner_id is None:
        return
    with connection.cursor() as cursor:
        _quota_count(cursor, owner_id)
        _quota_verdict(cursor)


# One row or none: MAX() answers one row either way (0 for an owner without sessions).
_COUNT_SQL = "SELECT COALESCE(MAX(sessions), 0) FROM {table} WHERE {owned}"


def _quota_count(cursor: Any, owner_id: str) -> None:
    """Send the count of ``owner_id``'s sessions (read by ``_quota_verdict``)."""
    owned, params = owner_clause(owner_id)
    cursor.execute(_COUNT_SQL.format(table=connection.ops.quote_name(SessionCount._meta.db_table), owned=owned), params)


def _quota_verdict(cursor: Any) -> None:
    (count,) = cursor.fetchone()
    if count >= settings.MAX_SESSIONS_PER_USER:
        raise SessionLimitReached(settings.MAX_SESSIONS_PER_USER)


def session_create(
    *,
    session_id: str | None = None,
    user_id: str | None,
    session_type: str = SessionType.AGENT,
    component_id: str = "",
    session_name: str = "",
    session_state: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
    component_data: Mapping[str, Any] | None = None,
    origin: str = RunOrigin.API,
) -> Session:
    session_quota_check(owner_id=user_id)
    now = timezone.now()
    session = Session(
        session_id=session_id or new_id(),
        user_id=user_id,
        session_type=session_type,
        component_id=component_id,
        session_name=session_name,
        session_state=dict(session_state or {}),
        metadata=dict(metadata) if metadata is not None else None,
        component_data=dict(component_data) if component_data is not None else None,
        origin=origin,
        created_at=now,
        updated_at=now,
    )
    if not _insert_session(session):
        raise SessionExists(session.session_id)
    return session


# The rows every run writes, through statements compiled once (core.statements).
_SESSION_INSERT = Insert(Session, skip_conflict=True)
_RUN_INSERT = Insert(Run)
_EVENT_INSERT = Insert(RunEvent, ["run_id", "user_id", "event_index", "event", "payload", "created_at"])
_RUN_RESULT = Update(Run, ["status", "input", "run_data", "content", "input_tokens", "output_tokens", "total_tokens", "duration", "error", "updated_at", "finished_at"], where=["user_id"])


def _insert_session(session: Session) -> bool:
    """Insert ``session`` unless its id is taken (by anyone): True if it was inserted.

    ``INSERT ... ON CONFLICT DO NOTHING``: no savepoint, and a taken id aborts nothing (on
    PostgreSQL a failed INSERT would abort the caller's whole transaction).
    """
    return _SESSION_INSERT.instance(session)


def session_get_or_create(
    *,
    user: Any,
    owner_id: str | None,
    session_id: str | None,
    session_type: str = SessionType.AGENT,
    component_id: str = "",
    component_data: Mapping[str, Any] | None = None,
    origin: str = RunOrigin.API,
) -> tuple[Session, bool]:
    """The caller's session ``session_id``, created for ``owner_id`` if it does not exist.

    ``user`` is the caller's read scope (core.tenancy.scope_queryset). Another user's session is
    reported as missing, never re-created or shared.
    """
    if session_id:
        existing = scope_queryset(Session.objects, user).filter(pk=session_id).first()
        if existing is not None:
            return existing, False
    try:
        return (
            session_create(
                session_id=session_id,
                user_id=owner_id,
                session_type=session_type,
                component_id=component_id,
                component_data=component_data,
                origin=origin,
            ),
            True,
        )
    except SessionExists:
        # Either someone else's session, or created by a concurrent request of the same caller.
        existing = scope_queryset(Session.objects, user).filter(pk=session_id).first()
        if existing is None:
            raise SessionNotFound(session_id or "") from None
        return existing, False


def _take_run_index(*, session_id: str, owner_id: str | None, first_input: str, now: datetime) -> int:
    """Reserve the session's next run index (atomic on SQLite and PostgreSQL alike).

    The UPDATE takes the session row's write lock until commit, so concurrent runs on one
    session serialize here and get consecutive indexes. The first run also names the session.
    """
    with connection.cursor() as cursor:
        row = _session_update(cursor, session_id=session_id, owner_id=owner_id, now=now, tokens_added=0, new_runs=1, first_input=first_input)
    if row is None:
        raise SessionNotFound(session_id)
    return int(row[0]) - 1


def run_create(
    *,
    session: Session,
    run_id: str | None = None,
    run_type: str = SessionType.AGENT,
    component_id: str = "",
    input: Mapping[str, Any] | None = None,
    status: str = RunStatus.PENDING,
    parent_run_id: str | None = None,
    model: str = "",
    run_data: Mapping[str, Any] | None = None,
    created_at: datetime | None = None,
    origin: str = RunOrigin.API,
    redoes: Run | None = None,
) -> Run:
    """Insert a run row at the end of its session (in the caller's transaction, if there is one).

    A top-level run follows the session's active branch, or takes the place of the run it
    ``redoes`` (an edit or a regeneration), whose branch it makes the active one."""
    now = created_at or timezone.now()
    input_data = dict(input or {})
    # No savepoint: nothing here is retried, so a failure rolls back the caller's whole write.
    with transaction.atomic(savepoint=False):
        index = _take_run_index(
            session_id=session.pk, owner_id=session.user_id, first_input=str(input_data.get("input_content") or ""), now=now
        )
        run = Run(
            run_id=run_id or new_id(),
            session_id=session.pk,
            user_id=session.user_id,
            run_type=run_type,
            component_id=component_id,
            run_index=index,
            parent_run_id=parent_run_id,
            status=status,
            input=input_data,
            model=model,
            run_data=dict(run_data or {}),
            origin=origin,
            previous_run_id=redoes.previous_run_id if redoes is not None else None,
            created_at=now,
            updated_at=now,
            started_at=now if status == RunStatus.RUNNING else None,
        )
        _RUN_INSERT.instance(run)
        if parent_run_id is None:
            _branch_place(run, redoes=redoes)
    return run


def _branch_place(run: Run, *, redoes: Run | None) -> None:
    """Where a new top-level run goes in its session's tree (sessions.services.branches)."""
    if redoes is not None:
        branch_replace(run=run, redoes=redoes)
    elif run.run_index > 0:
        branch_follow_tip(run_id=run.pk, session_id=run.session_id, owner_id=run.user_id, run_index=run.run_index)


def run_transition(
    *,
    run_id: str,
    expected: RunStatus | Iterable[RunStatus],
    to: RunStatus,
    **fields: Any,
) -> bool:
    """Move a run from one of the ``expected`` statuses to ``to``; False if it was in another.

    Conditional on the prior status, so two processes racing to change one run cannot both win.
    """
    expected_set = [expected] if isinstance(expected, str) else list(expected)
    now = timezone.now()
    values: dict[str, Any] = {"status": to, "updated_at": now, **fields}
    if to == RunStatus.RUNNING:
        values.setdefault("started_at", now)
    if to in (RunStatus.COMPLETED, RunStatus.ERROR, RunStatus.CANCELLED):
        values.setdefault("finished_at", now)
    changed = (
        Run.objects.unscoped("status changes are keyed by run id; callers checked access")
        .filter(pk=run_id, status__in=expected_set)
        .update(**values)
    )
    return changed == 1


def run_events_append(*, run: Run, events: Sequence[Mapping[str, Any]], first_index: int = 0) -> None:
    """Persist events in order, numbered from ``first_index`` (one statement for the batch)."""
    now = timezone.now()
    _EVENT_INSERT.rows(
        (run.pk, run.user_id, first_index + offset, str(event.get("event", "")), dict(event), now)
        for offset, event in enumerate(events)
    )


def run_events_append_indexed(batches: Iterable[tuple[Run, Sequence[Mapping[str, Any]]]]) -> None:
    """Persist several runs' events, each event numbered by its own ``event_index`` key (which
    is not stored in its payload), with one statement for them all."""
    now = timezone.now()
    _EVENT_INSERT.rows(
        (run.pk, run.user_id, event["event_index"], str(event.get("event", "")),
         {key: value for key, value in event.items() if key != "event_index"}, now)
        for run, events in batches for event in events
    )


def session_add_usage(*, session_id: str, input_tokens: int, output_tokens: int, now: datetime | None = None) -> None:
    """Add a run's token use to its session's running totals (one UPDATE, no read)."""
    from django.db.models import F

    Session.objects.unscoped("keyed by id; the run's writer checked access").filter(pk=session_id).update(
        total_tokens=F("total_tokens") + input_tokens + output_tokens,
        updated_at=now or timezone.now(),
    )




def _session_metrics_write(
    cursor: Any, *, session_id: str, owner_id: str | None, current: Any, run: Mapping[str, Any], previous: Mapping[str, Any] | None = None
) -> None:
    """Add a run's metrics to its session's, whose row this transaction has just updated (and so
    holds locked): one more UPDATE, whatever the session's length."""
    if not has_usage(run) and not has_usage(previous or {}):
        return
    if isinstance(current, (str, bytes)):
        current = json.loads(current)
    merged = session_metrics_add(current or {}, run, previous=previous)
    owner, owner_params = owner_clause(owner_id)
    cursor.execute(f"UPDATE agno_sessions SET metrics = %s WHERE session_id = %s AND {owner}", [_json_param("metrics", merged), session_id, *owner_params])


def _json_param(field_name: str, value: Any) -> Any:
    from django.db import connection as conn

    return Session._meta.get_field(field_name).get_db_prep_save(value, conn)


@dataclass
class RunRecord:
    """One run as the sessions service writes it: its row, its events and its children.

    Every surface builds one of these (an inline run at its start, a background run's end, a
    continuation's new run) and hands it to ``run_record`` or ``run_finish``; ``children`` are
    runs made inside this one (a team's member runs, a workflow's agent steps), written in the same
    transaction, each with ``parent_run_id`` set to this run's id.
    """

    run_id: str
    session_id: str
    owner_id: str | None
    component_id: str
    status: str
    input: Mapping[str, Any] = field(default_factory=dict)
    output: Mapping[str, Any] = field(default_factory=dict)
    session_type: str = SessionType.AGENT
    component_data: Mapping[str, Any] | None = None
    events: Sequence[Mapping[str, Any]] = ()
    first_event_index: int = 0
    session_state: Mapping[str, Any] | None = None
    summary: Mapping[str, Any] | None = None
    parent_run_id: str | None = None
    started_at: datetime | None = None
    children: Sequence[RunRecord] = ()
    origin: str = RunOrigin.API
    # The run this one answers again in its place (an edit, a regeneration): see run_create.
    redoes: Run | None = None

    @property
    def metrics(self) -> Mapping[str, Any]:
        return self.output.get("metrics") or {}

    @property
    def tokens(self) -> tuple[int, int]:
        return int(self.metrics.get("input_tokens") or 0), int(self.metrics.get("output_tokens") or 0)

    def family(self, parent_run_id: str | None = None) -> list[RunRecord]:
        """This run and its children's (depth first), each child naming its parent: the rows one
        write inserts."""
        record = replace(self, parent_run_id=parent_run_id) if parent_run_id and not self.parent_run_id else self
        return [record, *(member for child in self.children for member in child.family(self.run_id))]


def _session_update(
    cursor: Any,
    *,
    session_id: str,
    owner_id: str | None,
    now: datetime,
    tokens_added: int,
    new_runs: int = 0,
    first_input: str | None = None,
    session_state: Mapping[str, Any] | None = None,
    summary: Mapping[str, Any] | None = None,
) -> tuple[Any, ...] | None:
    """The one UPDATE of a session that a run write makes; ``(next_run_index, metrics)`` or None.

    ``new_runs`` takes that many run indexes from the session's counter (the first run also names
    the session after its input). The owner is part of the key: a session id taken by someone
    else between the caller's access check and this write is not the caller's to write to.
    """
    assignments, params = ["updated_at = %s", "total_tokens = total_tokens + %s"], [now, tokens_added]
    if new_runs:
        assignments.append("next_run_index = next_run_index + %s")
        params.append(new_runs)
    if first_input is not None:
        assignments.append("session_name = CASE WHEN session_name = '' THEN %s ELSE session_name END")
        params.append(session_name_from_input(first_input))
    if session_state is not None:
        assignments.append("session_state = %s")
        params.append(_json_param("session_state", dict(session_state)))
    if summary is not None:
        assignments.append("summary = %s")
        params.append(_json_param("summary", dict(summary)))
    owner, owner_params = owner_clause(owner_id)
    cursor.execute(
        f"UPDATE agno_sessions SET {', '.join(assignments)} WHERE session_id = %s AND {owner} RETURNING next_run_index, metrics",
        [*params, session_id, *owner_params],
    )
    return cursor.fetchone()


def _family_usage(records: Sequence[RunRecord]) -> tuple[int, dict[str, Any]]:
    """The tokens and the metrics a set of new runs adds to their session."""
    total, merged = 0, {}
    for record in records:
        total += sum(record.tokens)
        if has_usage(record.metrics):
            merged = session_metrics_add(merged, record.metrics)
    return total, merged


def _run_row(record: RunRecord, *, index: int, now: datetime) -> Run:
    input_tokens, output_tokens = record.tokens
    content = content_text(record.output.get("content"))
    return Run(
        run_id=record.run_id,
        session_id=record.session_id,
        user_id=record.owner_id,
        run_type=record.session_type,
        component_id=record.component_id,
        run_index=index,
        parent_run_id=record.parent_run_id,
        status=record.status,
        input=dict(record.input),
        content=content,
        run_data=dict(record.output),
        origin=record.origin,
        previous_run_id=record.redoes.previous_run_id if record.redoes is not None else None,
        model=str(record.output.get("model") or ""),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=input_tokens + output_tokens,
        duration=record.metrics.get("duration"),
        error=content if record.status == RunStatus.ERROR else "",
        created_at=record.started_at or now,
        updated_at=now,
        started_at=record.started_at or now,
        finished_at=now if record.status in TERMINAL else None,
    )


TERMINAL = (RunStatus.COMPLETED, RunStatus.ERROR, RunStatus.CANCELLED)


def _insert_family(records: Sequence[RunRecord], *, first_index: int, now: datetime) -> list[Run]:
    """Insert new runs (a run and its children) with consecutive run indexes, and their events
    (inside ``pipelined()``, without waiting for the answers)."""
    rows = []
    for offset, record in enumerate(records):
        row = _run_row(record, index=first_index + offset, now=now)
        _RUN_INSERT.instance(row, wait=False)
        if record.events:
            run_events_append(run=row, events=record.events, first_index=record.first_event_index)
        rows.append(row)
    return rows


def run_record(record: RunRecord, *, create_session: bool = False) -> Run:
    """Write a new run (RUNNING at its start, or already finished or paused), its children and
    everything they change, in one transaction. Returns the run's row.

    One statement on the session (new: INSERT; existing: UPDATE ... RETURNING, which hands out
    the run indexes and adds the usage; with usage, a second UPDATE merges the per-model metrics),
    one INSERT per run, one INSERT of each run's events. Nothing reads the session's earlier runs,
    so the cost does not grow with the session.

    A new session (``create_session``) counts against its owner's ``MAX_SESSIONS_PER_USER``: the
    count travels with the INSERT, and a refusal (``SessionLimitReached``) rolls it back. On
    PostgreSQL the statements go pipelined: a run's start in a new session is three round trips
    (BEGIN, the count and the session; the run; the COMMIT), not six.
    """
    now = timezone.now()
    family = record.family()
    tokens, metrics = _family_usage(family)
    first_input = str(record.input.get("input_content") or "")
    # Part of the caller's transaction when there is one (no savepoint: nothing here is retried).
    with transaction.atomic(savepoint=False):
        with pipelined():
            index: int | None = None
            if create_session:
                session = Session(
                    session_id=record.session_id,
                    user_id=record.owner_id,
                    session_type=record.session_type,
                    component_id=record.component_id,
                    component_data=dict(record.component_data) if record.component_data is not None else None,
                    session_name=session_name_from_input(first_input),
                    origin=record.origin,
                    session_state=dict(record.session_state or {}),
                    summary=dict(record.summary) if record.summary is not None else None,
                    total_tokens=tokens,
                    metrics=session_metrics_add({}, metrics),
                    next_run_index=len(family),
                    created_at=record.started_at or now,
                    updated_at=now,
                )
                with connection.cursor() as quota:
                    if record.owner_id is not None:
                        _quota_count(quota, record.owner_id)
                    # Taken meanwhile (the same caller, twice at once): append to it below, if it is ours.
                    index = 0 if _insert_session(session) else None
                    if record.owner_id is not None:
                        _quota_verdict(quota)
            if index is None:
                with connection.cursor() as cursor:
                    row = _session_update(
                        cursor, session_id=record.session_id, owner_id=record.owner_id, now=now, tokens_added=tokens,
                        new_runs=len(family), first_input=first_input, session_state=record.session_state, summary=record.summary,
                    )
                    if row is None:
                        raise SessionNotFound(record.session_id)
                    _session_metrics_write(cursor, session_id=record.session_id, owner_id=record.owner_id, current=row[1], run=metrics)
                index = int(row[0]) - len(family)
            run = _insert_family(family, first_index=index, now=now)[0]
            if record.redoes is None and run.parent_run_id is None and index > 0:
                _branch_place(run, redoes=None)  # one more statement in the pipeline, nothing read
        if record.redoes is not None and run.parent_run_id is None:
            _branch_place(run, redoes=record.redoes)  # may read the session's tree: after the pipeline
    return run


def run_finish(run: Run, record: RunRecord) -> Run:
    """Write the end (or the pause) of a run whose row exists, with its new events, the children
    it made (inserted now) and its session's change, in one transaction. On PostgreSQL the
    statements go pipelined: three round trips (BEGIN, the run and its session; the metrics, the
    events and the children; the COMMIT), not six or more."""
    now = timezone.now()
    input_tokens, output_tokens = record.tokens
    added = max(0, input_tokens + output_tokens - run.total_tokens)
    # What this run already added to its session (the same rule as ``added``'s).
    previous = ((run.run_data or {}).get("metrics") or {}) if run.total_tokens else {}
    children = [member for child in record.children for member in child.family(run.pk)]
    # A paused team's member runs were written at its pause: a continue updates those in place.
    stored = _stored_runs(run, [child.run_id for child in children])
    children_new = [child for child in children if child.run_id not in stored]
    child_tokens, child_metrics = _family_usage(children_new)
    child_tokens += sum(max(0, sum(child.tokens) - stored[child.run_id].total_tokens) for child in children if child.run_id in stored)
    with transaction.atomic(savepoint=False), pipelined():
        run.status = record.status
        if record.input:  # the run changed its input (a guardrail masked personal data): keep only that
            run.input = dict(record.input)
        run.run_data = dict(record.output)
        run.content = content_text(record.output.get("content"))
        run.input_tokens, run.output_tokens, run.total_tokens = input_tokens, output_tokens, input_tokens + output_tokens
        run.duration = record.metrics.get("duration")
        run.error = run.content if record.status == RunStatus.ERROR else ""
        run.updated_at = now
        run.finished_at = now if record.status in TERMINAL else None
        _RUN_RESULT.send(run.pk, [getattr(run, field.attname) for field in _RUN_RESULT.fields], [run.user_id])
        # The run's session, keyed by id and the run's owner (a run's owner is its session's).
        with connection.cursor() as cursor:
            row = _session_update(
                cursor, session_id=run.session_id, owner_id=run.user_id, now=now, tokens_added=added + child_tokens,
                new_runs=len(children_new), session_state=record.session_state, summary=record.summary,
            )
            if row is not None:
                merged = session_metrics_add(dict(record.metrics), child_metrics) if child_metrics else record.metrics
                _session_metrics_write(cursor, session_id=run.session_id, owner_id=run.user_id, current=row[1], run=merged, previous=previous)
        if record.events:
            run_events_append(run=run, events=record.events, first_index=record.first_event_index)
        if children_new and row is not None:
            _insert_family(children_new, first_index=int(row[0]) - len(children_new), now=now)
        for child in children:
            if child.run_id in stored:
                _run_update(stored[child.run_id], child, now=now)
    return run


def _stored_runs(run: Run, run_ids: Sequence[str]) -> dict[str, Run]:
    """Which of ``run_ids`` are rows already (in ``run``'s session, of its owner)."""
    if not run_ids:
        return {}
    rows = scope_queryset(Run.objects, run.user_id).filter(pk__in=run_ids, session_id=run.session_id)
    return {row.pk: row for row in rows}


def _run_update(row: Run, record: RunRecord, *, now: datetime) -> None:
    """A stored child run's new state (a team member continued after its pause)."""
    row.status = record.status
    row.run_data = dict(record.output)
    row.content = content_text(record.output.get("content"))
    row.input_tokens, row.output_tokens = record.tokens
    row.total_tokens = row.input_tokens + row.output_tokens
    row.duration = record.metrics.get("duration")
    row.error = row.content if record.status == RunStatus.ERROR else ""
    row.updated_at = now
    row.finished_at = now if record.status in TERMINAL else None
    _RUN_RESULT.send(row.pk, [getattr(row, field.attname) for field in _RUN_RESULT.fields], [row.user_id])


def content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    import json

    return json.dumps(content, ensure_ascii=False, default=str)
