"""Celery task names outlive the modules that define them: a drain or reap message sent by an older
release (when the tasks lived in ``agents.tasks``) is still taken after an upgrade."""
from __future__ import annotations

from django.conf import settings

from agno_site.celery import app


def test_the_queue_tasks_keep_their_names_and_beat_finds_every_scheduled_task():
    app.loader.import_default_modules()  # what a worker imports at start (autodiscovery)
    assert app.tasks["agno_site.drain_queue"].__module__ == "jobs.tasks"
    assert app.tasks["agno_site.reap_jobs"].__module__ == "jobs.tasks"
    assert {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()} <= set(app.tasks)
