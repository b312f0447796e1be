"""Middleware of our own."""
from __future__ import annotations

from functools import cache, partial

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.middleware import CheckableLazyObject, CSPMiddleware
from csp.utils import build_policy
from django.conf import settings
from django.core.signals import setting_changed
from django.contrib.auth import middleware as auth_middleware
from django.contrib.messages import middleware as messages_middleware
from django.contrib.messages import storage as messages_storage
from django.contrib.sessions import middleware as session_middleware
from django.http import HttpResponse
from django.middleware import clickjacking, common, csrf, security
from django.utils.functional import SimpleLazyObject, empty
from whitenoise.middleware import WhiteNoiseMiddleware

from core.api.errors import is_api_path


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    """WhiteNoise that stays asynchronous under ASGI.

    WhiteNoise's own middleware is synchronous only, which makes Django run every request's
    whole middleware chain in a worker thread and hop back for async views. This one answers
    static paths (reading the file in a thread, whole: static assets are small) and passes every
    other request straight on without leaving the event loop.
    """

    async_capable = True
    sync_capable = True

    def __init__(self, get_response=None, settings=None):
        if settings is None:
            from django.conf import settings as django_settings

            settings = django_settings
        super().__init__(get_response, settings=settings)
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request):
        if self.is_async:
            return self.__acall__(request)
        return super().__call__(request)

    def _static_file(self, request):
        return self.find_file(request.path_info) if self.autorefresh else self.files.get(request.path_info)

    async def __acall__(self, request):
        static_file = self._static_file(request)
        if static_file is None:
            return await self.get_response(request)
        return await sync_to_async(self._serve_whole, thread_sensitive=False)(static_file, request)

    @staticmethod
    def _serve_whole(static_file, request) -> HttpResponse:
        found = static_file.get_response(request.method, request.META)
        body = b""
        if found.file is not None:
            with found.file as handle:
                body = handle.read()
        response = HttpResponse(body, status=int(found.status))
        del response["Content-Type"]
        for key, value in found.headers:
            response[key] = value
        return response


# Django's own middleware under ASGI: MiddlewareMixin runs every process_request and
# process_response in the request's thread for sync code, two thread hops per middleware per
# request. The hooks below never block (headers, cookies, lazy objects), so they run on the event
# loop; the ones that can touch the database or parse a body (saving a session, writing stored
# messages, the CSRF check of a view that is not exempt) still hop, and only when they have work.


class InlineHooks:
    """For a MiddlewareMixin whose hooks only compute: call them without leaving the event loop."""

    async def __acall__(self, request):
        response = self.process_request(request) if hasattr(self, "process_request") else None
        response = response or await self.get_response(request)
        if hasattr(self, "process_response"):
            response = self.process_response(request, response)
        return response


class SecurityMiddleware(InlineHooks, security.SecurityMiddleware):
    pass


# Where a response or view changes its policy (django-csp's decorators set these on the response).
_POLICY_CHANGES = ("_csp_config", "_csp_update", "_csp_replace", "_csp_config_ro", "_csp_update_ro", "_csp_replace_ro")


@cache
def _settings_policies() -> tuple[tuple[str, str, str, tuple[str, ...]], ...]:
    """(header, value, exempting attribute, excluded path prefixes) of the policy and of the
    report-only policy, as the settings alone give them; built again when a CSP setting changes."""
    policies = []
    for header, setting, exempt, report_only in (
        (HEADER, "CONTENT_SECURITY_POLICY", "_csp_exempt", False),
        (HEADER_REPORT_ONLY, "CONTENT_SECURITY_POLICY_REPORT_ONLY", "_csp_exempt_ro", True),
    ):
        value = build_policy(report_only=report_only)
        if value:
            prefixes = (getattr(settings, setting, None) or {}).get("EXCLUDE_URL_PREFIXES", None) or ()
            policies.append((header, value, exempt, tuple(prefixes)))
    return tuple(policies)


def _policy_setting_changed(*, setting: str, **kwargs) -> None:
    if setting.startswith("CONTENT_SECURITY_POLICY"):
        _settings_policies.cache_clear()


setting_changed.connect(_policy_setting_changed)


