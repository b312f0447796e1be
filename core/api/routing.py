"""URL helpers: AgentOS tolerates a trailing slash on every route without redirecting; the few
API views that are plain Django views answer like the DRF ones."""
from __future__ import annotations

import functools
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import re_path
from django.urls.resolvers import URLPattern
from django.views.decorators.csrf import csrf_exempt

_PARAM = r"(?P<{name}>[^/]+)"


def route(pattern: str, view, name: str | None = None) -> URLPattern:
    """``route("sessions/{session_id}/runs", view)`` matches with or without a trailing slash."""
    regex = pattern
    while "{" in regex:
        start = regex.index("{")
        end = regex.index("}", start)
        regex = regex[:start] + _PARAM.format(name=regex[start + 1 : end]) + regex[end + 1 :]
    return re_path(rf"^{regex}/?$", view, name=name)


def plain_api_view(*methods: str) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """For an API view that is a plain Django view (``/health``, ``/``, the families not built
    yet), not a DRF one: what DRF's ``as_view`` gives the others.

    - CSRF-exempt. Django's CSRF middleware otherwise refuses any POST without a CSRF cookie
      with its HTML page; DRF's views are exempt and enforce CSRF themselves for the browser
      session. A view wrapped here must not act on the browser session.
    - Methods it does not serve are a JSON 405, as AgentOS (FastAPI) answers them. GET allows HEAD.
    """
    allowed = {method.upper() for method in methods}
    if "GET" in allowed:
        allowed.add("HEAD")

    def wrap(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @csrf_exempt
        @functools.wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if request.method not in allowed:
                return JsonResponse({"detail": "Method Not Allowed"}, status=405, headers={"Allow": ", ".join(sorted(allowed))})
            return view(request, *args, **kwargs)

        return wrapped

    return wrap
