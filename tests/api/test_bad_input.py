"""Bad input never gets a 500 or an HTML page: a 4xx in AgentOS's shape, on every API path.

Deeply nested JSON (in a form field, a body), an out-of-range page, a body over
DATA_UPLOAD_MAX_MEMORY_SIZE, too many fields, an unknown Host, a failed CSRF check.
"""
from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client, override_settings

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


PAGINATED = ["/sessions", "/memories", "/user_memory_stats", "/service-accounts", "/approvals"]


@pytest.mark.parametrize(("page", "limit"), [(HUGE, 10), (2**62, 100)])
def test_a_page_past_what_sql_can_count_is_empty_on_every_paginated_route(client: Client, jwt_server, alice_data, page: int, limit: int) -> None:
    """As AgentOS answers a page past the end: no rows, the page echoed (never a driver overflow)."""
    for path in PAGINATED:
        response = client.get(f"{path}?page={page}&limit={limit}", **auth(token("alice")))
        total = client.get(f"{path}?page=1&limit={limit}", **auth(token("alice"))).json()["meta"]["total_count"]
        assert total >= 1, path  # alice has rows there: the page is empty because it is past them
        empty = {"data": [], "meta": {"page": page, "limit": limit, "total_pages": 1, "total_count": total, "search_time_ms": 0.0}}
        assert answer(response) == (200, empty), path


# --- What Django refuses before a view reads the request ------------------------------------------

class TestRefusedByDjango:
    def test_a_json_body_over_the_size_limit_is_413_json(self, api: Client, settings) -> None:
        settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4096
        response = api.post("/sessions", json.dumps({"session_name": "x" * 5000}), content_type="application/json")
        assert answer(response) == (413, {"detail": "Request body too large: at most 4096 bytes apart from uploaded files"})
        assert not Session.objects.unscoped("test: nothing was stored").exists()

    def test_a_run_form_over_the_size_limit_is_413_json(self, api: Client, settings) -> None:
        settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4096
        response = api.post("/agents/assistant/runs", {"message": "x" * 5000, "stream": "false"})
        assert answer(response) == (413, {"detail": "Request body too large: at most 4096 bytes apart from uploaded files"})

    @pytest.mark.parametrize("encoding", ["multipart", "urlencoded"])
    def test_more_than_1000_form_fields_is_400_json(self, api: Client, encoding: str) -> None:
        fields = {f"field{index}": "1" for index in range(1001)} | {"message": "hi", "stream": "false"}
        if encoding == "multipart":
            response = api.post("/agents/assistant/runs", fields)
        else:
            from urllib.parse import urlencode

            response = api.post("/agents/assistant/runs", urlencode(fields), content_type="application/x-www-form-urlencoded")
        assert answer(response) == (400, {"detail": "Too many fields: at most 1000"})

    @override_settings(ALLOWED_HOSTS=["agents.example.com"])
    def test_an_unknown_host_is_400_json_on_api_paths_and_html_on_the_browsers_pages(self, api: Client) -> None:
        assert api.get("/health", HTTP_HOST="agents.example.com").status_code == 200
        for path in ("/sessions", "/agents/assistant/runs", "/no-such-route"):
            response = api.get(path, HTTP_HOST="evil.example")
            assert answer(response) == (400, {"detail": "Invalid Host header"}), path
        for path in ("/chat/", "/admin/", "/docs"):
            response = api.get(path, HTTP_HOST="evil.example")
            assert (response.status_code, response["Content-Type"]) == (400, "text/html; charset=utf-8"), path


class TestCSRF:
    @pytest.fixture
    def browser(self, django_user_model) -> Client:
        browser = Client(enforce_csrf_checks=True, raise_request_exception=False)
        browser.force_login(django_user_model.objects.create_user("alice", password="pw-for-tests"))
        return browser

    @pytest.mark.urls("tests.api.urls_with_a_plain_view")
    def test_a_csrf_failure_is_403_json_on_api_paths_and_html_on_the_login_page(self, browser: Client) -> None:
        # DRF views check CSRF themselves (and answer JSON); a plain Django view is guarded by the
        # CSRF middleware, whose failure view this is.
        response = browser.post("/plain-api-view", {"message": "hi"})
        assert answer(response) == (403, {"detail": "CSRF verification failed: CSRF cookie not set."})
        login = Client(enforce_csrf_checks=True).post("/chat/login/", {"username": "alice", "password": "x"})
        assert (login.status_code, login["Content-Type"]) == (403, "text/html; charset=utf-8")
