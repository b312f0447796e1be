"""WSGI entry point (no streaming or WebSockets; prefer the ASGI app)."""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agno_site.settings.local")
application = get_wsgi_application()
