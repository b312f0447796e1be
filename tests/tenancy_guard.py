"""The test suite's SQL guard: a statement on an owned table must say whose rows it touches.

Installed on every database connection for the whole test session (tests/conftest.py), it fails
any SELECT, UPDATE or DELETE that reads or writes an owned table (every ``OwnedModel``'s
``db_table``) without an owner clause (``user_id = %s``, ``user_id IN (...)``, ``user_id IS
NULL``, or one owner tied to another), unless an explicit every-user path is running it:
``.unscoped(reason)`` querysets, ``with core.tenancy.unscoped(reason):``, ``Model.all_users``.
Inserts need no WHERE. Each table a statement reads (after FROM) or writes (after UPDATE) needs an
owner condition of its own, so a subquery without one is caught inside an outer query that has one.

Django's own maintenance is exempt by where it comes from, not by its shape: the test runner's
flush (emptying tables between transactional tests) and migrations (data migrations act on every
row by design).
"""
from __future__ import annotations

import re
import sys
import threading
from typing import Any

from core.tenancy import current_unscoped_reason, owned_models


class OwnerClauseMissing(AssertionError):
    """SQL on an owned table with no owner clause, outside every explicit unscoped path."""


# A table read or written: FROM t / UPDATE t (JOIN t does not count: a join follows a row the
# statement's own owner clause already chose).
_TABLE = re.compile(r'\b(?:FROM|UPDATE)\s+"?([A-Za-z_]\w*)"?', re.IGNORECASE)
_PARAM = r"%(?:\(\w+\))?s"
_OWNER_CONDITION = re.compile(
    rf'\buser_id"?\s*(?:=\s*(?:{_PARAM}|\(?\s*"?\w+"?\s*\.\s*"?user_id\b)|IN\s*\(\s*{_PARAM}|IS\s+NULL)',
    re.IGNORECASE,
)
_SET_LIST = re.compile(r"\bSET\b.*?(?=\bWHERE\b|\bFROM\b|\bRETURNING\b|$)", re.IGNORECASE | re.DOTALL)
_EXEMPT_CALLERS = ("django/core/management/commands/flush.py", "django/db/migrations/")

violations: list[str] = []
_lock = threading.Lock()


def missing_owner_clause(sql: str, owned_tables: frozenset[str]) -> list[str]:
    """The owned tables ``sql`` reads or writes without enough owner conditions (empty: fine)."""
    statement = sql.lstrip().lstrip("(")
    if statement[:6].upper() == "INSERT":
        return []
    tables = [name for name in _TABLE.findall(statement) if name in owned_tables]
    if not tables:
        return []
    conditions = len(_OWNER_CONDITION.findall(_SET_LIST.sub(" ", statement)))
    return tables if conditions < len(tables) else []


def _exempt_caller() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename.replace("\\", "/")
        if any(part in filename for part in _EXEMPT_CALLERS):
            return True
        frame = frame.f_back
    return False


class OwnerClauseGuard:
    """``connection.execute_wrapper`` callable."""

    def __init__(self) -> None:
        self.owned_tables = frozenset(model._meta.db_table for model in owned_models())

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        if current_unscoped_reason() is None and isinstance(sql, str):
            tables = missing_owner_clause(sql, self.owned_tables)
            if tables and not _exempt_caller():
                message = f"SQL on {', '.join(sorted(set(tables)))} without an owner clause (user_id) outside unscoped(): {sql}"
                with _lock:
                    violations.append(message)
                raise OwnerClauseMissing(message)
        return execute(sql, params, many, context)


_guard: OwnerClauseGuard | None = None


def _install_on(connection: Any) -> None:
    if _guard is not None and _guard not in connection.execute_wrappers:
        connection.execute_wrappers.append(_guard)


def _on_connection_created(sender: Any, connection: Any, **kwargs: Any) -> None:
    _install_on(connection)


def install() -> None:
    """Guard every connection: those open now and every one opened later, in any thread."""
    global _guard
    from django.db import connections
    from django.db.backends.signals import connection_created

    _guard = OwnerClauseGuard()
    connection_created.connect(_on_connection_created, dispatch_uid="tests.tenancy_guard")
    for connection in connections.all(initialized_only=True):
        _install_on(connection)


def uninstall() -> None:
    global _guard
    from django.db import connections
    from django.db.backends.signals import connection_created

    connection_created.disconnect(dispatch_uid="tests.tenancy_guard")
    for connection in connections.all(initialized_only=True):
        if _guard in connection.execute_wrappers:
            connection.execute_wrappers.remove(_guard)
    _guard = None


def take_violations() -> list[str]:
    with _lock:
        taken = list(violations)
        violations.clear()
    return taken
