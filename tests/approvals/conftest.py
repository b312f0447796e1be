from __future__ import annotations

import pytest

from core.auth import Principal
from tests.agents import conftest as agents_fixtures
from tests.security import conftest as security_fixtures

worker = agents_fixtures.worker  # the embedded worker of this process
jwt_server = security_fixtures.jwt_server  # JWT auth with user isolation


@pytest.fixture(autouse=True)
def approval_agent(settings):
    """The approval agent beside the suite's own agents."""
    settings.AGENT_MODULES = [*settings.AGENT_MODULES, "tests.approvals.agents"]


def browser_user(name: str) -> Principal:
    """A signed-in browser user: bound to their own data, no scopes, not an admin."""
    return Principal(user_id=name, isolated=True, via="session")
