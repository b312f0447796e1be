"""Database helpers shared by the web tier and the workers."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.db import close_old_connections, connections

T = TypeVar("T")


def with_connection_care(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` in a pooled thread, its connections looked after as Django's
    request signals look after a request thread's.

    A pooled thread outlives the work it is given, and so does the connection it opened there.
    Before and after the work, a connection that is broken or past ``CONN_MAX_AGE`` is closed:
    with ``CONN_MAX_AGE=0`` (always so with the PostgreSQL pool) the thread hands it back when
    the work ends, else keeps it for its next work, checked first. Without this the thread keeps
    whatever it opened, never checked again: a pooled connection out of the pool for good.
    """
    close_old_connections()
    try:
        return fn(*args, **kwargs)
    finally:
        close_old_connections()


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


# SQLSTATEs that say the server cannot serve us now (class 08: the connection; too many clients;
# the server shutting down or starting), as opposed to a statement that failed.
_UNAVAILABLE_STATES = ("53300", "57P01", "57P02", "57P03")


def database_unavailable(exc: BaseException) -> bool:
    """Whether a Django ``OperationalError`` means the database cannot be reached right now (a
    refused or dropped connection, too many clients, the pool's wait ran out, SQLite's lock held
    past its timeout), rather than a statement that failed (a missing table, a statement
    timeout, a deadlock): the first is a 503 a client may retry, the second a bug or a query to
    fix, which stays a logged 500."""
    cause = exc.__cause__ or exc
    sqlstate = getattr(cause, "sqlstate", None)
    if type(cause).__module__.startswith(("psycopg", "psycopg_pool")):
        return sqlstate is None or sqlstate.startswith("08") or sqlstate in _UNAVAILABLE_STATES
    return "database is locked" in str(cause) or "database is busy" in str(cause)
