"""The Celery app: ``celery -A agno_site worker`` and ``celery -A agno_site beat``."""
from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agno_site.settings.local")

app = Celery("agno_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
