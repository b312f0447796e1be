from __future__ import annotations

import pytest

from tests.agents.conftest import worker  # noqa: F401 (a fixture)
from tests.security.conftest import jwt_server  # noqa: F401 (a fixture: JWT auth with isolation)


@pytest.fixture
def judge(settings, fake_openai):
    """The local OpenAI-compatible server as the judge model: push its verdicts."""
    settings.EVALS_JUDGE_MODEL = "openai:gpt-4o-mini"
    return fake_openai
