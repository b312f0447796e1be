"""The base of the session and memory views: AgentOSView plus what these routes need on top."""
from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from rest_framework.request import Request

from core.api.views import AgentOSView

from .inputs import refuse_null_characters


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
    """Every /sessions and /memories view: documented bodies, and no NUL reaching the database."""

    schema = BodySchema()

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        refuse_null_characters(request.query_params, kwargs)
