"""Schemathesis with hostile payloads: deep nesting, oversized values, too many fields, far pages.

Schemathesis generates what the document describes; these hooks turn each generated body or
query into an attack on what a parser or a database driver must bound: a JSON-carrying field
(form fields hold JSON text, JSON bodies hold values) nested past JSON_MAX_DEPTH, up to 100,000
deep; a value over DATA_UPLOAD_MAX_MEMORY_SIZE (lowered here to keep the run short) or just
under it; 1,001 form fields; a page or limit past what SQL can count. No response may be a 5xx
or anything but JSON, and every status must be one the document declares.
"""
from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, settings as hypothesis_settings
from hypothesis import strategies as st
from schemathesis.checks import content_type_conformance, not_a_server_error, response_schema_conformance, status_code_conformance

from tests.fuzz.conftest import load_schema
from tests.security.conftest import auth, token

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "8"))
BODY_LIMIT = 32 * 1024
# The JSON-carrying fields of run and continue forms, and of session and memory bodies.
FORM_JSON_FIELDS = ["session_state", "metadata", "dependencies", "output_schema", "images", "input_files", "tools"]
BODY_JSON_FIELDS = ["session_state", "metadata", "session_data", "agent_data", "topics", "scopes"]

schema = load_schema()


def _is_form(context: Any) -> bool:
    return context.operation.path.startswith("/agents/")


def _deep_text(depth: int, kind: str) -> str:
    return ("[" * depth + "]" * depth) if kind == "[" else ('{"a":' * depth + "1" + "}" * depth)


def _deep_value(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


def _form_attack(body: dict[str, Any]) -> st.SearchStrategy:
    field = st.sampled_from(FORM_JSON_FIELDS)
    deep = st.builds(lambda name, depth, kind: {**body, name: _deep_text(depth, kind)},
                     field, st.sampled_from([65, 1000, 100_000]), st.sampled_from(["[", "{"]))
    big = st.builds(lambda name, size: {**body, name: "[" + "1," * (size // 2) + "1]"},
                    st.one_of(field, st.just("message")), st.sampled_from([BODY_LIMIT - 4096, BODY_LIMIT + 1024]))
    many = st.just({**body, **{f"extra{index}": "1" for index in range(1001)}})
    return st.one_of(deep, big, many)


def _json_attack(body: Any) -> st.SearchStrategy:
    base = body if isinstance(body, dict) else {}
    # Python values are serialized by the client, so their depth stays under its own recursion limit.
    field = st.sampled_from(sorted(set(base) | set(BODY_JSON_FIELDS)))
    deep = st.builds(lambda name, depth: {**base, name: _deep_value(depth)}, field, st.sampled_from([65, 300]))
    big = st.builds(lambda name, size: {**base, name: "x" * size}, field, st.sampled_from([BODY_LIMIT - 4096, BODY_LIMIT + 1024]))
    return st.one_of(deep, big)


def flatmap_body(context, body):
    return _form_attack(body if isinstance(body, dict) else {}) if _is_form(context) else _json_attack(body)


def flatmap_query(context, query):
    if not any(parameter.name == "page" for parameter in context.operation.query):
        return st.just(query)
    far = st.sampled_from([2**62, 2**63 - 1, 2**63, 10**30])
    return st.one_of(
        st.builds(lambda page: {**(query or {}), "page": page, "limit": 10}, far),
        st.builds(lambda limit: {**(query or {}), "page": 1, "limit": limit}, far),
    )


def _hostile(context: Any) -> bool:
    """Operations with a body, or paginated (the filter sees the raw definition, not yet parsed)."""
    raw = context.operation.definition.raw
    return "requestBody" in raw or any(parameter.get("name") == "page" for parameter in raw.get("parameters", []))


hostile = schema.include(_hostile)


@pytest.fixture
def small_bodies(settings) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = BODY_LIMIT


@schema.hooks.apply(flatmap_body)
@schema.hooks.apply(flatmap_query)
@hostile.parametrize()
@hypothesis_settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_hostile_input_gets_a_declared_json_4xx_never_a_5xx(case, two_users, small_bodies) -> None:
    response = case.call(headers={"Authorization": auth(token("alice"))["HTTP_AUTHORIZATION"]})
    case.validate_response(response, checks=[not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance])
