"""Families this release does not serve yet answer as AgentOS answers an unconfigured feature: 503."""
from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.urls import re_path
from django.views.decorators.csrf import csrf_exempt

# path prefix -> the name AgentOS's stub router uses in its message
UNAVAILABLE_FAMILIES = {
    "filesystem": "Filesystem",
}


def _unavailable(tag: str):
    @csrf_exempt
    def view(request: HttpRequest, rest: str = "") -> JsonResponse:
        return JsonResponse(
            {"detail": f"{tag} not available: this Agno Site release does not serve this feature yet."},
            status=503,
        )

    return view


urlpatterns = [
    re_path(rf"^{prefix}(?:/(?P<rest>.*))?$", _unavailable(tag), name=f"unavailable-{prefix}")
    for prefix, tag in UNAVAILABLE_FAMILIES.items()
]
