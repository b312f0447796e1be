"""What the importer keeps about a user, gone when that user's data is erased.

Their ``ImportedRecord`` rows are owned rows, deleted by ``core.services.userdata.userdata_erase``
with the rest of their data. The imports an operator started (``AgnoImport``) are not anyone's
rows but name users: the users merged by hand, the operator who started it, and in its report the
colliding users and the skipped rows (each a source row of some user, whose reason may name the
user of ours holding its id). ``imports_forget_user`` takes one user out of all of them, in the
erasure's transaction (``userdata_erasing``): a skipped row of theirs, or naming them, keeps its
kind but loses its id and reason; the counts stay, as they name nobody.
"""
from __future__ import annotations

import re
from typing import Any

from django.db import transaction

from .models import AgnoImport

ERASED_FAILURE = "details erased with a user's data"
ERASED_USER = "(erased user)"


def _named(user_id: str) -> re.Pattern[str]:
    """The user id as a word of free text (a reason, an error, a label), for reports written
    before failures recorded their users, and for text no structure covers."""
    return re.compile(rf"(?<!\w){re.escape(user_id)}(?!\w)")


def _failure_forgets(failure: dict[str, Any], user_id: str, named: re.Pattern[str]) -> dict[str, Any]:
    if user_id in failure.get("users", ()) or named.search(str(failure.get("id", ""))) or named.search(str(failure.get("reason", ""))):
        return {"kind": failure.get("kind", ""), "id": "", "reason": ERASED_FAILURE, "users": []}
    return failure


def _report_forgets(report: dict[str, Any] | None, user_id: str, named: re.Pattern[str]) -> dict[str, Any] | None:
    if not report:
        return report
    return {
        **report,
        "source": named.sub(ERASED_USER, str(report.get("source", ""))),
        "colliding_users": [user for user in report.get("colliding_users", []) if user != user_id],
        "failures": [_failure_forgets(failure, user_id, named) for failure in report.get("failures", [])],
    }


def imports_forget_user(user_id: str) -> int:
    """Take ``user_id`` out of every import that names them; returns how many imports changed.

    Imports are few (one per operator's upload), so each is read and compared whole: a JSON
    containment query is not portable between SQLite and PostgreSQL.
    """
    named = _named(user_id)
    changed = 0
    with transaction.atomic():
        for row in AgnoImport.objects.select_for_update().order_by("pk"):
            updates = {
                "merge_users": [user for user in row.merge_users if user != user_id],
                "started_by": "" if row.started_by == user_id else row.started_by,
                "report": _report_forgets(row.report, user_id, named),
                "error": named.sub(ERASED_USER, row.error),
                "source_label": named.sub(ERASED_USER, row.source_label)[:500],
            }
            updates = {name: value for name, value in updates.items() if value != getattr(row, name)}
            if updates:
                AgnoImport.objects.filter(pk=row.pk).update(**updates)
                changed += 1
    return changed


def on_userdata_erasing(sender: Any, *, user_id: str, **kwargs: Any) -> dict[str, int]:
    """``core.services.userdata.userdata_erasing`` receiver (connected in ``importer.apps``)."""
    changed = imports_forget_user(user_id)
    return {AgnoImport._meta.label: changed} if changed else {}
