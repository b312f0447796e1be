"""One error shape for the whole API: AgentOS's ``{"detail": ...}``.

Client errors are raised as ``APIError`` subclasses (or DRF's own exceptions) and rendered by
``exception_handler``; validation errors use FastAPI's list shape (422), as AgentOS does.
Anything unexpected stays a 500, is logged, and only its type is echoed.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings
from django.core.exceptions import DisallowedHost, RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import OperationalError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import csrf, defaults
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions as drf
from rest_framework.response import Response

from core.db import database_unavailable
from core.errors import refusal_of

logger = logging.getLogger("agno_site.api")

DATABASE_UNAVAILABLE = "The database is unavailable; try again shortly"
DATABASE_RETRY_AFTER = 2


class APIError(Exception):
    status_code = 400

    def __init__(self, detail: Any, *, status: int | None = None, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(detail if isinstance(detail, str) else repr(detail))
        self.detail = detail
        if status is not None:
            self.status_code = status
        self.headers = dict(headers or {})


class BadRequest(APIError):
    status_code = 400


class Unauthorized(APIError):
    status_code = 401


class Forbidden(APIError):
    status_code = 403


class NotFound(APIError):
    status_code = 404


class Conflict(APIError):
    status_code = 409


class PayloadTooLarge(APIError):
    status_code = 413


class Unprocessable(APIError):
    status_code = 422


class TooManyRequests(APIError):
    status_code = 429


def field_error(location: Sequence[str | int], message: str, *, kind: str = "value_error", value: Any = None, ctx: Mapping[str, Any] | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"type": kind, "loc": list(location), "msg": message, "input": value}
    if ctx:
        error["ctx"] = dict(ctx)
    return error


def invalid(location: Sequence[str | int], message: str, *, kind: str = "value_error", value: Any = None, ctx: Mapping[str, Any] | None = None) -> Unprocessable:
    """A 422 in FastAPI's shape for one field."""
    return Unprocessable([field_error(location, message, kind=kind, value=value, ctx=ctx)])


def missing(location: Sequence[str | int]) -> Unprocessable:
    return Unprocessable([field_error(location, "Field required", kind="missing")])


