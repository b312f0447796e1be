"""The base of the session and memory views: AgentOSView plus what these routes need on top."""
from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from core.api.views import AgentOSView


class BodySchema(AutoSchema):
    """OpenAPI generation that documents what these routes really take.

    AgentOS reads JSON bodies on DELETE (/sessions, /memories), which drf-spectacular leaves out
    by default, and PATCH /memories/{id} takes a whole memory, not a partial one.
    """

    def _get_request_body(self, direction: str = "request") -> Any:
        method = self.method
        if method in ("DELETE", "PATCH"):
            self.method = "PUT"
        try:
            return super()._get_request_body(direction)
        finally:
            self.method = method


class SessionsAPIView(AgentOSView):
    """Every /sessions view (scope family "sessions"): documented bodies."""

    schema = BodySchema()
    scope_family = "sessions"


class MemoriesAPIView(SessionsAPIView):
    scope_family = "memories"
