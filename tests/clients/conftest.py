from __future__ import annotations

from tests.agents import conftest as agents_fixtures

worker = agents_fixtures.worker  # the embedded worker of this process, stopped after the test
