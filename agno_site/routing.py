"""WebSocket routes (Channels). The ASGI app wraps them in the allowed-hosts origin check and
Django's session auth, so a browser's login works and other sites' pages cannot connect."""
from __future__ import annotations

from django.urls import path

from agents.consumers import RunSocket, WorkflowSocket

websocket_urlpatterns = [
    path("ws/runs", RunSocket.as_asgi()),
    path("workflows/ws", WorkflowSocket.as_asgi()),  # AgentOS's workflow socket
]
