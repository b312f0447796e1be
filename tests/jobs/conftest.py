from __future__ import annotations

from tests.agents.conftest import jwt_server, wait_for, worker  # noqa: F401 (fixtures shared with the run tests)
