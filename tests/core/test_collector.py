"""The server and the workers set Python's collector for serving (core.collector)."""
from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

from core.collector import YOUNG_THRESHOLD, collector_tune

ROOT = Path(__file__).resolve().parents[2]


def test_collector_tune_freezes_what_is_loaded_and_raises_the_young_threshold():
    before = gc.get_threshold()
    try:
        collector_tune()
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *before[1:])
        assert gc.get_freeze_count() > 10_000  # the interpreter, pytest and Django at least
        assert gc.get_count()[0] < 100  # and the young generation starts empty
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_the_asgi_application_sets_the_collector_once_loaded(tmp_path):
    probe = (
        "import gc, json; import agno_site.asgi; "
        "print(json.dumps({'threshold': gc.get_threshold(), 'frozen': gc.get_freeze_count()}))"
    )
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3", "DJANGO_SETTINGS_MODULE": "agno_site.settings.local",
           "AGNO_SITE_IGNORE_DOTENV": "true", "SECRET_KEY": "collector-test", "VAR_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["threshold"][0] == YOUNG_THRESHOLD
    assert found["frozen"] > 100_000  # Django, the apps and the engine, left out of every collection


def test_a_celery_worker_sets_the_collector_when_it_starts():
    from celery.signals import worker_init, worker_process_init

    from agno_site.celery import _collector_for_serving

    for signal in (worker_init, worker_process_init):
        assert _collector_for_serving in [receiver() for _, receiver in signal.receivers]
