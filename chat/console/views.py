"""Operator console pages inside the Django admin: the dashboard, one user's data, the workflows."""
from __future__ import annotations

from datetime import timedelta

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from jobs.services.jobs import QueueFull
from core.services.userdata import userdata_counts, userdata_erase, userdata_export_chunks
from core.tenancy import ALL_USERS, owned_models
from metrics.selectors import last_refreshed_at, refresh_status, usage_series
from metrics.services import RefreshAlreadyRunning, RefreshScope, metrics_refresh_enqueue, metrics_timezone

from .selectors import DEFAULT_PERIOD, PERIODS, dashboard_data
from .workflows import workflow_trees


def _context(request: HttpRequest, title: str, **extra) -> dict:
    return {**admin.site.each_context(request), "title": title, **extra}


@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    try:
        days = int(request.GET.get("days", DEFAULT_PERIOD))
    except ValueError:
        days = DEFAULT_PERIOD
    data = dashboard_data(days=days)
    # The metrics tables, cut into days in METRICS_TIMEZONE: every user's rows (ALL_USERS: an
    # operator's page; the admin login already required staff).
    tz = metrics_timezone()
    usage_start = timezone.now().astimezone(tz).date() - timedelta(days=data.days - 1)
    usage = usage_series(user=ALL_USERS, start=usage_start, days=data.days)
    everyone = RefreshScope.of(ALL_USERS)
    return render(request, "admin/console/dashboard.html", _context(
        request, "Dashboard", dashboard=data, chart_data={**data.chart_data(), "usage": usage.chart_data()}, periods=PERIODS,
        usage=usage, usage_start=usage_start, metrics_tz=tz.key, refresh=refresh_status(scope=everyone),
        refreshed_at=last_refreshed_at(scope=everyone),
    ))


@require_POST
def metrics_refresh(request: HttpRequest) -> HttpResponse:
    """Recompute every user's metrics rows in the background (the days whose runs changed)."""
    try:
        metrics_refresh_enqueue(scope=RefreshScope.of(ALL_USERS))
    except RefreshAlreadyRunning:
        messages.info(request, "A metrics refresh is already running.")
    except QueueFull as exc:
        messages.error(request, f"The metrics refresh was not started: {exc}.")
    else:
        messages.success(request, "Metrics refresh started in the background; its progress shows below.")
    return redirect(f"{reverse('console-dashboard')}?{urlencode({'days': request.POST.get('days', DEFAULT_PERIOD)})}")


@require_GET
def metrics_refresh_status(request: HttpRequest) -> JsonResponse:
    """The refresh of every user's rows, for the dashboard to follow while it runs: its status,
    its job's progress, when it started and finished, and why it failed."""
    status = refresh_status(scope=RefreshScope.of(ALL_USERS))
    return JsonResponse({
        "status": status.status, "progress": status.progress, "error": status.error,
        "started_at": status.started_at.isoformat() if status.started_at else None,
        "finished_at": status.finished_at.isoformat() if status.finished_at else None,
    })


@require_GET
def workflows(request: HttpRequest) -> HttpResponse:
    """The code workflows with their step trees (read-only: they are edited in code)."""
    return render(request, "admin/console/workflows.html", _context(request, "Workflows", workflows=workflow_trees()))


def _require(request: HttpRequest, action: str) -> None:
    """Exporting needs view permission on every owned table; erasing needs delete permission."""
    perms = [f"{model._meta.app_label}.{action}_{model._meta.model_name}" for model in owned_models()]
    if not request.user.has_perms(perms):
        raise PermissionDenied


def _user_id(request: HttpRequest) -> str:
    return (request.GET.get("user_id") or request.POST.get("user_id") or "").strip()


@require_GET
def userdata(request: HttpRequest) -> HttpResponse:
    _require(request, "view")
    user_id = _user_id(request)
    counts = userdata_counts(user_id=user_id) if user_id else None
    return render(request, "admin/console/userdata.html", _context(
        request, "User data", user_id=user_id, counts=counts, total=sum(counts.values()) if counts else 0,
    ))


@require_GET
def userdata_export(request: HttpRequest) -> HttpResponse:
    _require(request, "view")
    user_id = _user_id(request)
    if not user_id:
        return redirect("console-userdata")
    # Joined, not streamed: under ASGI Django would buffer a sync iterator anyway (and warn).
    response = HttpResponse("".join(userdata_export_chunks(user_id=user_id)), content_type="application/json")
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in user_id)[:80] or "user"
    response["Content-Disposition"] = f'attachment; filename="userdata-{safe}.json"'
    response["Cache-Control"] = "no-store"
    return response


@require_http_methods(["GET", "POST"])
def userdata_erase_view(request: HttpRequest) -> HttpResponse:
    _require(request, "delete")
    user_id = _user_id(request)
    if not user_id:
        return redirect("console-userdata")
    page = f"{reverse('console-userdata')}?{urlencode({'user_id': user_id})}"
    if request.method == "POST":
        # The operator types the user id again: a misclick cannot erase an account.
        if request.POST.get("confirm", "").strip() != user_id:
            messages.error(request, "The confirmation did not match the user id; nothing was erased.")
        else:
            erasure = userdata_erase(user_id=user_id, delete_account=request.POST.get("delete_account") == "on")
            account = " Their login account was deleted too." if erasure.account_deleted else ""
            named = sum(erasure.anonymised.values())
            elsewhere = f" {named} other rows that named them no longer do." if named else ""
            messages.success(request, f"Erased {erasure.total} rows belonging to {user_id}.{elsewhere}{account}")
            return redirect(page)
    counts = userdata_counts(user_id=user_id)
    has_account = get_user_model().objects.filter(**{get_user_model().USERNAME_FIELD: user_id}).exists()
    return render(request, "admin/console/userdata_erase.html", _context(
        request, "Erase user data", user_id=user_id, counts=counts, total=sum(counts.values()), has_account=has_account,
        back_url=page,
    ))
