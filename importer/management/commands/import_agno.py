"""``manage.py import_agno <database URL>``: import an Agno database (sessions, runs, memories, evals, metrics, knowledge, schedules)."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from importer.services import agno_import
from importer.sources import SourceError


class Command(BaseCommand):
    help = (
        "Import an Agno 2.x/3.x database (a SQLite file, sqlite:///path or postgresql://...) read-only: "
        "sessions, runs (members and workflow steps linked to their parent), user memories, eval runs, metrics rows, "
        "knowledge contents, schedules (imported disabled) and their runs. "
        "Safe to run twice: rows already imported are skipped."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("url", help="SQLite file path, sqlite:///path, or postgresql://user@host/db")
        parser.add_argument("--schema", default=None, help="PostgreSQL schema of the Agno tables (default: ai, then public)")
        parser.add_argument("--session-table", default="agno_sessions")
        parser.add_argument("--runs-table", default=None, help="default: <session table>_runs")
        parser.add_argument("--memory-table", default="agno_memories")
        parser.add_argument(
            "--merge-user", action="append", default=[], metavar="USER_ID",
            help="import this user's rows even though the user id already has rows here that no import wrote (repeatable)",
        )
        parser.add_argument("--merge-all-users", action="store_true", help="as --merge-user, for every colliding user")

    def handle(self, *args: Any, **options: Any) -> None:
        def progress(kind: str, done: int, total: int) -> None:
            if options["verbosity"] >= 2:
                self.stderr.write(f"\r{kind}: {done}/{total}", ending="\n" if done == total else "")

        try:
            report = agno_import(
                options["url"],
                merge_users=True if options["merge_all_users"] else options["merge_user"],
                progress=progress,
                schema=options["schema"],
                session_table=options["session_table"],
                runs_table=options["runs_table"],
                memory_table=options["memory_table"],
            )
        except SourceError as exc:
            raise CommandError(str(exc)) from None
        for line in report.lines():
            self.stdout.write(line)
