"""Reads of sessions, runs and memories, always through the caller's scope (core.tenancy.scope_queryset)."""
from __future__ import annotations

import functools
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import CharField, Count, IntegerField, Max, Q, Value
from django.db.models.functions import Cast

from engine.events import CONTENT_DELTAS

from core.querysets import window
from core.statements import Select
from core.tenancy import ALL_USERS, scope_queryset

from .models import Run, RunEvent, RunFeedback, RunStatus, Session, SessionType, UserMemory
from .search import session_search_condition

# Past any run index: "before no run", the history of a run not stored yet.
NO_LIMIT = 2**31 - 1



def session_get(*, user: Any, session_id: str) -> Session | None:
    return scope_queryset(Session.objects, user).filter(pk=session_id).first()


def run_get(*, user: Any, run_id: str, session_id: str | None = None) -> Run | None:
    runs = scope_queryset(Run.objects, user).filter(pk=run_id)
    if session_id is not None:
        runs = runs.filter(session_id=session_id)
    return runs.first()


def component_runs(*, user: Any, session_id: str, component_id: str, status: str | None = None) -> list[Run] | None:
    """A component's runs in a session of ``user``, in order (only those of ``status``, exact,
    when given); None when the session is not visible. Two queries."""
    if not scope_queryset(Session.objects, user).filter(pk=session_id).exists():
        return None
    runs = scope_queryset(Run.objects, user).filter(session_id=session_id, component_id=component_id)
    if status:
        runs = runs.filter(status=status)
    return list(runs.order_by("run_index"))


def run_usage_recent(*, user_id: str, limit: int = 20) -> list[dict[str, Any]]:
    """The user's latest top-level runs with what each spent (tokens, duration) and, for one that
    failed or was refused, why. One query; a team's member runs are in its total already."""
    fields = ("run_id", "session_id", "component_id", "run_type", "status", "input_tokens", "output_tokens", "total_tokens", "duration", "error", "created_at")
    runs = Run.objects.for_user(user_id).filter(parent_run_id__isnull=True).order_by("-created_at")
    return list(runs.values(*fields)[:limit])


def run_references(*, user: Any, run_id: str) -> tuple[str, list[Any]] | None:
    """The session of a run of ``user`` and the ``references`` it stored (its knowledge searches:
    ``[{query, references: [hit], time}]``), or None when the run is not theirs or does not
    exist. One query, reading only that key of the run's data."""
    found = scope_queryset(Run.objects, user).filter(pk=run_id).values_list("session_id", "run_data__references")[:1]
    for session_id, references in found:
        return session_id, references if isinstance(references, list) else []
    return None


def run_history(*, user: Any, session_id: str, limit: int, before: Run | None = None) -> list[dict[str, Any]]:
    """The last ``limit`` finished runs of the conversation's branch that leads to ``before``,
    oldest first, as RunOutput dicts: the model's history. ``before`` None: a run not stored
    yet, which follows the session's active branch (sessions.services.branches).

    On the active branch (nearly always) it is read by run index through the (session_id,
    run_index) index: the cost depends on ``limit``, never on the session's length. A run on
    another branch (an edit of a version not shown) reads the runs before it along the branch.
    """
    if limit <= 0:
        return []
    if before is not None and not before.branch_active:
        return [run.run_data for run in _branch_before(user, before, limit)]
    # A string: a compiled statement's arguments are (core.statements.Select); the SQL casts it.
    before_index = str(before.run_index if before is not None else NO_LIMIT)
    if user is ALL_USERS:  # not a value a compiled statement can take
        runs = list(_history(user, session_id, before_index, limit))
    else:
        runs = _compiled_history(limit).all(user, session_id, before_index)
    return [run.run_data for run in reversed(runs)]


