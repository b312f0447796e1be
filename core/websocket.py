"""The WebSocket handshake's origin check.

A browser always sends ``Origin``; a page on another site must not open a socket that rides on
the user's login cookie (cross-site WebSocket hijacking), so a handshake with an ``Origin`` is
accepted only from this site's hosts (``ALLOWED_HOSTS``) or the configured CORS origins (not
AgentOS's defaults: ``http://localhost:3000`` is the same site as a local server, so the login
cookie would go with it). API clients send
no ``Origin`` and authenticate with a bearer token, so they are let through to do that. Settings
are read per handshake (Channels' ``AllowedHostsOriginValidator`` freezes them at import, and
refuses every client without an ``Origin``).
"""
from __future__ import annotations

from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import validate_host


def origin_allowed(origin: bytes | None) -> bool:
    if origin is None:
        return True
    text = origin.decode("latin-1").strip()
    if text in settings.CORS_CONFIGURED_ORIGINS:
        return True
    try:
        parts = urlsplit(text)
        host = parts.hostname
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not host:
        return False
    return validate_host(f"[{host}]" if ":" in host else host, settings.ALLOWED_HOSTS)


class OriginCheck:
    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and not origin_allowed(dict(scope.get("headers", [])).get(b"origin")):
            return await WebsocketDenier()(scope, receive, send)
        return await self.app(scope, receive, send)
