"""Before a ``manage.py`` command that needs the site's data: is there a migrated database?

A command run without the server's ``VAR_DIR`` (or ``DATABASE_URL``) would otherwise open a
fresh SQLite file in the project's ``var/`` and die with ``no such table``, which names neither
the cause nor the fix. This says which database it looked at and how to point at the right one.
"""
from __future__ import annotations

from pathlib import Path

# Commands that make, inspect or need no tables: they run on any database.
NO_DATA_NEEDED = frozenset({
    "migrate", "makemigrations", "showmigrations", "sqlmigrate", "squashmigrations", "optimizemigration",
    "check", "help", "version", "diffsettings", "collectstatic", "findstatic", "test", "spectacular",
    "dbshell", "shell", "startapp", "startproject", "makemessages", "compilemessages", "sendtestemail",
    "flush", "inspectdb", "sqlflush", "sqlsequencereset",
})
# Django's development server starts anyway, saying what is wrong first. ``serve`` refuses: every
# request would meet a missing table or column as a 500 (a deployment migrates, then serves; a
# database that does not answer yet is not refused, and /ready reports it until it does).
WARN_ONLY = frozenset({"runserver"})


def command_name(argv: list[str]) -> str:
    """The subcommand manage.py will run (``help`` when none is given)."""
    names = [arg for arg in argv[1:] if not arg.startswith("-")]
    return names[0] if names else "help"


def database_problem() -> str | None:
    """Why the configured database cannot serve a command that needs data (None: it can)."""
    from django.conf import settings
    from django.db import DatabaseError, connection

    database = settings.DATABASES["default"]
    where = (
        f"DATABASE_URL is unset: $VAR_DIR/db.sqlite3, with VAR_DIR={settings.VAR_DIR}"
        if not _env_set("DATABASE_URL") else "from DATABASE_URL"
    )
    fix = (
        "Run the command with the server's VAR_DIR (or DATABASE_URL) in the environment, "
        "or create this database with `manage.py migrate`."
    )
    if database["ENGINE"].endswith("sqlite3") and database["NAME"] != ":memory:":
        path = Path(database["NAME"])
        if not path.is_file():  # connecting would create an empty file
            return f"No database at {path} ({where}). {fix}"
    try:
        tables = connection.introspection.table_names()
    except DatabaseError:
        return None  # unreachable or refused: the command's own error says so
    finally:
        connection.close()
    if "django_migrations" not in tables:
        label = database["NAME"]
        return f"The database {label} ({where}) has no tables: no migrations are applied. {fix}"
    from core.services.readiness import older_than_the_code

    older = older_than_the_code()
    return f"{older} (The database: {database['NAME']}, {where}.)" if older else None


def _env_set(name: str) -> bool:
    import os

    return bool(os.environ.get(name))
