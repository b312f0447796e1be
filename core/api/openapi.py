"""drf-spectacular extensions: how our authentication classes appear in the OpenAPI document."""
from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class BearerScheme(OpenApiAuthenticationExtension):
    target_class = "core.api.authentication.BearerAuthentication"
    name = "bearer"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A JWT from the configured identity provider, an agno_pat_ access token, or OS_SECURITY_KEY.",
        }


class BrowserSessionScheme(OpenApiAuthenticationExtension):
    target_class = "core.api.authentication.BrowserSessionAuthentication"
    name = "browserSession"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "cookie", "name": "sessionid", "description": "A logged-in browser (chat UI); writes need the CSRF token."}


def strip_optional_slashes(result, generator, request, public):
    """Routes accept an optional trailing slash (``/?$``); document them the AgentOS way, without."""
    result["paths"] = {
        (path.rstrip("/") or "/"): item for path, item in result.get("paths", {}).items()
    }
    return result
