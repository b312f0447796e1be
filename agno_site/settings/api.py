"""The API's framework settings: DRF, the OpenAPI document and its docs pages, and the bounds
of what a parser reads."""
from __future__ import annotations

from . import envtools as env
from .environment import AGENT_OS_NAME

DOCS_ENABLED = env.boolean("DOCS_ENABLED", True)
# Bounds on what a client sends (README: Security). Over them: 413 for size, 400 for too many
# fields, 422 for nesting; always JSON on API paths (core.api.errors). The depth bound stays far
# below the interpreter's recursion limit, which everything that walks a JSON value shares.
# (DATA_UPLOAD_MAX_MEMORY_SIZE is set with the run form's bounds, in security.py.)
DATA_UPLOAD_MAX_NUMBER_FIELDS = env.integer("DATA_UPLOAD_MAX_NUMBER_FIELDS", 1000, minimum=10)
JSON_MAX_DEPTH = env.integer("JSON_MAX_DEPTH", 64, minimum=2, maximum=200)
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # Any DRF view, ours or a library's, reads JSON through the bounded parser (core.api.parsers).
    "DEFAULT_PARSER_CLASSES": ["core.api.parsers.StrictJSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    "EXCEPTION_HANDLER": "core.api.errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "DEFAULT_GENERATOR_CLASS": "core.api.openapi.AgentOSSchemaGenerator",
    # The document and the docs pages are public in every auth mode, as in AgentOS.
    "SERVE_AUTHENTICATION": [],
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "TITLE": AGENT_OS_NAME,
    "DESCRIPTION": "AgentOS-compatible API served by Agno Site.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI and Redoc from our own static files (drf-spectacular-sidecar), never a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Swagger UI's default validator badge is an image from validator.swagger.io.
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    "COMPONENT_SPLIT_REQUEST": True,
    # AgentOS's name for the run statuses (several serializers' "status" and "run_status" fields).
    "ENUM_NAME_OVERRIDES": {
        "RunStatus": "sessions.api.serializers.common.RUN_STATUSES",
        "ContentStatus": "knowledge.api.serializers.CONTENT_STATUSES",
    },
    # The open (no-credentials) authenticator is not a security scheme; leave it out.
    "AUTHENTICATION_WHITELIST": [
        "core.api.authentication.BearerAuthentication",
        "core.api.authentication.BrowserSessionAuthentication",
    ],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "core.api.openapi.strip_optional_slashes",
        "core.api.openapi.declare_common_errors",
        "core.api.openapi.overlapping_alternatives",
        "core.api.openapi.declare_health",
        # Last: every operation's summary and description, from core/api/operations/.
        "core.api.operations.document_operations",
        "core.api.operations.form_examples",
    ],
}
