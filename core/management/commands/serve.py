"""Serve the ASGI app on AGENT_OS_HOST:AGENT_OS_PORT (what `make run` uses)."""
from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Serve the whole product (HTTP, SSE, WebSockets) with uvicorn on AGENT_OS_HOST:AGENT_OS_PORT."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--host", default=None, help="default: AGENT_OS_HOST")
        parser.add_argument("--port", type=int, default=None, help="default: AGENT_OS_PORT")

    def handle(self, *args, host: str | None, port: int | None, **options) -> None:
        import uvicorn

        host = host or settings.AGENT_OS_HOST
        port = port or settings.AGENT_OS_PORT
        self.stdout.write(f"Agno Site on http://{host}:{port}/")
        # proxy_headers off: uvicorn would otherwise take the client address from X-Forwarded-For
        # for connections from 127.0.0.1; core.addresses decides that, by TRUSTED_PROXIES.
        uvicorn.run("agno_site.asgi:application", host=host, port=port, log_level="info", lifespan="on", proxy_headers=False)
