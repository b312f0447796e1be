"""WSGI entry point (no streaming or WebSockets; prefer the ASGI app)."""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agno_site.settings.local")
application = get_wsgi_application()

from jobs.worker import serve_jobs  # noqa: E402

serve_jobs()  # a server process: its embedded worker may claim jobs (see agno_site/asgi.py)
