"""A conversation's branches: where a new run goes in its session's tree, and which path is active.

Every top-level run follows the run before it on its branch (``previous_run_id``). A new run
follows the session's active branch; an edit or a regeneration takes the place of the run it
redoes (a sibling: the same previous run), and its branch becomes the active one, so neither the
new answer nor any later turn sees the version it replaced. Switching versions (the chat's ‹ ›)
makes another branch active. The active branch is what the model's history and the session's
default listings read (sessions.selectors).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection

from core.tenancy import owner_clause, scope_queryset

from ..models import Run, RunStatus


class BranchRunNotFound(Exception):
    def __init__(self) -> None:
        super().__init__("Run not found")


def branch_follow_tip(*, run_id: str, session_id: str, owner_id: str | None, run_index: int) -> None:
    """A new run follows the session's active branch: the newest active top-level run before it.

    One statement, nothing read back: inside ``pipelined()`` (an inline run's start) it costs no
    round trip of its own.
    """
    owner, params = owner_clause(owner_id)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE agno_runs SET previous_run_id = ("
            "SELECT tip.run_id FROM agno_runs tip WHERE tip.session_id = %s AND tip.parent_run_id IS NULL"
            f" AND tip.branch_active = %s AND tip.run_index < %s AND tip.{owner} ORDER BY tip.run_index DESC LIMIT 1"
            f") WHERE run_id = %s AND {owner}",
            [session_id, True, run_index, *params, run_id, *params],
        )


def branch_replace(*, run: Run, redoes: Run) -> None:
    """``run`` takes the place of ``redoes`` (an edit, a regeneration): its branch becomes the
    active one. When ``redoes`` is on the active branch (the chat only edits what it shows), that
    is one UPDATE, nothing read: the active branch is one path in run order, so ``redoes`` and
    the active runs after it are the ones left behind. Otherwise the path is worked out
    (``branch_activate``)."""
    if not redoes.branch_active:
        branch_activate(owner_id=run.user_id, session_id=run.session_id, run_id=run.pk)
        return
    scope_queryset(Run.objects, run.user_id).filter(
        session_id=run.session_id, parent_run_id__isnull=True, branch_active=True, run_index__gte=redoes.run_index,
    ).exclude(pk=run.pk).update(branch_active=False)


def branch_activate(*, owner_id: str | None, session_id: str, run_id: str) -> list[str]:
    """Make the branch through ``run_id`` the session's active one: the runs before it, it, and
    after it the newest version at each branch point. Returns that path, first turn first.
    ``BranchRunNotFound`` when ``run_id`` is not a top-level run of that session of ``owner_id``."""
    rows = list(
        scope_queryset(Run.objects, owner_id)
        .filter(session_id=session_id, parent_run_id__isnull=True)
        .order_by("run_index")
        .values_list("run_id", "previous_run_id", "status", "branch_active")
    )
    if run_id not in {row[0] for row in rows}:
        raise BranchRunNotFound()
    path = branch_path(rows, run_id)
    chosen = set(path)
    runs = scope_queryset(Run.objects, owner_id).filter(session_id=session_id, parent_run_id__isnull=True)
    stale = [row[0] for row in rows if row[3] and row[0] not in chosen]
    fresh = [row[0] for row in rows if not row[3] and row[0] in chosen]
    if stale:
        runs.filter(pk__in=stale).update(branch_active=False)
    if fresh:
        runs.filter(pk__in=fresh).update(branch_active=True)
    return path


def branch_path(rows: Sequence[tuple[Any, ...]], run_id: str) -> list[str]:
    """The path through ``run_id`` in a session's tree (``rows``: run id, previous run id, status,
    in run order): its ancestors, it, then the newest child at each step below it (a run a
    regeneration replaced is never chosen)."""
    previous = {row[0]: row[1] for row in rows}
    above: list[str] = []
    node: str | None = run_id
    while node is not None and node not in above:
        above.append(node)
        node = previous.get(node)
    children: dict[str, str] = {}
    for row in rows:  # in run order: the last child seen is the newest
        if row[1] is not None and row[2] != RunStatus.REGENERATED:
            children[row[1]] = row[0]
    path = list(reversed(above))
    while path[-1] in children and children[path[-1]] not in path:
        path.append(children[path[-1]])
    return path
