"""The page a share link opens: ``/chat/shared/<token>/``, for anyone who holds the link.

It shows only the snapshot the owner shared (chat.shares): no sign-in, no controls, nothing
else of the owner's (not even their name). A revoked link and one that never existed are the
same 404. Never cached, so a revoked link stops working at once.
"""
from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from .shares import shared_by_token

SHARE_MISSING = "This conversation isn't shared, or its owner stopped sharing it."


@require_safe
@never_cache
def chat_shared(request: HttpRequest, token: str) -> HttpResponse:
    share = shared_by_token(token)
    context = {"site_name": settings.AGENT_OS_NAME, "missing": share is None, "missing_text": SHARE_MISSING}
    if share is not None:
        context.update(title=share.title, shared_at=share.shared_at, snapshot={"messages": share.messages})
    response = render(request, "chat/shared.html", context, status=404 if share is None else 200)
    response["X-Robots-Tag"] = "noindex, nofollow"
    return response
