"""Bad input never gets a 500 or an HTML page: a 4xx in AgentOS's shape, on every API path.

Deeply nested JSON (in a form field, a body), an out-of-range page.
"""
from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from sessions.models import Session
from tests.security.conftest import alice_data, auth, jwt_server, token  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db

DEPTH = 100_000
DEEP_ARRAY = "[" * DEPTH + "]" * DEPTH
DEEP_OBJECT = '{"a":' * DEPTH + "1" + "}" * DEPTH


def nested(depth: int) -> Any:
    value: Any = {"leaf": True}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def too_deep(location: list[str]) -> dict[str, Any]:
    return {"detail": [{
        "type": "json_invalid", "loc": location, "msg": "JSON decode error: nested more than 64 levels deep",
        "input": None, "ctx": {"max_depth": 64},
    }]}


def answer(response) -> tuple[int, Any]:
    return response.status_code, response.json()


@pytest.fixture
def api() -> Client:
    # raise_request_exception=False: a regression shows as the 500 it would be, not as a traceback.
    return Client(raise_request_exception=False)


# --- Deeply nested JSON ---------------------------------------------------------------------------

RUN_JSON_FIELDS = ["session_state", "metadata", "dependencies", "output_schema", "images", "input_files"]


@pytest.mark.django_db(transaction=True)  # runs execute in run threads, on connections of their own
class TestDeepJSON:
    @pytest.mark.parametrize("field", RUN_JSON_FIELDS)
    @pytest.mark.parametrize("text", [DEEP_ARRAY, DEEP_OBJECT], ids=["arrays", "objects"])
    def test_a_run_form_field_nested_100000_deep_is_422(self, api: Client, field: str, text: str) -> None:
        response = api.post("/agents/assistant/runs", {"message": "hi", "stream": "false", field: text})
        assert answer(response) == (422, too_deep(["body", field]))
        assert not Session.objects.unscoped("test: nothing was stored").exists()

    @pytest.mark.parametrize("field", RUN_JSON_FIELDS)
    @pytest.mark.parametrize("depth", [100, 900])  # 900: the parser copes, what stores it would not
    def test_a_run_form_field_nested_past_the_bound_is_422(self, api: Client, field: str, depth: int) -> None:
        value = nested(depth)
        if field in ("images", "input_files"):
            value = [value]
        response = api.post("/agents/assistant/runs", {"message": "hi", "stream": "false", field: json.dumps(value)})
        assert answer(response) == (422, too_deep(["body", field]))
        assert not Session.objects.unscoped("test: nothing was stored").exists()

    def test_the_bound_is_64_levels(self, api: Client) -> None:
        refused = api.post("/agents/assistant/runs", {"message": "hi", "stream": "false", "session_state": json.dumps(nested(65))})
        assert answer(refused) == (422, too_deep(["body", "session_state"]))
        accepted = api.post("/agents/assistant/runs", {"message": "hi", "stream": "false", "session_state": json.dumps(nested(64))})
        assert accepted.status_code == 200
        assert accepted.json()["session_state"] == nested(64)

    def test_a_continue_tools_field_nested_100000_deep_is_422(self, api: Client) -> None:
        response = api.post("/agents/hitl-agent/runs/r-1/continue", {"tools": DEEP_ARRAY, "session_id": "s-1", "stream": "false"})
        assert answer(response) == (422, too_deep(["body", "tools"]))

    @pytest.mark.parametrize("depth", [900, DEPTH])
    def test_a_json_body_nested_too_deep_is_422(self, api: Client, depth: int) -> None:
        body = json.dumps({"session_id": "s-deep", "session_state": nested(depth)}) if depth < 1000 else '{"session_state":' + DEEP_OBJECT + "}"
        response = api.post("/sessions", body, content_type="application/json")
        assert answer(response) == (422, too_deep(["body"]))
        assert not Session.objects.unscoped("test: nothing was stored").exists()

    def test_a_patch_body_nested_too_deep_is_422_and_changes_nothing(self, api: Client) -> None:
        api.post("/sessions", {"session_id": "s-1", "session_state": {"kept": 1}}, content_type="application/json")
        before = api.get("/sessions/s-1").json()
        response = api.patch("/sessions/s-1", json.dumps({"session_state": nested(900)}), content_type="application/json")
        assert answer(response) == (422, too_deep(["body"]))
        assert api.get("/sessions/s-1").json() == before


# --- Pages beyond what SQL can count --------------------------------------------------------------

HUGE = 10**30


PAGINATED = ["/sessions", "/memories", "/user_memory_stats", "/service-accounts"]


@pytest.mark.parametrize(("page", "limit"), [(HUGE, 10), (2**62, 100)])
def test_a_page_past_what_sql_can_count_is_empty_on_every_paginated_route(client: Client, jwt_server, alice_data, page: int, limit: int) -> None:
    """As AgentOS answers a page past the end: no rows, the page echoed (never a driver overflow)."""
    for path in PAGINATED:
        response = client.get(f"{path}?page={page}&limit={limit}", **auth(token("alice")))
        empty = {"data": [], "meta": {"page": page, "limit": limit, "total_pages": 1, "total_count": 1, "search_time_ms": 0.0}}
        assert answer(response) == (200, empty), path
