"""First-run set-up for `make run`: an operator account with a random password, printed once."""
from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction


class Command(BaseCommand):
    help = "Create the operator account on first run (random password, printed once) and seed demo data."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--username", default="operator")

    def handle(self, *args, username: str, **options) -> None:
        User = get_user_model()
        with transaction.atomic():
            if User.objects.filter(is_superuser=True).exists():
                self.stdout.write("bootstrap: an operator account already exists; nothing to create")
            else:
                password = secrets.token_urlsafe(12)
                User.objects.create_superuser(username=username, email="", password=password)
                self.stdout.write(self.style.SUCCESS(
                    "\n  Operator account created (shown once, store it now):\n"
                    f"    username: {username}\n    password: {password}\n"
                    "  Change it at /admin/password_change/.\n"
                ))
