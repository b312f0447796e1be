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
"""
from __future__ import annotations

import os
import threading

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


class DatabaseWrapper(base.DatabaseWrapper):
    _held: threading.Lock | None = None

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
