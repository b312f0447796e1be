"""The browser chat UI: login, logout and the chat page.

The page itself is a shell: the browser talks to the same AgentOS REST API as any client,
authenticated by the Django session (``core.api.views.BrowserSessionAuthentication``) and bound
to the logged-in user's own data.
"""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET

from core.logins import LoginForm
from sessions.selectors import session_get


class LoginView(auth_views.LoginView):
    template_name = "chat/login.html"
    authentication_form = LoginForm
    redirect_authenticated_user = True
    extra_context = {"site_name": settings.AGENT_OS_NAME}


class LogoutView(auth_views.LogoutView):
    """POST only (Django's default since 5.0): a link cannot log anyone out."""


def _max_file_bytes() -> int:
    """What one document may weigh: past the request bound it is a 413, past the knowledge bound
    it is stored failed; the page names the smaller in its messages."""
    return min(settings.UPLOAD_MAX_FILE_BYTES, settings.KNOWLEDGE_MAX_CONTENT_BYTES)


def _page(request: HttpRequest, *, session_id: str | None, status: int = 200) -> HttpResponse:
    config = {
        "user": request.user.get_username(),
        "sessionId": session_id,
        "chatUrl": "/chat/",
        "sessionUrl": "/chat/s/",
        "loginUrl": settings.LOGIN_URL,
        "documentsUrl": "/chat/documents/",
        "maxFileBytes": _max_file_bytes(),
    }
    context = {"config": config, "site_name": settings.AGENT_OS_NAME, "not_found": status == 404}
    return render(request, "chat/index.html", context, status=status)


@require_GET
@login_required
@ensure_csrf_cookie
def chat_home(request: HttpRequest) -> HttpResponse:
    return _page(request, session_id=None)


@require_GET
@login_required
@ensure_csrf_cookie
def chat_session(request: HttpRequest, session_id: str) -> HttpResponse:
    # Another user's session and a missing one look the same: a 404 that names neither.
    if session_get(user=request.user.get_username(), session_id=session_id) is None:
        return _page(request, session_id=None, status=404)
    return _page(request, session_id=session_id)


@require_GET
@login_required
@ensure_csrf_cookie
def chat_memories(request: HttpRequest) -> HttpResponse:
    """My memories: what the agents remember about the signed-in user (through the /memories API)."""
    config = {"user": request.user.get_username(), "chatUrl": "/chat/", "loginUrl": settings.LOGIN_URL}
    return render(request, "chat/memories.html", {"config": config, "site_name": settings.AGENT_OS_NAME})


@require_GET
@login_required
@ensure_csrf_cookie
def chat_documents(request: HttpRequest) -> HttpResponse:
    """My documents: the signed-in user's knowledge contents (through the /knowledge API): add
    files, web pages and notes, follow their ingestion, refresh, delete and search them."""
    config = {
        "user": request.user.get_username(),
        "chatUrl": "/chat/",
        "sessionUrl": "/chat/s/",
        "loginUrl": settings.LOGIN_URL,
        "maxFileBytes": _max_file_bytes(),
    }
    return render(request, "chat/documents.html", {"config": config, "site_name": settings.AGENT_OS_NAME})


@require_GET
@login_required
@ensure_csrf_cookie
def chat_approvals(request: HttpRequest) -> HttpResponse:
    """My approvals: the signed-in user's runs that wait for (or got) an operator's decision,
    through the /approvals API, which shows a browser user only their own."""
    config = {"user": request.user.get_username(), "chatUrl": "/chat/", "sessionUrl": "/chat/s/", "loginUrl": settings.LOGIN_URL}
    return render(request, "chat/approvals.html", {"config": config, "site_name": settings.AGENT_OS_NAME})
