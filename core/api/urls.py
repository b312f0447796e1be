"""Discovery routes, service accounts and the API docs (the component families are their apps')."""
from __future__ import annotations

from csp.decorators import csp_update
from django.conf import settings
from django.urls import include, path
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerSplitView

from . import databases, discovery, service_accounts
from .docs import RedocView
from .routing import route


REDOC_POLICY = csp_update({"style-src-elem": ["'self'", "'unsafe-inline'"], "worker-src": ["'self'", "blob:"]})


urlpatterns = [
    path("", discovery.landing, name="landing"),
    route("info", discovery.InfoView.as_view(), name="info"),
    route("config", discovery.ConfigView.as_view(), name="config"),
    # "all" before the {db_id} route, as AgentOS orders them.
    route("databases/all/migrate", databases.MigrateAllView.as_view(), name="migrate-all-databases"),
    route("databases/{db_id}/migrate", databases.MigrateDatabaseView.as_view(), name="migrate-database"),
    route("service-accounts", service_accounts.ServiceAccountsView.as_view(), name="service-accounts"),
    route("service-accounts/{service_account_id}", service_accounts.ServiceAccountDetailView.as_view(), name="service-account"),
    path("", include("core.api.unavailable")),
]

if settings.DOCS_ENABLED:
    urlpatterns += [
        route("openapi.json", SpectacularJSONAPIView.as_view(), name="openapi"),
        # The split view serves Swagger UI's start-up script from /docs?script, so the page has
        # no inline script for the Content Security Policy to refuse.
        route("docs", SpectacularSwaggerSplitView.as_view(url_name="openapi"), name="docs"),
        # Redoc writes its styles into <style> elements at run time (styled-components, and CSS
        # bundled in its script) without a nonce, and runs its search in a worker made from a
        # blob: URL. Only this page, which shows nothing but our own schema, allows those two;
        # its scripts are still 'self' only. Its script comes from /redoc?script (core/api/docs.py).
        route("redoc", REDOC_POLICY(RedocView.as_view(url_name="openapi")), name="redoc"),
    ]
