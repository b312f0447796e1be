"""The base of every API view: authentication, the principal, db selectors, errors.

Subclasses read ``self.principal`` and pass ``user=`` / ``owner_id=`` to services; they never
build their own scoping. ``AsyncAgentOSView`` is the same for async handlers (runs and streams),
so a long model call never holds Django's single thread for sync views.
"""
from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import HttpResponse
from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.auth import OPEN, Principal
from core.db import with_connection_care

from .authentication import BearerAuthentication, BrowserSessionAuthentication, OpenAuthentication
from .errors import BadRequest, NotFound, invalid
from .parsers import StrictFormParser, StrictJSONParser, StrictMultiPartParser
from .permissions import AgentOSPermission
from .throttling import PrincipalRateThrottle


def database_id() -> str:
    return f"{settings.AGENT_OS_ID}-db"


class LenientNegotiation(DefaultContentNegotiation):
    """AgentOS never answers 406: a client asking for ``text/event-stream`` (or anything) gets JSON
    bodies as JSON and streams as SSE."""

    def select_renderer(self, request, renderers, format_suffix=None):
        try:
            return super().select_renderer(request, renderers, format_suffix)
        except NotAcceptable:
            return renderers[0], renderers[0].media_type


class AgentOSView(APIView):
    """Subclasses declare ``scope_family`` (or ``public`` / ``authenticated_only``): see permissions."""

    content_negotiation_class = LenientNegotiation
    authentication_classes = [BearerAuthentication, BrowserSessionAuthentication, OpenAuthentication]
    permission_classes = [AgentOSPermission]
    throttle_classes = [PrincipalRateThrottle]
    parser_classes = [StrictJSONParser]
    scope_family: str | None = None
    public = False
    authenticated_only = False

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        refuse_null_characters(request.query_params, kwargs)

    def dispatch(self, request, *args: Any, **kwargs: Any):
        return rendered_here(super().dispatch(request, *args, **kwargs))

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

    parser_classes = [StrictFormParser, StrictMultiPartParser]


class AsyncAgentOSView(FormView):
    """DRF's request cycle with async handlers (DRF itself only dispatches sync handlers).

    Everything blocking that must happen before the handler runs in one thread hop: DRF's
    ``initial()`` (authentication, permissions and throttles, which may read the database or the
    cache), then the view's ``prepare_<method>()``, if it has one, whose result the handler finds
    in ``self.prepared``. A view puts there what it reads or writes before answering (a whole
    non-streamed run, a stream's preparation), so a request leaves the event loop once.
    """

    view_is_async = True
    prepared: Any = None

    async def in_thread(self, fn, /, *args: Any, **kwargs: Any) -> Any:
        """Run blocking ``fn`` off the event loop, in a pooled thread that closes the connections
        it opened as a request's thread does (agent views use their run threads, which do too)."""
        return await sync_to_async(with_connection_care, thread_sensitive=False)(fn, *args, **kwargs)

    async def dispatch(self, request, *args, **kwargs):  # type: ignore[override]
        self.args = args
        self.kwargs = kwargs
        request = self.initialize_request(request, *args, **kwargs)
        self.request = request
        self.headers = self.default_response_headers
        try:
            method = request.method.lower()
            handler = getattr(self, method, None) if method in self.http_method_names else None
            prepare = getattr(self, f"prepare_{method}", None) if handler is not None else None
            self.prepared = await self.in_thread(self._before_handler, prepare, request, *args, **kwargs)
            if handler is None:
                self.http_method_not_allowed(request, *args, **kwargs)
            response = await handler(request, *args, **kwargs)
        except Exception as exc:
            response = self.handle_exception(exc)
        self.response = self.finalize_response(request, response, *args, **kwargs)
        return rendered_here(self.response)

    def _before_handler(self, prepare, request, *args: Any, **kwargs: Any) -> Any:
        self.initial(request, *args, **kwargs)
        return prepare(request, *args, **kwargs) if prepare is not None else None

    async def options(self, request, *args, **kwargs):  # type: ignore[override]
        return super().options(request, *args, **kwargs)


def rendered_here(response: Any) -> Any:
    """A JSON response, rendered now, as a plain HttpResponse.

    Under ASGI Django renders a template response (DRF's ``Response`` is one) in a thread hop of
    its own, after the view. A JSON body only needs serializing: sync views render it in the
    thread they already run in, async views on the loop (their data is plain, computed in a
    thread before it gets here). Other renderers and streams pass through unchanged.
    """
    if not isinstance(response, Response) or not isinstance(getattr(response, "accepted_renderer", None), JSONRenderer):
        return response
    response.render()
    plain = HttpResponse(response.content, status=response.status_code, headers=dict(response.items()))
    plain.cookies = response.cookies
    return plain


_JSON = JSONRenderer()


def json_response(data: Any, status: int = 200) -> HttpResponse:
    """``Response(data)`` as this API renders it (the same bytes and headers), made directly: no
    template response to build, render and copy. For the hot paths (a run's answer)."""
    return HttpResponse(_JSON.render(data), status=status, content_type=_JSON.media_type)


def refuse_null_characters(params: Any, path: dict[str, Any]) -> None:
    """A NUL in a path or query parameter is a 422 (PostgreSQL cannot even compare against one)."""
    for name, value in path.items():
        if isinstance(value, str) and "\x00" in value:
            raise invalid(["path", name], "Null characters are not allowed.", kind="null_characters_not_allowed", value=value)
    for name, values in params.lists():
        if "\x00" in name or any("\x00" in value for value in values):
            raise invalid(["query", name], "Null characters are not allowed.", kind="null_characters_not_allowed")