def _history(user: Any, session_id: str, before_index: str, limit: int) -> Any:
    # Only finished answers: not errors, pauses or cancellations (as Agno), nor runs still queued
    # or executing (a background run must not see itself), and only the active branch's.
    before = Cast(Value(before_index, output_field=CharField()), IntegerField())
    runs = scope_queryset(Run.objects, user).filter(
        session_id=session_id, parent_run_id__isnull=True, status=RunStatus.COMPLETED, branch_active=True, run_index__lt=before,
    )
    return runs.order_by("-run_index").only("run_data")[:limit]


@functools.lru_cache(maxsize=32)
def _compiled_history(limit: int) -> Select:
    """Every run with history reads it: one statement compiled once per limit (an agent's
    ``num_history_runs``)."""
    return Select(lambda user, session_id, before_index: _history(user, session_id, before_index, limit))


def _branch_before(user: Any, run: Run, limit: int) -> list[Run]:
    """The last ``limit`` finished runs before ``run`` along its own branch (followed through
    ``previous_run_id``), oldest first."""
    rows = {
        row.pk: row
        for row in scope_queryset(Run.objects, user).filter(session_id=run.session_id, parent_run_id__isnull=True)
        .only("run_id", "previous_run_id", "status", "run_data")
    }
    found: list[Run] = []
    seen: set[str] = set()
    node = rows.get(run.previous_run_id or "")
    while node is not None and len(found) < limit and node.pk not in seen:
        seen.add(node.pk)
        if node.status == RunStatus.COMPLETED:
            found.append(node)
        node = rows.get(node.previous_run_id or "")
    return list(reversed(found))


# A background run executed again (its worker was lost, or an operator retried it) starts with
# this announcement: the output of the earlier attempts, from ``superseded_from_index`` up to the
# announcement's own index, is void. It is a CustomEvent, the name AgentOS clients already parse
# (agno's ``run_output_event_from_dict`` raises on an unknown name, which breaks
# ``RunOutput.from_dict`` on a stored run's ``events``), told apart by its ``name``.
ATTEMPT_STARTED = "RunAttemptStarted"


def is_attempt_started(event: dict[str, Any]) -> bool:
    return event.get("event") == "CustomEvent" and event.get("name") == ATTEMPT_STARTED


