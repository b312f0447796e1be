#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agno_site.settings.local")
    from django.core.management import execute_from_command_line

    from core.management.preflight import NO_DATA_NEEDED, WARN_ONLY, command_name, database_problem

    # A command that needs the site's data, on a database that has none (typically: run without
    # the server's VAR_DIR), says so instead of dying with "no such table".
    command = command_name(sys.argv)
    if command not in NO_DATA_NEEDED:
        import django

        django.setup()
        problem = database_problem()
        if problem:
            sys.stderr.write(f"{'Warning: ' if command in WARN_ONLY else ''}{problem}\n")
            if command not in WARN_ONLY:
                sys.exit(2)
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
