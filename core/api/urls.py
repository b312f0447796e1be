"""Discovery routes, the API docs, and the component families with nothing configured yet."""
from __future__ import annotations

from csp.decorators import csp_update
from django.conf import settings
from django.http import JsonResponse
from django.urls import include, path
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerSplitView

from . import discovery, service_accounts
from .docs import RedocView
from .routing import plain_api_view, route


REDOC_POLICY = csp_update({"style-src-elem": ["'self'", "'unsafe-inline'"], "worker-src": ["'self'", "blob:"]})


@plain_api_view("GET")
def empty_list(request, **kwargs) -> JsonResponse:
    return JsonResponse([], safe=False)


def not_found(detail: str, *methods: str):
    """What AgentOS answers on a route of a component it does not have, for the methods the route has."""

    @plain_api_view(*methods)
    def view(request, **kwargs) -> JsonResponse:
        return JsonResponse({"detail": detail}, status=404)

    return view


urlpatterns = [
    path("", discovery.landing, name="landing"),
    route("info", discovery.InfoView.as_view(), name="info"),
    route("config", discovery.ConfigView.as_view(), name="config"),
    # No workflows are configured yet: AgentOS then lists none and finds none.
    route("workflows", empty_list, name="workflows"),
    route("workflows/{workflow_id}", not_found("Workflow not found", "GET")),
    route("workflows/{workflow_id}/runs", not_found("Workflow not found", "GET", "POST")),
    route("workflows/{workflow_id}/runs/{run_id}", not_found("Workflow not found", "GET")),
    # cancel, continue, resume (POST)
    route("workflows/{workflow_id}/runs/{run_id}/{action}", not_found("Workflow not found", "POST")),
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
