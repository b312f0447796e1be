"""Give everything one user id owns to another (operators only)."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import IntegrityError

from core.services.userdata import userdata_reassign


class Command(BaseCommand):
    help = (
        "Move every owned row of --from to --to, in one transaction. For example the rows of a "
        "service-account name that several accounts shared (the 0002 core migration lists them): "
        "--from sa:bot --to sa:12."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--from", dest="from_user_id", required=True)
        parser.add_argument("--to", dest="to_user_id", required=True)

    def handle(self, *args, from_user_id: str, to_user_id: str, **options) -> None:
        if not from_user_id or not to_user_id or from_user_id == to_user_id:
            raise CommandError("--from and --to must be two different, non-empty user ids")
        try:
            moved = userdata_reassign(from_user_id=from_user_id, to_user_id=to_user_id)
        except IntegrityError as exc:
            raise CommandError(f"nothing moved: {to_user_id} already holds a row that would clash ({exc})") from None
        for label, count in sorted(moved.items()):
            self.stdout.write(f"{label}: {count}")
        self.stdout.write(f"moved {sum(moved.values())} row(s) from {from_user_id} to {to_user_id}")
