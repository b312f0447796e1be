"""Discovery endpoints every deployment answers without credentials."""
from __future__ import annotations

from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.cache import patch_cache_control

from core.api.routing import plain_api_view

# AgentOS reports when its health router was built: the process start, constant for its lifetime.
INSTANTIATED_AT = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@plain_api_view("GET")
def health(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok", "instantiated_at": INSTANTIATED_AT})


@plain_api_view("GET")
def ready(request: HttpRequest) -> JsonResponse:
    """Readiness for load balancers (not AgentOS's: it has only /health): 200 with each check's
    outcome when this process can work, else 503 naming the failing check (core.services.readiness)."""
    from core.services.readiness import readiness_report

    report = readiness_report()
    body = {"status": "ready" if report["ready"] else "not_ready", "checks": report["checks"]}
    if report["ready"]:
        response = JsonResponse(body)
    else:
        first = report["failing"][0]
        body.update(detail=f"Not ready: {first}: {report['checks'][first]['detail']}", error_code="not_ready")
        response = JsonResponse(body, status=503)
    patch_cache_control(response, no_store=True)
    return response


@lru_cache(maxsize=1)
def _favicon() -> bytes:
    from django.contrib.staticfiles import finders

    return Path(finders.find("chat/favicon.svg")).read_bytes()


def favicon(request: HttpRequest) -> HttpResponse:
    """``/favicon.ico``, which browsers ask for on pages that name no icon (JSON responses, the
    API docs' Try it out): the site's icon, an SVG (every current browser takes one here)."""
    response = HttpResponse(_favicon(), content_type="image/svg+xml")
    patch_cache_control(response, public=True, max_age=86400)
    return response
