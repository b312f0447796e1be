"""The Redoc page, with every asset served by the project (offline sites, a strict CSP).

Redoc's bundle shows a logo in its sidebar's "API docs by Redocly" credit, an image it always
loads from ``cdn.redoc.ly``; no option turns it off. The page's script is the sidecar's bundle
with that one address pointed at a file of ours, served from ``/redoc?script`` (as the Swagger
page's script comes from ``/docs?script``), so the page loads nothing from another origin.
"""
from __future__ import annotations

from functools import lru_cache
from hashlib import sha256
from pathlib import Path

from django.http import HttpResponse
from django.templatetags.static import static
from django.utils.http import quote_etag
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularRedocView

REDOC_CDN_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"


def _sidecar_bundle() -> Path:
    import drf_spectacular_sidecar

    return Path(drf_spectacular_sidecar.__file__).parent / "static/drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js"


@lru_cache(maxsize=4)
def redoc_bundle(logo_url: str) -> tuple[bytes, str]:
    """The bundle with its CDN logo replaced by ``logo_url``, and its ETag."""
    script = _sidecar_bundle().read_text(encoding="utf-8").replace(REDOC_CDN_LOGO, logo_url)
    body = script.encode("utf-8")
    return body, quote_etag(sha256(body).hexdigest()[:32])


class RedocView(SpectacularRedocView):
    template_name = "drf_spectacular/redoc.html"

    @extend_schema(exclude=True)
    def get(self, request, *args, **kwargs):
        if "script" in request.GET:
            body, etag = redoc_bundle(static("core/docs/redoc-logo.svg"))
            if request.headers.get("If-None-Match") == etag:
                response = HttpResponse(status=304)
            else:
                response = HttpResponse(body, content_type="application/javascript; charset=utf-8")
            response["ETag"] = etag
            response["Cache-Control"] = "public, max-age=86400"
            return response
        return super().get(request, *args, **kwargs)

    def _redoc_standalone(self) -> str:
        return f"{self.request.path}?script"
