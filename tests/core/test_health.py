from __future__ import annotations

import re

import pytest


@pytest.mark.parametrize("path", ["/health", "/health/"])
def test_health_answers_in_the_agentos_shape(client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"status", "instantiated_at"}
    assert body["status"] == "ok"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", body["instantiated_at"])
    assert client.get(path).json()["instantiated_at"] == body["instantiated_at"]