class ContentSecurityPolicyMiddleware(InlineHooks, CSPMiddleware):
    """django-csp's middleware; its hooks only set a lazy nonce and a header.

    A response whose view changed nothing of the policy and used no nonce (every API answer)
    gets the headers the settings give, built once: django-csp builds both policies again for
    every response, deep-copying their parts (about 0.1M instructions a request,
    docs/decisions/framework-internals.md). Any other response goes through django-csp's own
    ``process_response``; tests/security/test_content_security_policy.py holds both to the same
    headers.
    """

    def process_response(self, request, response):
        if getattr(request, "_csp_nonce", None) is not None or any(hasattr(response, name) for name in _POLICY_CHANGES):
            return super().process_response(request, response)
        if settings.DEBUG and response.status_code in (404, 500):
            return response  # django-csp leaves Django's debug pages alone
        for header, value, exempt, excluded in _settings_policies():
            if header not in response and getattr(response, exempt, False) is False and not request.path_info.startswith(excluded):
                response[header] = value
        # As django-csp does: a nonce asked for after the header is written is an error, not a
        # nonce the policy does not carry.
        request.csp_nonce = CheckableLazyObject(self._csp_nonce_post_response)
        return response


class CommonMiddleware(InlineHooks, common.CommonMiddleware):
    pass


class XFrameOptionsMiddleware(InlineHooks, clickjacking.XFrameOptionsMiddleware):
    pass


class AuthenticationMiddleware(InlineHooks, auth_middleware.AuthenticationMiddleware):
    """Sets a lazy ``request.user``: nothing is read until a view asks."""


class SessionMiddleware(InlineHooks, session_middleware.SessionMiddleware):
    """The session is read lazily; it is saved, in a thread, only when a view changed it.

    A session that was only read (API authentication looks for one on every request) needs no
    thread: Django's hook then only sets ``Vary: Cookie`` or expires an emptied session's cookie.
    """

    async def __acall__(self, request):
        from django.conf import settings

        self.process_request(request)
        response = await self.get_response(request)
        session = request.session
        if session.accessed and (session.modified or settings.SESSION_SAVE_EVERY_REQUEST):
            return await sync_to_async(self.process_response, thread_sensitive=True)(request, response)
        return self.process_response(request, response)


class MessageMiddleware(InlineHooks, messages_middleware.MessageMiddleware):
    """The message storage is made when something first reads or adds a message (API requests
    never do), and stored messages, which may live in the session, are written back in a thread
    when there are any."""

    def process_request(self, request):
        request._messages = SimpleLazyObject(partial(messages_storage.default_storage, request))

    async def __acall__(self, request):
        self.process_request(request)
        response = await self.get_response(request)
        storage = request._messages
        if storage._wrapped is empty:  # nobody looked at the messages
            return response
        if storage.used or storage.added_new:
            return await sync_to_async(self.process_response, thread_sensitive=True)(request, response)
        return self.process_response(request, response)


class CsrfViewMiddleware(InlineHooks, csrf.CsrfViewMiddleware):
    """Under ASGI, checks the token in a thread (it may parse a form body) for views that are not
    exempt: the API's views are, so API requests never leave the event loop here."""

    def __init__(self, get_response):
        super().__init__(get_response)
        if self.async_mode:  # Django picks the hook up from the instance, as it finds it
            self.process_view = self._process_view_async

    async def _process_view_async(self, request, callback, callback_args, callback_kwargs):
        if getattr(callback, "csrf_exempt", False):
            return None
        check = super().process_view
        return await sync_to_async(check, thread_sensitive=True)(request, callback, callback_args, callback_kwargs)


class LoginLockoutMiddleware:
    """A login refused for a lockout (django-axes marks the request) answers 429, with the login
    page its form rendered, which says why and for how long (core.logins).

    Stands in for ``axes.middleware.AxesMiddleware``, which replaces that page with its own, and
    whose async path (8.3.1) passes the credentials where its lockout hook expects the response.
    """

    async_capable = True
    sync_capable = True

    def __init__(self, get_response) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request):
        if iscoroutinefunction(self):
            return self.__acall__(request)
        return self._locked_out(request, self.get_response(request))

    async def __acall__(self, request):
        return self._locked_out(request, await self.get_response(request))

    @staticmethod
    def _locked_out(request, response):
        if getattr(request, "axes_locked_out", False):
            response.status_code = 429
        return response


