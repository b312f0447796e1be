"""drf-spectacular extensions: how our authentication classes appear in the OpenAPI document, and
the generator that keeps AgentOS's operation ids."""
from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.generators import SchemaGenerator


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


# What any authenticated operation may answer besides its own responses.
_COMMON_ERRORS = {
    "401": "No credentials, or credentials that were refused",
    "403": "The credentials lack the scope this operation needs (or a CSRF token, for a browser)",
    "422": "A query, path or body value was invalid",
    "429": "Too many requests; retry after the Retry-After header's seconds",
}
# What any operation with a body may answer besides (core.api.errors.bad_request).
_BODY_ERRORS = {
    "400": "More form fields than DATA_UPLOAD_MAX_NUMBER_FIELDS",
    "413": "A body larger than DATA_UPLOAD_MAX_MEMORY_SIZE (uploaded files apart)",
}
_PUBLIC = {("/info", "get")}


def declare_common_errors(result, generator, request, public):
    """Every operation documents the errors every operation can give (auth, scopes, limits)."""
    error_ref = {"$ref": "#/components/schemas/ErrorOut"}
    validation_ref = {"$ref": "#/components/schemas/ValidationErrorOut"}
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas.setdefault("ErrorOut", {"type": "object", "properties": {"detail": {"type": "string"}}, "required": ["detail"]})
    schemas.setdefault("ValidationErrorOut", {"type": "object", "properties": {"detail": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "object"}}]}}, "required": ["detail"]})
    for path, item in result.get("paths", {}).items():
        for method, operation in item.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            responses = operation.setdefault("responses", {})
            if (path, method) in _PUBLIC and {} not in operation.get("security", [{}]):
                operation["security"].append({})  # credentials are optional: none is also accepted
            errors = {**_COMMON_ERRORS, **(_BODY_ERRORS if "requestBody" in operation else {})}
            for status, description in errors.items():
                if (path, method) in _PUBLIC and status in ("401", "403"):
                    continue
                if status not in responses:
                    schema = validation_ref if status == "422" else error_ref
                    responses[status] = {"description": description, "content": {"application/json": {"schema": schema}}}
    return result


def overlapping_alternatives(result, generator, request, public):
    """Response shapes chosen by a query parameter (session detail by ``type``) share their
    optional fields, so one body can match several: document them as anyOf, not oneOf."""
    for schema in result.get("components", {}).get("schemas", {}).values():
        alternatives = schema.get("oneOf")
        if alternatives and "discriminator" not in schema and all("$ref" in item for item in alternatives):
            schema["anyOf"] = schema.pop("oneOf")
    return result


def declare_health(result, generator, request, public):
    """``GET /health`` is a plain Django view (the cheapest request the site answers, for load
    balancers), which the generator does not see: document it as AgentOS does."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["HealthResponse"] = {
        "type": "object",
        "properties": {
            "status": {"type": "string", "description": "Always ok while the process serves requests"},
            "instantiated_at": {"type": "string", "format": "date-time", "description": "When this process started"},
        },
        "required": ["status", "instantiated_at"],
    }
    result.setdefault("paths", {})["/health"] = {"get": {
        "operationId": "health_check",
        "summary": "Health Check",
        "description": "Whether this process serves requests. Public in every auth mode; touches no database.",
        "tags": ["Health"],
        "security": [{}],
        "responses": {"200": {
            "description": "API is healthy and operational",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/HealthResponse"}}},
        }},
    }}
    return result



# Operation ids AgentOS's own document gives to two operations (GET /config and GET
# /components/{id}/configs/{version} are both "get_config"). drf-spectacular numbers the second
# ("get_config_2") after every postprocessing hook has run; code generated from AgentOS's
# document calls it by AgentOS's id, so the generator gives it back.
_AGENTOS_SHARED_IDS = {"get_config"}


class AgentOSSchemaGenerator(SchemaGenerator):
    def get_schema(self, request=None, public=False):
        result = super().get_schema(request, public)
        for item in result.get("paths", {}).values():
            for operation in item.values():
                base, _, number = operation.get("operationId", "").rpartition("_")
                if base in _AGENTOS_SHARED_IDS and number.isdigit():
                    operation["operationId"] = base
        return result
