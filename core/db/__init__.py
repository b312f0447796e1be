"""Database helpers shared by the web tier and the workers."""
from __future__ import annotations

from django.db import connections


def release_connections() -> None:
    """Hand this thread's pooled connections back to the pool before a long wait.

    A run waits seconds on its model; a thread that kept its connection through the wait would
    make the pool's size the number of runs a process can carry. Outside a transaction, a
    pooled connection is returned (``close()`` puts it back; the next query takes one again,
    which costs microseconds). Unpooled connections (SQLite, ``DB_POOL=false``) are kept: opening
    one costs more than a run's queries.
    """
    for connection in connections.all(initialized_only=True):
        if connection.connection is None or connection.in_atomic_block:
            continue
        if getattr(connection, "pool", None) is not None:
            connection.close()