class CorsMiddleware:
    """CORS as AgentOS answers it (Starlette's ``CORSMiddleware`` with ``allow_credentials=True``
    and every method and header allowed), on API paths only: the chat and the admin are pages of
    this site alone.

    - A preflight (``OPTIONS`` with ``Access-Control-Request-Method``) is answered here: from an
      allowed origin ``200 OK``, echoing the requested headers; from any other ``400 Disallowed
      CORS origin``, as AgentOS does.
    - Any other response to a request with an ``Origin`` carries ``Access-Control-Allow-
      Credentials: true`` and ``Access-Control-Expose-Headers: *``, and, for an allowed origin,
      that origin in ``Access-Control-Allow-Origin`` (errors too, so a browser client reads them).

    Allowing credentials is harmless here: a login cookie authenticates an API request only from
    this site's own pages (core.api.authentication), so another origin's page reads only what its
    bearer token allows.

    Both capable, as every middleware here must be (tests/core/test_asgi.py): a sync-only one
    makes Django run it through ``sync_to_async(thread_sensitive=True)``, one shared thread, with
    the rest of the chain pushed back to the loop by ``async_to_sync``: every API request's view
    then waited its turn for that one thread (0.6M instructions a run, and PostgreSQL's first
    byte at 256 streams slower by a fifth to a half, bench/README.md).
    """

    async_capable = True
    sync_capable = True
    METHODS = "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT, QUERY"
    PREFLIGHT_VARY = "Origin, Access-Control-Request-Method, Access-Control-Request-Headers, Access-Control-Request-Private-Network"

    def __init__(self, get_response) -> None:
        self.get_response = get_response
        self.async_mode = iscoroutinefunction(get_response)
        if self.async_mode:
            markcoroutinefunction(self)

    def __call__(self, request):
        origin = request.headers.get("Origin")
        if origin is None or not is_api_path(request.path):
            return self.get_response(request)
        if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
            response = self._preflight(request, origin)
            return self._done(response) if self.async_mode else response
        if self.async_mode:
            return self._acall(request, origin)
        return self._simple(self.get_response(request), origin)

    async def _acall(self, request, origin: str):
        return self._simple(await self.get_response(request), origin)

    @staticmethod
    async def _done(response):
        return response

    @staticmethod
    def allowed(origin: str) -> bool:
        return origin in settings.CORS_ALLOWED_ORIGINS

    def _preflight(self, request, origin: str) -> HttpResponse:
        failures = []
        if not self.allowed(origin):
            failures.append("origin")
        if request.headers["Access-Control-Request-Method"] not in self.METHODS.split(", "):
            failures.append("method")
        if "Access-Control-Request-Private-Network" in request.headers:
            failures.append("private-network")  # Starlette's default, which AgentOS keeps
        text = "Disallowed CORS " + ", ".join(failures) if failures else "OK"
        response = HttpResponse(text, status=400 if failures else 200, content_type="text/plain; charset=utf-8")
        response["Vary"] = self.PREFLIGHT_VARY
        if "origin" not in failures:
            response["Access-Control-Allow-Origin"] = origin
        response["Access-Control-Allow-Methods"] = self.METHODS
        response["Access-Control-Max-Age"] = str(settings.CORS_PREFLIGHT_MAX_AGE)
        requested = request.headers.get("Access-Control-Request-Headers")
        if requested is not None:
            response["Access-Control-Allow-Headers"] = requested
        response["Access-Control-Allow-Credentials"] = "true"
        return response

    def _simple(self, response, origin: str):
        response["Access-Control-Allow-Credentials"] = "true"
        response["Access-Control-Expose-Headers"] = "*"
        if self.allowed(origin):
            response["Access-Control-Allow-Origin"] = origin
        vary = [part.strip() for part in response.get("Vary", "").split(",") if part.strip()]
        if "origin" not in {part.lower() for part in vary}:
            response["Vary"] = ", ".join([*vary, "Origin"])
        return response
