"""Create a login account for an end user of the chat UI (not an operator: no admin access)."""
from __future__ import annotations

import getpass
import sys

from django.core.management.base import BaseCommand, CommandError

from core.services.accounts import AccountError, account_create


class Command(BaseCommand):
    help = (
        "Create a normal (non-staff) user who signs in to the chat UI and sees only their own data. "
        "The password comes from --password-stdin (one line), --password, or a prompt."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        source = parser.add_mutually_exclusive_group()
        source.add_argument("--password", help="the password (visible to other local users in the process list: prefer --password-stdin)")
        source.add_argument("--password-stdin", action="store_true", help="read the password from the first line of standard input")
        parser.add_argument("--email", default="")

    def handle(self, *args, username: str, password: str | None, password_stdin: bool, email: str, **options) -> None:
        if password_stdin:
            password = sys.stdin.readline().rstrip("\r\n")
        elif password is None:
            if not sys.stdin.isatty():
                raise CommandError("No password: pass --password-stdin (and the password on standard input) or --password")
            password = getpass.getpass("Password: ")
            if getpass.getpass("Password (again): ") != password:
                raise CommandError("The two passwords differ")
        if not password:
            raise CommandError("The password is empty")
        try:
            user = account_create(username=username, password=password, email=email)
        except AccountError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(self.style.SUCCESS(f"Created user {user.get_username()!r} (not staff): they sign in at /chat/."))
