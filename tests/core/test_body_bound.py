"""A whole request body past REQUEST_MAX_BODY_BYTES is refused before it is read (Django's own
handler spools a body of any size, to disk past 2.5 MiB, before a view may refuse it)."""
from __future__ import annotations

import httpx
import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_declared_length_over_the_bound_is_413_json(live_api, settings):
    settings.REQUEST_MAX_BODY_BYTES = 4096
    response = httpx.post(f"{live_api}/agents/assistant/runs", content=b"m" * 5000, headers={"Content-Type": "application/x-www-form-urlencoded"}, timeout=10)
    assert (response.status_code, response.json()) == (413, {"detail": "Request body too large: at most 4096 bytes"})


def test_a_chunked_body_is_refused_once_its_chunks_pass_the_bound(live_api, settings):
    settings.REQUEST_MAX_BODY_BYTES = 4096

    def chunks():
        for _ in range(64):
            yield b"x" * 1024

    response = httpx.post(f"{live_api}/agents/assistant/runs", content=chunks(), headers={"Content-Type": "application/x-www-form-urlencoded"}, timeout=10)
    assert (response.status_code, response.json()["detail"]) == (413, "Request body too large: at most 4096 bytes")


def test_a_body_within_the_bound_is_served(live_api, settings):
    settings.REQUEST_MAX_BODY_BYTES = 4096
    response = httpx.post(f"{live_api}/agents/assistant/runs", data={"message": "hi", "stream": "false"}, timeout=10)
    assert (response.status_code, response.json()["status"]) == (200, "COMPLETED")
