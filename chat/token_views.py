"""Access tokens (``/chat/tokens/``): the signed-in user's own personal access tokens and service
accounts, to see and revoke.

Revoking is core.services.tokens.access_token_revoke, as the admin's and the API's: the token
fails at once on the API, and what fires with it stops (the schedules created with it are
disabled, saying why). Another user's token is refused like a missing one.
"""
from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from core.models import AccessToken
from core.services.tokens import access_token_revoke
from core.tenancy import scope_queryset

TOKEN_MISSING = "That token is not one of yours, or it no longer exists."


@require_http_methods(["GET", "POST"])
@login_required
def chat_tokens(request: HttpRequest) -> HttpResponse:
    user = request.user.get_username()
    if request.method == "POST":
        return _revoke(request, user)
    tokens = scope_queryset(AccessToken.objects, user).order_by("revoked_at", "-created_at")
    now = timezone.now()
    rows = [{"token": token, "state": _state(token, now)} for token in tokens]
    return render(request, "chat/tokens.html", {"site_name": settings.AGENT_OS_NAME, "rows": rows})


def _state(token: AccessToken, now) -> str:
    if token.revoked_at is not None:
        return "revoked"
    if token.expires_at is not None and token.expires_at <= now:
        return "expired"
    return "active"


def _revoke(request: HttpRequest, user: str) -> HttpResponse:
    raw = request.POST.get("token_id", "")
    token = scope_queryset(AccessToken.objects, user).filter(pk=int(raw)).first() if raw.isdigit() and len(raw) <= 18 else None
    if token is None:
        messages.error(request, TOKEN_MISSING)
    elif token.revoked_at is not None:
        messages.info(request, f"“{token.name}” was already revoked.")
    else:
        access_token_revoke(token_id=token.pk, user=user)
        messages.success(request, f"Revoked “{token.name}”: it no longer works, and schedules created with it are disabled.")
    return redirect("chat:tokens")