def superseded_dropped(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``events`` (each with its ``event_index``, in order) without those a later attempt's
    announcement among them made void: a replay shows one answer, the stored rows keep both."""
    void = [(event["superseded_from_index"], event["event_index"]) for event in events if is_attempt_started(event)]
    if not void:
        return events
    return [event for event in events if not any(start <= event["event_index"] < end for start, end in void)]


def run_events_kept(*, user: Any, run_ids: Collection[str]) -> dict[str, list[dict[str, Any]]]:
    """What AgentOS keeps as a run's ``events``, by run id: every stored event but the per-token
    RunContent / TeamRunContent deltas (Agno's default ``events_to_skip``) and those of superseded attempts, in
    order. One query whatever the number of runs; a run without stored events is absent."""
    kept: dict[str, list[dict[str, Any]]] = {}
    if not run_ids:
        return kept
    rows = (
        scope_queryset(RunEvent.objects, user)
        .filter(run_id__in=list(run_ids))
        .exclude(event__in=CONTENT_DELTAS)
        .order_by("run_id", "event_index")
        .values_list("run_id", "event_index", "payload")
    )
    for run_id, index, payload in rows:
        kept.setdefault(run_id, []).append({**payload, "event_index": index})
    return {run_id: [_without_index(event) for event in superseded_dropped(events)] for run_id, events in kept.items()}


def _without_index(event: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in event.items() if key != "event_index"}


def run_events_after(*, user: Any, run_id: str, after_index: int | None) -> list[RunEvent]:
    events = scope_queryset(RunEvent.objects, user).filter(run_id=run_id)
    if after_index is not None:
        events = events.filter(event_index__gt=after_index)
    return list(events.order_by("event_index"))


# --- API reads: sessions, session runs, memories ----------------------------------------------

# sort_by values AgentOS accepts for sessions (its table's columns) -> our columns. Unknown
# values fall back to the default, as AgentOS ignores them.
SESSION_SORT_COLUMNS = {
    "created_at": "created_at",
    "updated_at": "updated_at",
    "session_id": "session_id",
    "session_name": "session_name",
    "session_type": "session_type",
    "user_id": "user_id",
    "agent_id": "component_id",
    "team_id": "component_id",
    "workflow_id": "component_id",
    "component_id": "component_id",
    "total_tokens": "total_tokens",
}
MEMORY_SORT_COLUMNS = {
    "updated_at": "updated_at",
    "created_at": "created_at",
    "memory_id": "memory_id",
    "memory": "memory",
    "user_id": "user_id",
    "agent_id": "agent_id",
    "team_id": "team_id",
    "topics": "topics_key",
}


def _ordering(column: str, *, descending: bool, tie_breaker: str) -> list[str]:
    return [f"-{column}", f"-{tie_breaker}"] if descending else [column, tie_breaker]


def session_list(
    *,
    user: Any,
    session_type: str | None = None,
    component_id: str | None = None,
    session_name: str | None = None,
    text: str | None = None,
    origins: Collection[str] | None = None,
    sort_by: str | None = None,
    descending: bool = True,
    offset: int = 0,
    limit: int = 20,
) -> tuple[list[Session], int]:
    """One page of the caller's sessions and the total count: two queries whatever the page size.

    ``text`` searches names and the text of the sessions' runs (sessions/search.py): the run
    search is a subquery of both, through the same scope.
    """
    sessions = scope_queryset(Session.objects, user)
    if session_type:
        sessions = sessions.filter(session_type=session_type)
    if component_id:
        sessions = sessions.filter(component_id=component_id)
    if session_name:
        sessions = sessions.filter(session_name__icontains=session_name)
    if origins:
        sessions = sessions.filter(origin__in=list(origins))
    if text:
        condition = session_search_condition(runs=scope_queryset(Run.objects, user), text=text)
        if condition is not None:
            sessions = sessions.filter(condition)
    total = sessions.count()
    column = SESSION_SORT_COLUMNS.get(sort_by or "", "created_at")
    page = window(sessions.order_by(*_ordering(column, descending=descending, tie_breaker="pk")), offset=offset, limit=limit)
    return page, total


def session_chat_history(*, user: Any, session_id: str) -> list[dict[str, Any]]:
    """The session's user and assistant messages, oldest first, in one query.

    As Agno's ``get_chat_history``: top-level runs only (members' messages stay in their runs),
    no system or tool messages, and no messages a run merely replayed from history; and only the
    conversation's active branch (the versions an edit replaced are not part of it).
    """
    stored = (
        scope_queryset(Run.objects, user)
        .filter(session_id=session_id, parent_run_id__isnull=True, branch_active=True)
        .order_by("run_index")
        .values_list("run_data__messages", flat=True)
    )
    history: list[dict[str, Any]] = []
    for messages in stored:
        for message in messages if isinstance(messages, list) else ():
            if not isinstance(message, dict) or message.get("from_history"):
                continue
            if message.get("role") in ("user", "assistant"):
                history.append(message)
    return history


def session_runs(
    *,
    user: Any,
    session_id: str,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    statuses: Collection[str] | None = None,
    all_branches: bool = False,
) -> tuple[Session, list[Run]] | None:
    """The session and its runs as AgentOS stores them: two queries; None if not visible.

    - Only the conversation's active branch (sessions.services.branches), with the runs made
      inside its runs: the versions an edit or a regeneration replaced are left out, so a client
      that reads the listing as one conversation reads the one the model sees. ``all_branches``
      lists them all (the chat's version switcher reads them).

    - A run still executing (``RUNNING``) is left out, with the runs made inside it, unless
      ``statuses`` asks for it: AgentOS stores a foreground run when it ends, and its clients
      read the listing so (agent-ui reloads a new chat's history while its first answer streams,
      and would replace the live text with an empty run). It exists from its first moment all
      the same (the admin, ``/runs/{id}``, resume, ``?status=RUNNING``). A session whose every
      run is still executing is None (404), as it is in AgentOS until its first run ends.
    - A team's member runs come before it, as AgentOS stores them (each member's run ends before
      the team's); a workflow's step runs after it; run order otherwise.
    """
    session = session_get(user=user, session_id=session_id)
    if session is None:
        return None
    runs = scope_queryset(Run.objects, user).filter(session_id=session_id)
    if created_after is not None:
        runs = runs.filter(created_at__gte=created_after)
    if created_before is not None:
        runs = runs.filter(created_at__lt=created_before)
    if statuses is not None:
        runs = runs.filter(status__in=list(statuses))
    listed = list(runs.order_by("run_index"))
    if statuses is None or RunStatus.RUNNING not in statuses:
        visible = _without_runs_in_progress(listed)
        if listed and not visible:
            return None
        listed = visible
    if not all_branches:
        listed = _on_active_branch(listed)
    return session, _members_first(listed)


def _on_active_branch(runs: list[Run]) -> list[Run]:
    """``runs`` without the top-level runs off the active branch and the runs made inside them."""
    off = {run.pk for run in runs if run.parent_run_id is None and not run.branch_active}
    if not off:
        return runs
    parents = {run.pk: run.parent_run_id for run in runs}

    def top(run: Run) -> str:
        node, seen = run.pk, set()
        while parents.get(node) and node not in seen:
            seen.add(node)
            node = parents[node]
        return node

    return [run for run in runs if top(run) not in off]


def _only_runs_in_progress(user: Any, session_id: str) -> bool:
    counts = scope_queryset(Run.objects, user).filter(session_id=session_id, parent_run_id__isnull=True).aggregate(
        runs=Count("pk"), running=Count("pk", filter=Q(status=RunStatus.RUNNING))
    )
    return bool(counts["runs"]) and counts["runs"] == counts["running"]


def _without_runs_in_progress(runs: list[Run]) -> list[Run]:
    hidden = {run.pk for run in runs if run.status == RunStatus.RUNNING}
    by_id = {run.pk: run for run in runs}

    def in_hidden(run: Run) -> bool:
        seen = set()
        while run is not None and run.pk not in seen:
            if run.pk in hidden:
                return True
            seen.add(run.pk)
            run = by_id.get(run.parent_run_id) if run.parent_run_id else None
        return False

    return [run for run in runs if not in_hidden(run)]


def _members_first(runs: list[Run]) -> list[Run]:
    """Each team (or agent) run after the runs made inside it (depth first), as AgentOS stores a
    team's members; a workflow run before its steps (AgentOS nests those in the run itself, and
    its clients read a workflow session's first run as the workflow's); run order otherwise."""
    present = {run.pk for run in runs}
    children: dict[str, list[Run]] = {}
    for run in runs:
        if run.parent_run_id and run.parent_run_id in present and run.parent_run_id != run.pk:
            children.setdefault(run.parent_run_id, []).append(run)
    ordered: list[Run] = []
    placed: set[str] = set()

    def place(run: Run) -> None:
        if run.pk in placed:
            return
        placed.add(run.pk)
        if run.run_type == "workflow":  # a workflow run first, then its steps, as it always listed
            ordered.append(run)
            for child in children.get(run.pk, ()):
                place(child)
            return
        for child in children.get(run.pk, ()):
            place(child)
        ordered.append(run)

    for run in runs:
        if not (run.parent_run_id and run.parent_run_id in present):
            place(run)
    for run in runs:  # a cycle of parents, which no writer makes: still listed once
        place(run)
    return ordered


@dataclass(frozen=True)
class SessionRunLookup:
    session: Session | None
    run: Run | None
    session_has_runs: bool


def session_run_get(*, user: Any, session_id: str, run_id: str) -> SessionRunLookup:
    """A run of a session, with enough context to say which of the two is missing."""
    session = session_get(user=user, session_id=session_id)
    if session is None:
        return SessionRunLookup(session=None, run=None, session_has_runs=False)
    run = run_get(user=user, run_id=run_id, session_id=session_id)
    if run is not None:
        return SessionRunLookup(session=session, run=run, session_has_runs=True)
    has_runs = scope_queryset(Run.objects, user).filter(session_id=session_id).exists()
    return SessionRunLookup(session=session, run=None, session_has_runs=has_runs)


def memory_get(*, user: Any, memory_id: str) -> UserMemory | None:
    return scope_queryset(UserMemory.objects, user).filter(pk=memory_id).first()


def memory_list(
    *,
    user: Any,
    agent_id: str | None = None,
    team_id: str | None = None,
    topics: Sequence[str] = (),
    search_content: str | None = None,
    sort_by: str | None = None,
    descending: bool = True,
    offset: int = 0,
    limit: int = 20,
) -> tuple[list[UserMemory], int]:
    """One page of memories and the total count: two queries whatever the page size.

    A memory matches ``topics`` when it carries every one of them.
    """
    memories = scope_queryset(UserMemory.objects, user)
    if agent_id:
        memories = memories.filter(agent_id=agent_id)
    if team_id:
        memories = memories.filter(team_id=team_id)
    for topic in topics:
        memories = memories.filter(topics_key__contains=f",{topic},")
    if search_content:
        memories = memories.filter(memory__icontains=search_content)
    total = memories.count()
    column = MEMORY_SORT_COLUMNS.get(sort_by or "", "updated_at")
    page = window(memories.order_by(*_ordering(column, descending=descending, tie_breaker="pk")), offset=offset, limit=limit)
    return page, total


def memory_topics(*, user: Any) -> list[str]:
    """Every distinct topic of the caller's memories, sorted (one query over distinct topic lists)."""
    found: set[str] = set()
    for topics in scope_queryset(UserMemory.objects, user).values_list("topics", flat=True).distinct():
        if isinstance(topics, list):
            found.update(str(topic) for topic in topics)
    return sorted(found)


def memory_user_stats(*, user: Any, offset: int = 0, limit: int = 20) -> tuple[list[dict[str, Any]], int]:
    """Memories per user (count, last update), most recently active first: two queries."""
    owned = scope_queryset(UserMemory.objects, user).filter(user_id__isnull=False)
    total = owned.aggregate(users=Count("user_id", distinct=True))["users"] or 0
    stats = (
        owned.values("user_id")
        .annotate(total_memories=Count("pk"), last_memory_updated_at=Max("updated_at"))
        .order_by("-last_memory_updated_at", "user_id")
    )
    return window(stats, offset=offset, limit=limit), total


def memory_list_for_user(*, user_id: str) -> list[UserMemory]:
    """All of one user's memories, oldest first (what memory optimization works on)."""
    return list(UserMemory.objects.for_user(user_id).order_by("created_at", "pk"))


def session_detail(*, user: Any, session_id: str, shape: str | None = None) -> tuple[Session, list[dict[str, Any]]] | None:
    """A session and its chat history (two queries); None if not visible.

    ``shape`` is the session type the caller wants the detail as (default: the session's own);
    the workflow shape has no chat history, so none is read for it.
    """
    session = session_get(user=user, session_id=session_id)
    if session is None:
        return None
    if (shape or session.session_type) == SessionType.WORKFLOW:
        return session, []
    history = session_chat_history(user=user, session_id=session_id)
    if not history and _only_runs_in_progress(user, session_id):
        return None  # as in AgentOS until the session's first run ends (see session_runs)
    return session, history


def run_feedback_for_session(*, user_id: str, session_id: str) -> list[RunFeedback]:
    """``user_id``'s ratings of the runs of one of their sessions, in one query (an unknown or
    another user's session has none)."""
    return list(RunFeedback.objects.for_user(user_id).filter(session_id=session_id).order_by("created_at", "pk"))


def run_feedback_get(*, user_id: str, run_id: str) -> RunFeedback | None:
    return RunFeedback.objects.for_user(user_id).filter(run_id=run_id).first()
