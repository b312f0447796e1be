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
        uvicorn.run(
            "agno_site.asgi:application", host=host, port=port, log_level="info", lifespan="on",
            # proxy_headers off: uvicorn would otherwise take the client address from
            # X-Forwarded-For for connections from 127.0.0.1; core.addresses decides that, by
            # TRUSTED_PROXIES.
            proxy_headers=False,
            # uvicorn's httptools protocol buffers a request's headers without any bound (a 64 MB
            # header grew the process by 160 MB); h11 refuses a request line and headers larger
            # than this with a 400 and closes the connection.
            http="h11", h11_max_incomplete_event_size=settings.HTTP_MAX_HEADER_BYTES,
        )
