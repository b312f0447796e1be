"""ASGI entry point: HTTP (with streaming) through Django, WebSockets through Channels,
and the lifespan that runs the embedded background worker."""
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agno_site.settings.local")

from core.asgi import get_asgi_application  # noqa: E402  (Django's, keeping request threads)

# Django must be set up before anything imports models (consumers do).
django_asgi_app = get_asgi_application()

from jobs.worker import serve_jobs  # noqa: E402

# A process that loads the server's application serves: without a broker its embedded worker may
# claim jobs (started by the lifespan, or on the first job with the lifespan off). Management
# commands and scripts never load it, and never claim a job.
serve_jobs()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from agno_site.lifespan import LifespanApp  # noqa: E402
from agno_site.routing import websocket_urlpatterns  # noqa: E402
from core.websocket import OriginCheck  # noqa: E402
from mcp_server.asgi import with_mcp  # noqa: E402

router = ProtocolTypeRouter(
    {
        # /mcp: the platform as an MCP server (mcp_server.asgi); everything else through Django.
        "http": with_mcp(django_asgi_app),
        "websocket": OriginCheck(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
# The lifespan wrapper starts the embedded background worker when there is no broker.
application = LifespanApp(router)

from core.collector import collector_tune  # noqa: E402

collector_tune()  # everything above lives as long as the server (core.collector)
