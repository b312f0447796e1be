"""The base of every API view: authentication, the principal, db selectors, errors.

Subclasses read ``self.principal`` and pass ``user=`` / ``owner_id=`` to services; they never
build their own scoping. ``AsyncAgentOSView`` is the same for async handlers (runs and streams),
so a long model call never holds Django's single thread for sync views.
"""
from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from rest_framework.authentication import BaseAuthentication, SessionAuthentication
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.views import APIView

from core.auth import OPEN, Principal, principal_for_django_user

from .errors import BadRequest, NotFound


class BrowserSessionAuthentication(SessionAuthentication):
    """A logged-in browser user (chat UI). CSRF is enforced on unsafe methods, as DRF does."""

    def authenticate(self, request: Request):
        user = getattr(request._request, "user", None)
        if user is None or not user.is_active or not user.is_authenticated:
            return None
        self.enforce_csrf(request)
        return (principal_for_django_user(user), None)


class OpenAuthentication(BaseAuthentication):
    """No credentials configured: everyone is the open principal (AgentOS auth_mode "none")."""

    def authenticate(self, request: Request):
        return (OPEN, None)


def database_id() -> str:
    return f"{settings.AGENT_OS_ID}-db"


class AgentOSView(APIView):
    authentication_classes = [BrowserSessionAuthentication, OpenAuthentication]
    permission_classes: list = []
    parser_classes = [JSONParser]

    @property
    def principal(self) -> Principal:
        user = self.request.user
        return user if isinstance(user, Principal) else OPEN

    def get_exception_handler(self):
        from .errors import exception_handler

        return exception_handler

    # AgentOS's multi-database selectors: we have one database; its id is accepted back.
    def check_db_selector(self, params: Any) -> None:
        db_id = params.get("db_id")
        table = params.get("table")
        if table and not db_id:
            raise BadRequest("The db_id query parameter is required when passing a table")
        if db_id and db_id != database_id():
            raise NotFound(f"No database found with id '{db_id}'")


class FormView(AgentOSView):
    """Run, continue and resume endpoints take form fields (urlencoded or multipart)."""

    parser_classes = [FormParser, MultiPartParser]


class AsyncAgentOSView(FormView):
    """DRF's request cycle with async handlers (DRF itself only dispatches sync handlers)."""

    view_is_async = True

    async def dispatch(self, request, *args, **kwargs):  # type: ignore[override]
        self.args = args
        self.kwargs = kwargs
        request = self.initialize_request(request, *args, **kwargs)
        self.request = request
        self.headers = self.default_response_headers
        try:
            # Authentication may read the database (sessions, tokens).
            await sync_to_async(self.initial)(request, *args, **kwargs)
            method = request.method.lower()
            handler = getattr(self, method, None) if method in self.http_method_names else None
            if handler is None:
                self.http_method_not_allowed(request, *args, **kwargs)
            response = await handler(request, *args, **kwargs)
        except Exception as exc:
            response = self.handle_exception(exc)
        self.response = self.finalize_response(request, response, *args, **kwargs)
        return self.response

    async def options(self, request, *args, **kwargs):  # type: ignore[override]
        return super().options(request, *args, **kwargs)
