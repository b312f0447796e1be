"""Shared fixtures. Real services only: a missing PostgreSQL or Redis fails under CI=true."""
from __future__ import annotations

import os

import pytest

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def require_service(name: str, reason: str) -> None:
    """Fail under CI, skip (loudly) elsewhere."""
    message = f"{name} unavailable: {reason}"
    if IN_CI:
        pytest.fail(message + " (CI=true: a missing service is a failure)")
    pytest.skip(message)


@pytest.fixture
def on_postgres(settings) -> bool:
    return settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"


def pytest_collection_modifyitems(config, items) -> None:
    from django.conf import settings

    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        skip = pytest.mark.skip(reason="PostgreSQL only (this run is on SQLite)")
        for item in items:
            if "postgres_only" in item.keywords:
                item.add_marker(skip)