def _serializer_errors(errors: Any, prefix: list[str | int]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(errors, Mapping):
        for key, value in errors.items():
            location = prefix if key == "non_field_errors" else prefix + [key]
            found += _serializer_errors(value, location)
    elif isinstance(errors, list) and errors and all(isinstance(item, (str, drf.ErrorDetail)) for item in errors):
        for item in errors:
            code = getattr(item, "code", "invalid")
            found.append(field_error(prefix, str(item), kind="missing" if code == "required" else code))
    elif isinstance(errors, list):
        for index, item in enumerate(errors):
            if item:
                found += _serializer_errors(item, prefix + [index])
    else:
        found.append(field_error(prefix, str(errors)))
    return found


def exception_handler(exc: Exception, context: Mapping[str, Any]) -> Response | None:
    headers: dict[str, str] = {}
    refusal = refusal_of(exc)
    if refusal is not None:
        # A service's refusal (core.errors): its own status and words, whichever view called it.
        status, detail, headers = refusal.status, refusal.detail, dict(refusal.headers)
    elif isinstance(exc, APIError):
        status, detail, headers = exc.status_code, exc.detail, exc.headers
    elif isinstance(exc, drf.ValidationError):
        status, detail = 422, _serializer_errors(exc.detail, ["body"])
    elif isinstance(exc, drf.ParseError):
        status, detail = 422, [field_error(["body"], "JSON decode error" if "JSON" in str(exc.detail) else str(exc.detail), kind="json_invalid")]
    elif isinstance(exc, drf.UnsupportedMediaType):
        status, detail = 415, f"Unsupported media type {exc.detail}"
    elif isinstance(exc, (drf.NotAuthenticated, drf.AuthenticationFailed)):
        status, detail = 401, str(exc.detail)
        headers["WWW-Authenticate"] = getattr(exc, "auth_header", None) or "Bearer"
    elif isinstance(exc, (drf.PermissionDenied, DjangoPermissionDenied)):
        status, detail = 403, str(getattr(exc, "detail", "Forbidden"))
    elif isinstance(exc, (drf.NotFound, Http404)):
        status, detail = 404, "Not Found"
    elif isinstance(exc, drf.MethodNotAllowed):
        status, detail = 405, "Method Not Allowed"
    elif isinstance(exc, drf.Throttled):
        status, detail = 429, "Too many requests"
        if exc.wait is not None:
            headers["Retry-After"] = str(int(exc.wait) + 1)
    elif isinstance(exc, drf.APIException):
        status, detail = exc.status_code, str(exc.detail)
    elif isinstance(exc, OperationalError) and database_unavailable(exc):
        # The database refused or dropped the connection (too many clients, a restart, the
        # pool's wait ran out): a moment's unavailability, not a bug; the client may retry.
        logger.warning("database unavailable: %s", type(exc.__cause__ or exc).__name__)
        status, detail = 503, DATABASE_UNAVAILABLE
        headers["Retry-After"] = str(DATABASE_RETRY_AFTER)
    else:
        return None
    return Response({"detail": detail}, status=status, headers=headers or None)


# Django-level handlers for what DRF never sees: unknown URLs, crashes outside the API, and what
# Django refuses before or while a view reads the request (a body over
# DATA_UPLOAD_MAX_MEMORY_SIZE, too many fields, an unknown Host, a failed CSRF check). The
# browser's pages keep Django's HTML; every other path is the API and answers JSON.
HTML_PATH_PREFIXES = ("/chat/", "/admin/", "/static/")
HTML_PAGES = {"/docs", "/redoc"}


def is_api_path(path: str) -> bool:
    return not path.startswith(HTML_PATH_PREFIXES) and path.rstrip("/") not in HTML_PAGES


def body_too_large() -> str:
    """Why a body over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` is refused: one text, whoever refuses it."""
    return f"Request body too large: at most {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes apart from uploaded files"


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Django's SuspiciousOperation and BadRequest, raised in middleware or by ``request.data``."""
    if not is_api_path(request.path):
        return defaults.bad_request(request, exception)
    if isinstance(exception, RequestDataTooBig):
        return JsonResponse({"detail": body_too_large()}, status=413)
    if isinstance(exception, TooManyFieldsSent):
        return JsonResponse({"detail": f"Too many fields: at most {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS}"}, status=400)
    if isinstance(exception, TooManyFilesSent):
        return JsonResponse({"detail": f"Too many files: at most {settings.DATA_UPLOAD_MAX_NUMBER_FILES}"}, status=400)
    if isinstance(exception, DisallowedHost):
        return JsonResponse({"detail": "Invalid Host header"}, status=400)
    return JsonResponse({"detail": "Bad Request"}, status=400)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if not is_api_path(request.path):
        return defaults.permission_denied(request, exception)
    return JsonResponse({"detail": "Forbidden"}, status=403)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: a browser session's unsafe request without a valid CSRF token."""
    if not is_api_path(request.path):
        return csrf.csrf_failure(request, reason)
    return JsonResponse({"detail": f"CSRF verification failed: {reason}" if reason else "CSRF verification failed"}, status=403)


def not_found(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return JsonResponse({"detail": "Not Found"}, status=404)


@csrf_exempt
async def unknown_route(request: HttpRequest, path: str = "") -> JsonResponse:
    """The last URL pattern: every path no route serves, outside the browser's pages. With DEBUG
    on (``make run``) Django answers an unresolved path with its HTML debug page rather than
    ``handler404``; an API client gets AgentOS's JSON 404 in development too. CSRF-exempt, as the
    answer is the same 404 whatever the session: a POST to a typo is not a CSRF failure."""
    return not_found(request)


def server_error(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"detail": "Internal server error"}, status=500)
