"""Runs to aggregate, and the JWT server of the security tests (tokens for alice, bob, an admin)."""
from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from sessions.models import Run, Session
from tests.factories import make_run, make_session
from tests.agents.conftest import worker
from tests.security.conftest import jwt_server

__all__ = ["jwt_server", "seed_run", "worker"]  # fixtures, and the factory


def seed_run(
    user_id: str | None, at: datetime, *, session: Session | None = None, tokens: tuple[int, int] = (10, 5), duration: float | None = 1.0,
    status: str = "COMPLETED", model: tuple[str, str] = ("gpt-4o", "OpenAI"), component_id: str = "assistant", **fields: Any,
) -> Run:
    """A finished run created (and last updated) at ``at``, with Agno's metrics in its run_data."""
    session = session or make_session(user_id, component_id=component_id, session_type=fields.pop("session_type", "agent"))
    run = make_run(user_id, session=session, created_at=at, status=status, component_id=component_id, **fields)
    input_tokens, output_tokens = tokens
    metrics = {
        "input_tokens": input_tokens, "output_tokens": output_tokens, "total_tokens": input_tokens + output_tokens, "duration": duration,
        "details": {"model": [{"id": model[0], "provider": model[1], "input_tokens": input_tokens, "output_tokens": output_tokens,
                               "total_tokens": input_tokens + output_tokens}]},
    }
    Run.all_users.filter(pk=run.pk).update(
        input_tokens=input_tokens, output_tokens=output_tokens, total_tokens=input_tokens + output_tokens, duration=duration,
        run_data={"content": "answer", "metrics": metrics}, model=model[0],
    )
    return run


@pytest.fixture(autouse=True)
def metrics_settings(settings):
    settings.METRICS_TIMEZONE = "UTC"
    settings.METRICS_REFRESH_OVERLAP_SECONDS = 300
    return settings
