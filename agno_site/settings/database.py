"""The database: ``DATABASE_URL`` (SQLite or PostgreSQL), its connections and pool."""
from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from . import envtools as env
from .environment import VAR_DIR

DATABASES = {"default": env.database("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    if DATABASES["default"]["NAME"] != ":memory:":
        Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
    # Django's backend, with the transactions of this process taking turns on a lock rather than
    # in SQLite's sleeping busy handler (core/db/sqlite3/base.py).
    DATABASES["default"]["ENGINE"] = "core.db.sqlite3"
    DATABASES["default"]["OPTIONS"] = {
        # WAL lets readers run beside the one writer; IMMEDIATE takes the write lock at BEGIN,
        # so a read-then-write transaction never fails half way with "database is locked".
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        # How long a writer waits for the lock (seconds; SQLite's busy timeout too).
        "timeout": env.integer("SQLITE_BUSY_TIMEOUT_MS", 10000, minimum=0) / 1000,
    }
# Connections are kept between requests (and between runs in the run threads): opening one costs
# more than a whole run's queries (SQLite re-runs its PRAGMAs, PostgreSQL authenticates).
DATABASES["default"]["CONN_MAX_AGE"] = env.integer("DB_CONN_MAX_AGE", 600, minimum=0)
# A kept connection is checked before its first use after a request or task; a pooled one (below)
# before the pool lends it (Django passes ConnectionPool.check_connection as the pool's check), so
# after a restart of the database or a terminated session the next query gets a good connection.
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Values travel beside the statement (no quoting of every value into the SQL text), and a
    # statement a connection has run five times is prepared: PostgreSQL stops parsing and
    # planning it on every run. DB_PREPARED_STATEMENTS=false behind a pooler that cannot keep
    # prepared statements (PgBouncer before 1.21 in transaction mode).
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        server_side_binding=True,
        prepare_threshold=5 if env.boolean("DB_PREPARED_STATEMENTS", True) else None,
    )
    # A process stopped inside a transaction (SIGSTOP, a frozen VM, a debugger) would hold its
    # locks for good: the job queue's advisory lock would stall every submission. PostgreSQL ends
    # a session idle in a transaction this long, which frees them; no transaction here waits on
    # anything but the database, so this never ends a healthy one. 0 turns it off.
    idle_timeout = env.integer("DB_IDLE_IN_TRANSACTION_TIMEOUT", 60, minimum=0)
    if idle_timeout:
        DATABASES["default"]["OPTIONS"]["options"] = f"-c idle_in_transaction_session_timeout={idle_timeout * 1000}"
    # A bounded pool per process (psycopg_pool, through Django's OPTIONS["pool"]): a thread holds
    # a connection only while it works on the database and hands it back when it closes it, so a
    # process never holds more than DB_POOL_MAX_SIZE, however many requests and runs are in flight
    # (a run waiting on its model holds none: core.db.release_connections). Beyond that, a thread
    # waits up to DB_POOL_TIMEOUT seconds for a connection; then the request answers 503.
    if env.boolean("DB_POOL", True):
        DATABASES["default"]["OPTIONS"]["pool"] = {
            "min_size": env.integer("DB_POOL_MIN_SIZE", 1, minimum=0),
            "max_size": env.integer("DB_POOL_MAX_SIZE", 10, minimum=1),
            "timeout": env.number("DB_POOL_TIMEOUT", 10.0, minimum=0.1),
        }
        # Idle connections above min_size go back to the server within DB_POOL_IDLE_SECONDS of the
        # load ending. psycopg_pool's max_idle is not a per-connection idle time: every max_idle
        # seconds its ShrinkPool task closes ONE connection if some connection sat unused the
        # whole window (the first window after the load still saw it in use). So going from
        # max_size down to min_size takes (max_size - min_size) + 2 windows at most, and the
        # window is DB_POOL_IDLE_SECONDS divided by that.
        _pool = DATABASES["default"]["OPTIONS"]["pool"]
        DB_POOL_IDLE_SECONDS = env.number("DB_POOL_IDLE_SECONDS", 60.0, minimum=1.0)
        _pool["max_idle"] = DB_POOL_IDLE_SECONDS / (_pool["max_size"] - min(_pool["min_size"], _pool["max_size"]) + 2)
        if DATABASES["default"]["OPTIONS"]["pool"]["min_size"] > DATABASES["default"]["OPTIONS"]["pool"]["max_size"]:
            raise ImproperlyConfigured("DB_POOL_MIN_SIZE must not exceed DB_POOL_MAX_SIZE")
        # Pooled connections go back to the pool when closed; Django refuses persistent ones.
        DATABASES["default"]["CONN_MAX_AGE"] = 0
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
