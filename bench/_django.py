"""Set up Django against a throw-away database for a benchmark."""
from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from typing import Iterator
from urllib.parse import urlsplit, urlunsplit


@contextmanager
def bench_database(backend: str, *, under: str | None = None, name: str | None = None) -> Iterator[str]:
    """Yield a DATABASE_URL for a fresh database of ``backend`` ("sqlite" or "postgres"), dropped
    afterwards. A SQLite file goes in a new folder under ``under`` (default: the temp folder). The
    PostgreSQL database is ``name``, else $BENCH_DATABASE_NAME, else agno_site_bench (give each
    concurrent bench a name of its own)."""
    if backend == "sqlite":
        folder = tempfile.mkdtemp(prefix="agno-bench-", dir=under)
        try:
            yield f"sqlite:///{folder}/bench.sqlite3"
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return
    import psycopg

    base = os.environ.get("TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/agno_site")
    parts = urlsplit(base)
    admin = urlunsplit(parts._replace(scheme="postgresql", path="/postgres"))
    name = name or os.environ.get("BENCH_DATABASE_NAME") or "agno_site_bench"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        from django.db import connections

        connections.close_all()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def setup(database_url: str) -> None:
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agno_site.settings.test")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)
