"""``manage.py rekey_learnings``: the v3 re-key of ``namespace="user"`` entity memory (learnings/rekey.py)."""
from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand

from learnings.rekey import BUCKETS, rekey_user_entity_learnings


class Command(BaseCommand):
    help = (
        'Re-key pre-v3 entity memory under namespace="user" to each owner\'s user-scoped key. A dry run '
        "by default: pass --apply to write. Rows holding two users' data go to namespace "
        '"quarantined_user" (or are deleted, with the ownerless ones, by --purge-unrecoverable). '
        "There is no reverse: back up the agno_learnings table first."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--apply", action="store_true", help="Write the changes (default: report only).")
        parser.add_argument(
            "--purge-unrecoverable", action="store_true",
            help="Delete rows holding two users' data and rows with no owner instead of quarantining them.",
        )
        parser.add_argument("--json", action="store_true", help="Print the whole report as JSON.")

    def handle(self, *args: Any, **options: Any) -> None:
        report = rekey_user_entity_learnings(dry_run=not options["apply"], purge_unrecoverable=options["purge_unrecoverable"])
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2))
            return
        mode = "dry run (nothing written; pass --apply)" if report["dry_run"] else "applied"
        self.stdout.write(f"rekey_learnings: {mode}: scanned={report['scanned']} keyed={report['keyed']}")
        for name in BUCKETS:
            if report[name]:
                self.stdout.write(f"  {name}: {len(report[name])}: {', '.join(report[name])}")
