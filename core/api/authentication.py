"""DRF authentication for the API: bearer credentials, browser sessions, the open server.

Order matters: a bearer header wins (API clients), then a logged-in browser session (chat UI),
then, only when no authentication is configured, the open principal. A request none of them
accept is unauthenticated; the permission check answers 401 with AgentOS's message.
"""
from __future__ import annotations

from django.conf import settings
from django.middleware.csrf import CsrfViewMiddleware
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, SessionAuthentication
from rest_framework.request import Request

from core.addresses import client_address
from core.auth import OPEN, SECURITY_KEY_ROOT, principal_for_access_token, principal_for_claims, principal_for_django_user
from core.tokens import PAT_PREFIX, TokenError, access_token_lookup, security_key_matches, verify_jwt

from .throttling import auth_failures


def credential_from_header(header: str) -> str | None:
    """The credential of an ``Authorization`` header value (None: no header; a bare prefix
    gives "", which no credential check accepts)."""
    if not header.strip():
        return None
    # AgentOS accepts the credential with or without the "Bearer " prefix.
    return header[7:].strip() if header[:7].lower() == "bearer " else header.strip()


def bearer_token(request) -> str | None:
    return credential_from_header(request.META.get("HTTP_AUTHORIZATION", ""))


class TooManyFailures(Exception):
    """This client address failed to authenticate too often lately (a 429)."""

    def __init__(self, wait: float | None) -> None:
        super().__init__("Too many failed authentication attempts")
        self.wait = wait


def authenticate_bearer(token: str, *, address: str | None):
    """The principal for a bearer credential sent from ``address``: TokenError (a 401) when it is
    refused, TooManyFailures (a 429) when that address has had too many refused lately."""
    verdict = auth_failures.check(address)
    if not verdict.allowed:
        raise TooManyFailures(verdict.wait)
    try:
        return _principal_for_bearer(token)
    except TokenError:
        auth_failures.count(address)
        raise


def _principal_for_bearer(token: str):
    if token.startswith(PAT_PREFIX):
        return principal_for_access_token(access_token_lookup(token))
    mode = settings.AGENT_OS_AUTH_MODE
    if mode == "jwt":
        return principal_for_claims(verify_jwt(token))
    if mode == "security_key":
        if security_key_matches(token):
            return SECURITY_KEY_ROOT
        raise TokenError("Invalid authentication token")
    return None  # open server: any other header is ignored, as in AgentOS


def missing_credentials_detail() -> str:
    return "Authorization header missing" if settings.AGENT_OS_AUTH_MODE == "jwt" else "Authorization header required"


class BearerAuthentication(BaseAuthentication):
    def authenticate(self, request: Request):
        token = bearer_token(request._request)
        if token is None:
            return None
        try:
            principal = authenticate_bearer(token, address=client_address(request))
        except TokenError as exc:
            raise exceptions.AuthenticationFailed(str(exc)) from None
        except TooManyFailures as exc:
            raise exceptions.Throttled(exc.wait) from None
        return None if principal is None else (principal, None)

    def authenticate_header(self, request: Request) -> str:
        # Makes DRF answer 401 (not 403) when credentials are missing or refused.
        return "Bearer"


class BrowserSessionAuthentication(SessionAuthentication):
    """A logged-in browser user (chat UI). CSRF is enforced on unsafe methods, as DRF does.

    The login cookie is a credential only on this site's own pages' requests: a request whose
    ``Origin`` is another (an allowed CORS origin included, which may read the answer) is not
    authenticated by it, so a page of ``http://localhost:3000`` (the same site as a local server,
    so the cookie goes with its requests) reads nothing of the signed-in user's."""

    def authenticate(self, request: Request):
        user = getattr(request._request, "user", None)
        if user is None or not user.is_active or not user.is_authenticated:
            return None
        if not same_origin(request._request):
            return None
        self.enforce_csrf(request)
        return (principal_for_django_user(user), None)


def same_origin(request) -> bool:
    """No ``Origin`` (a same-origin GET, a non-browser client), or the one CSRF accepts: this
    site's own, or one of ``CSRF_TRUSTED_ORIGINS``."""
    if "HTTP_ORIGIN" not in request.META:
        return True
    # Django's own check (a fresh one: it caches CSRF_TRUSTED_ORIGINS as it reads them).
    return CsrfViewMiddleware(lambda request: None)._origin_verified(request)


class OpenAuthentication(BaseAuthentication):
    """No authentication configured (development, or ALLOW_UNAUTHENTICATED): the open principal."""

    def authenticate(self, request: Request):
        if settings.AGENT_OS_AUTH_MODE == "none":
            return (OPEN, None)
        return None
