from __future__ import annotations

import pytest

from tests.agents.conftest import jwt_server, worker

__all__ = ["jwt_server", "worker"]  # fixtures, shared with the agents' tests


@pytest.fixture
def ticker(settings):
    """The embedded ticker of this process, stopped (and forgotten) after the test."""
    import scheduler.ticker as module

    settings.SCHEDULER_TICK_SECONDS = 1
    module._ticker = None
    yield module.embedded_ticker
    if module._ticker is not None:
        module._ticker.stop()
    module._ticker = None
