from django.contrib import admin
from django.urls import include, path, re_path

from core import views as core_views
from core.api.errors import HTML_PATH_PREFIXES, unknown_route
from core.api.routing import route

handler400 = "core.api.errors.bad_request"
handler403 = "core.api.errors.permission_denied"
handler404 = "core.api.errors.not_found"
handler500 = "core.api.errors.server_error"

urlpatterns = [
    path("admin/", include("chat.console.urls")),
    path("admin/", admin.site.urls),
    path("chat/", include("chat.urls")),
    route("health", core_views.health, name="health"),
    route("ready", core_views.ready, name="ready"),
    path("favicon.ico", core_views.favicon, name="favicon"),
    path("", include("agents.api.urls")),
    path("", include("sessions.api.urls")),
    path("", include("learnings.api.urls")),
    path("", include("approvals.api.urls")),
    path("", include("metrics.api.urls")),
    path("", include("traces.api.urls")),
    path("", include("scheduler.api.urls")),
    path("", include("knowledge.api.urls")),
    path("", include("evals.api.urls")),
    path("", include("core.api.urls")),
    # Last: an unknown API path is AgentOS's JSON 404 with DEBUG on too (core.api.errors).
    re_path(r"^(?!%s)(?P<path>.*)$" % "|".join(prefix.lstrip("/") for prefix in HTML_PATH_PREFIXES), unknown_route),
]
