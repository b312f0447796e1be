from __future__ import annotations

import time

import pytest

from tests.security.conftest import jwt_server  # noqa: F401 (a fixture: JWT auth with isolation)


@pytest.fixture
def worker(settings):
    """The embedded worker of this process, stopped (and forgotten) after the test, and so is the
    process's job loop that a Celery task (``drain_queue``) wakes."""
    import jobs.loop_worker as loops
    import jobs.worker as module

    settings.AGENTOS_REAPER_INTERVAL_SECONDS = 1
    module._worker = None
    yield module.embedded_worker
    for running in (module._worker, loops._worker):
        if running is not None:
            running.stop()
    module._worker = loops._worker = None


def wait_for(probe, timeout: float = 20.0, interval: float = 0.05):
    """Poll ``probe`` until it returns something truthy (a condition with a deadline, not a sleep)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("condition not met in time")
