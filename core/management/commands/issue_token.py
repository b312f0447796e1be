"""Mint a credential this server accepts: a JWT for a user, or a service account's token."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from core.auth import OPERATOR
from core.models import TokenKind
from core.scopes import Scope
from core.services.tokens import InvalidScopes, TokenNameTaken, access_token_create
from core.tokens import RESERVED_SUBJECT_PREFIXES, RESERVED_SUBJECTS, TokenError, issue_jwt


class Command(BaseCommand):
    help = (
        "Print a JWT for --user-id with --scopes, valid for --ttl seconds (JWT_SIGNING_KEY or the first "
        "JWT_VERIFICATION_KEYS secret); or, with --service-account NAME --owner USER, create that service "
        "account and print its agno_pat_ token (shown once)."
    )

    def add_arguments(self, parser) -> None:
        who = parser.add_mutually_exclusive_group(required=True)
        who.add_argument("--user-id")
        who.add_argument("--service-account", metavar="NAME", help="create a service account with this name")
        parser.add_argument("--owner", help="the user who owns the service account (as POST /service-accounts would)")
        parser.add_argument("--scopes", default="", help='space- or comma-separated, e.g. "agents:read agents:run sessions:read"')
        parser.add_argument("--ttl", type=int, default=3600, help="JWT: seconds (default 3600)")
        parser.add_argument("--expires-in-days", type=int, default=90, help="service account: days (default 90)")
        parser.add_argument("--never-expires", action="store_true", help="service account: no expiry")
        parser.add_argument("--session-id", default=None, help="JWT: bind the token to one session")

    def handle(self, *args, user_id: str | None, service_account: str | None, owner: str | None, scopes: str, ttl: int,
               expires_in_days: int, never_expires: bool, session_id: str | None, **options) -> None:
        items = scopes.replace(",", " ").split()
        bad = [item for item in items if Scope.parse(item) is None]
        if bad:
            raise CommandError(f"invalid scope(s): {', '.join(bad)}")
        if service_account is not None:
            self.stdout.write(self._service_account(service_account, owner, items, None if never_expires else expires_in_days))
            return
        assert user_id is not None
        if user_id.startswith(RESERVED_SUBJECT_PREFIXES) or user_id in RESERVED_SUBJECTS:
            # The server refuses these subjects (a JWT must never pass for a service account).
            raise CommandError(f"--user-id {user_id!r} is a reserved subject; use --service-account NAME --owner USER for a service account")
        if ttl <= 0:
            raise CommandError("--ttl must be positive")
        from django.conf import settings

        extra = {settings.JWT_SESSION_ID_CLAIM: session_id} if session_id else None
        try:
            token = issue_jwt(user_id=user_id, scopes=items, ttl_seconds=ttl, extra=extra)
        except TokenError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(token)

    def _service_account(self, name: str, owner: str | None, scopes: list[str], ttl_days: int | None) -> str:
        if not owner:
            raise CommandError("--service-account needs --owner USER (the user whose account it is)")
        if ttl_days is not None and ttl_days <= 0:
            raise CommandError("--expires-in-days must be positive")
        try:
            row, secret = access_token_create(
                name=name, kind=TokenKind.SERVICE, user_id=owner, scopes=scopes, ttl_days=ttl_days,
                created_by="manage.py issue_token", granted_by=OPERATOR,
            )
        except (InvalidScopes, TokenNameTaken) as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(f"service account {row.name!r} (id {row.pk}) acts as {row.principal_id}")
        return secret
