"""The project's URLs plus a plain (non-DRF, CSRF-protected) view at an API path, for tests of
what Django's CSRF middleware answers there whatever the project's own plain views do."""
from django.http import JsonResponse
from django.urls import path

from agno_site.urls import handler400, handler403, handler404, handler500, urlpatterns as project_urlpatterns  # noqa: F401


def plain_view(request) -> JsonResponse:
    return JsonResponse({"ok": True})


urlpatterns = [path("plain-api-view", plain_view), *project_urlpatterns]
