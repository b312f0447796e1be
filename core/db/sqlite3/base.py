"""Django's SQLite backend, with a process's writers taking turns in order instead of polling.

SQLite has one writer at a time. A connection that finds the write lock taken waits in SQLite's
busy handler, which sleeps and retries: 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100 ms, then
100 ms at a time, until the busy timeout. Under load a writer can lose the lock to newcomers
again and again, sleeping longer each time, while the lock itself is held for a millisecond:
with eight runs at once, that doubled the slowest runs' latency (bench/README.md). Transactions of
one process are serialized here, on a lock per database file, before ``BEGIN``: a writer waits
for the one before it and starts the moment it ends. Other processes on the same file (a
management command, a second server) still meet SQLite's busy handler, as before.

Every transaction takes the lock, read-only ones too: with ``transaction_mode`` IMMEDIATE (the
project's setting) each ``BEGIN`` takes SQLite's write lock anyway. A writer that waits longer
than the busy timeout for the lock goes ahead and lets SQLite decide, so nothing here can hang
where SQLite would have raised "database is locked".

Each statement's ``%s`` placeholders become SQLite's ``?`` once per distinct SQL text, not at
every execution: Django's cursor rewrites them with a look-behind regular expression that visits
every character (reached through a lazy object, which raises and catches an ``AttributeError``
each time), about 50,000 instructions a statement, 0.65M of an in-process run's 9.6M; a run
executes the same dozen texts each time.
"""
from __future__ import annotations

import os
import threading
from functools import lru_cache

from django.db.backends.sqlite3 import base

_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def _forget_locks_in_child() -> None:
    # A forked child has none of its parent's threads: a lock one of them held would never be
    # released there. The child's transactions take new locks.
    global _locks_guard
    _locks_guard = threading.Lock()
    _locks.clear()


os.register_at_fork(after_in_child=_forget_locks_in_child)


def writer_lock(name: str) -> threading.Lock:
    """The lock of a database file, shared by every connection of this process to it."""
    with _locks_guard:
        return _locks.setdefault(str(name), threading.Lock())


def _then_release(method):
    """``method``, then the connection's writer lock released if it holds it, whatever happened."""

    def releasing(self):
        try:
            return method(self)
        finally:
            self._release()

    return releasing


@lru_cache(maxsize=1024)
def _qmark(query: str) -> str:
    """``query`` from Django's "format" placeholders to SQLite's "qmark" ones, as Django does it."""
    return base.FORMAT_QMARK_REGEX.sub("?", query).replace("%%", "%")


class CursorWrapper(base.SQLiteCursorWrapper):
    def convert_query(self, query: str, *, param_names: list[str] | None = None) -> str:
        if param_names is None:
            return _qmark(query)
        return super().convert_query(query, param_names=param_names)


class DatabaseWrapper(base.DatabaseWrapper):
    _held: threading.Lock | None = None

    def create_cursor(self, name: str | None = None) -> CursorWrapper:
        return self.connection.cursor(factory=CursorWrapper)

    def _start_transaction_under_autocommit(self) -> None:
        lock = writer_lock(self.settings_dict["NAME"])
        timeout = float(self.settings_dict.get("OPTIONS", {}).get("timeout", 5.0))
        held = lock.acquire(timeout=timeout)
        try:
            super()._start_transaction_under_autocommit()
        except BaseException:
            if held:
                lock.release()
            raise
        self._held = lock if held else None

    def _release(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            held.release()

    # A transaction ends with its commit or its rollback, or with the connection's close.
    _commit = _then_release(base.DatabaseWrapper._commit)
    _rollback = _then_release(base.DatabaseWrapper._rollback)
    _close = _then_release(base.DatabaseWrapper._close)
