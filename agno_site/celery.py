"""The Celery app: ``celery -A agno_site worker`` and ``celery -A agno_site beat``."""
from __future__ import annotations

import os

from celery import Celery
from celery.signals import task_postrun, task_prerun, worker_init, worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agno_site.settings.local")

app = Celery("agno_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@task_prerun.connect
@task_postrun.connect
def _connections_fresh_around_tasks(task=None, **_: object) -> None:
    """Around every task, as Django does around every request: a connection that failed (the
    database restarted, the session was terminated) or outlived its age is dropped, so the next
    task opens a good one. Celery's own fixup does this only every 2 × CELERY_DB_REUSE_MAX tasks,
    and a worker's periodic tasks then failed on the broken connection until it was restarted.
    A pooled connection goes back to the pool (which checks it before lending it again)."""
    if task is not None and getattr(task.request, "is_eager", False):
        return  # run in the caller's thread, maybe inside its transaction: its connection is the caller's
    from django.db import close_old_connections

    close_old_connections()


@worker_init.connect
@worker_process_init.connect
def _collector_for_serving(**_: object) -> None:
    """A worker (any pool), and each process of a prefork pool once started, collects as the
    servers do (core.collector)."""
    from core.collector import collector_tune

    collector_tune()
