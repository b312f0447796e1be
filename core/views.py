"""Discovery endpoints every deployment answers without credentials."""
from __future__ import annotations

from datetime import datetime, timezone

from django.http import HttpRequest, JsonResponse

from core.api.routing import plain_api_view

# AgentOS reports when its health router was built: the process start, constant for its lifetime.
INSTANTIATED_AT = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@plain_api_view("GET")
def health(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok", "instantiated_at": INSTANTIATED_AT})
