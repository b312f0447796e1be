#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agno_site.settings.local")
    from django.core.management import execute_from_command_line

    from core.management.preflight import NO_DATA_NEEDED, command_name, database_problem

    # A command that needs the site's data, on a database that has none (typically: run without
    # the server's VAR_DIR), says so instead of dying with "no such table".
    if command_name(sys.argv) not in NO_DATA_NEEDED:
        import django

        django.setup()
        problem = database_problem()
        if problem:
            sys.stderr.write(f"{problem}\n")
            sys.exit(2)
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
