"""Mint a JWT this server accepts, signed with the configured key."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from core.scopes import Scope
from core.tokens import TokenError, issue_jwt


class Command(BaseCommand):
    help = "Print a JWT for --user-id with --scopes, valid for --ttl seconds (JWT_SIGNING_KEY or the first JWT_VERIFICATION_KEYS secret)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--user-id", required=True)
        parser.add_argument("--scopes", default="", help='space- or comma-separated, e.g. "agents:read agents:run sessions:read"')
        parser.add_argument("--ttl", type=int, default=3600, help="seconds (default 3600)")
        parser.add_argument("--session-id", default=None, help="bind the token to one session")

    def handle(self, *args, user_id: str, scopes: str, ttl: int, session_id: str | None, **options) -> None:
        if ttl <= 0:
            raise CommandError("--ttl must be positive")
        items = scopes.replace(",", " ").split()
        bad = [item for item in items if Scope.parse(item) is None]
        if bad:
            raise CommandError(f"invalid scope(s): {', '.join(bad)}")
        from django.conf import settings

        extra = {settings.JWT_SESSION_ID_CLAIM: session_id} if session_id else None
        try:
            token = issue_jwt(user_id=user_id, scopes=items, ttl_seconds=ttl, extra=extra)
        except TokenError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(token)
