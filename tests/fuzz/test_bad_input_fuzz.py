"""Schemathesis with hostile payloads: deep nesting, oversized values, too many fields, far pages.

Schemathesis generates what the document describes; these hooks turn each generated body or
query into an attack on what a parser or a database driver must bound: a JSON-carrying field
(form fields hold JSON text, JSON bodies hold values) nested past JSON_MAX_DEPTH, up to 100,000
deep; a value over DATA_UPLOAD_MAX_MEMORY_SIZE (lowered here to keep the run short) or just
under it; 1,001 form fields; a page or limit past what SQL can count. No response may be a 5xx
or anything but JSON, and every status must be one the document declares.

The eval, schedule and knowledge routes also get bad text (issue 31): body fields, query
parameters and path parameters holding a NUL character (or JSON text escaping one), a string past
its column (256 or 5,000 characters), or a format template (``{run_id:>999999999}``, ``{name!r}``,
``{0.__class__}``), with a results folder configured, so ``file_path_to_save_results`` is filled
rather than refused.
"""
from __future__ import annotations

import itertools
import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings as hypothesis_settings
from hypothesis import strategies as st
from schemathesis.checks import content_type_conformance, not_a_server_error, response_schema_conformance, status_code_conformance

from tests.fuzz.conftest import load_schema
from tests.security.conftest import auth, token

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "8"))
# Only the generated cases, each turned into an attack by the hooks below. Hypothesis's explicit
# phase is where schemathesis puts the document's examples and its coverage cases (boundary and
# negative values of every parameter): the coverage cases are built without these hooks, so here
# they were the requests test_api_fuzz.py sends for every operation (as two users) sent again, and
# the examples' attacks are the kinds the generated cases carry.
PHASES = [phase for phase in Phase if phase is not Phase.explicit]
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
@hypothesis_settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), phases=PHASES)
def test_hostile_input_gets_a_declared_json_4xx_never_a_5xx(case, two_users, small_bodies) -> None:
    response = case.call(headers={"Authorization": auth(token("alice"))["HTTP_AUTHORIZATION"]})
    case.validate_response(response, checks=[not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance])


# ---- bad text on the eval, schedule and knowledge routes (issue 31) -------------------------------
#
# Every bad text in every text field of the bodies these routes take, one field at a time and all
# at once, on a body that is otherwise valid (so the text is what the server meets), and in their
# query and path parameters: a fixed list of cases built and checked by schemathesis, so a text
# refused nowhere but by the database is found on every run, not by chance, in one test (one
# database flush: per-operation tests would cost a flush each).

BAD_TEXTS = ["nul\x00inside", '{"note": "\\u0000"}', "x" * 256, "é" * 300, "{run_id:>999999999}", "{name!r}/{0.__class__}"]
BAD_PARAMETERS = ["nul\x00inside", '{"note": "\\u0000"}', "y" * 5000, "{run_id:>999999999}"]
# The text fields each family's bodies declare (the body of each operation below is checked for them).
TEXT_FIELDS = {
    "/eval-runs": ["name", "agent_id", "model_id", "model_provider", "input", "expected_output", "criteria", "file_path_to_save_results"],
    "/schedules": ["name", "cron_expr", "endpoint", "method", "description", "timezone", "disabled_reason"],
    "/knowledge": ["name", "description", "url", "metadata", "text_content", "reader_id", "chunker", "query", "search_type", "path", "source_params"],
}
VALID_BODIES = {
    ("POST", "/eval-runs"): ({"eval_type": "performance", "input": "hi", "agent_id": "assistant"}, "application/json"),
    ("PATCH", "/eval-runs/{eval_run_id}"): ({"name": "renamed"}, "application/json"),
    ("POST", "/schedules"): ({"name": "daily", "cron_expr": "0 9 * * *", "endpoint": "/agents/assistant/runs", "payload": {"message": "hi"}}, "application/json"),
    ("PATCH", "/schedules/{schedule_id}"): ({"name": "daily"}, "application/json"),
    ("POST", "/knowledge/content"): ({"name": "note", "text_content": "hello"}, "multipart/form-data"),
    ("POST", "/knowledge/remote-content"): ({"config_id": "docs", "path": "a.txt"}, "application/x-www-form-urlencoded"),
    ("POST", "/knowledge/search"): ({"query": "hello"}, "application/json"),
}
# A schema of its own: hooks and settings of the tests above do not reach it.
bad_text_schema = load_schema()
FAMILIES = ("/eval-runs", "/schedules", "/knowledge")


@pytest.fixture
def results_folder(settings, tmp_path) -> None:
    """file_path_to_save_results is filled (not refused as unconfigured), and an accepted eval is not waited for."""
    settings.EVALS_RESULTS_DIR = str(tmp_path)
    settings.EVALS_SYNC_WAIT_SECONDS = 1


def _declared(operation: Any) -> set[str]:
    """The property names of an operation's request body, as its document declares them."""
    content = operation.definition.raw["requestBody"]["content"]
    schema_ = next(iter(content.values()))["schema"]
    if "$ref" in schema_:
        schema_ = bad_text_schema.raw_schema["components"]["schemas"][schema_["$ref"].rsplit("/", 1)[1]]
    return set(schema_.get("properties", {}))


_serial = itertools.count()


def _bad_cases(ids: dict[str, str]):
    """Each operation of the three families with each bad text where it takes text."""
    for path, methods in bad_text_schema.raw_schema["paths"].items():
        if not path.startswith(FAMILIES):
            continue
        for method in methods:
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            operation = bad_text_schema[path][method.upper()]
            parameters = {name: value for name, value in ids.items() if "{" + name + "}" in path}
            query = {"background": "true"} if path == "/eval-runs" and method == "post" else {}
            valid, media_type = VALID_BODIES.get((method.upper(), path), (None, None))
            if valid is not None:
                fields = [name for name in TEXT_FIELDS[next(p for p in FAMILIES if path.startswith(p))] if name in _declared(operation)]
                for text in BAD_TEXTS:
                    for chosen in [[name] for name in fields] + [fields]:
                        unique = {"text_content": f"hello {next(_serial)}"} if "text_content" in valid else {}  # not deduplicated
                        yield operation.Case(
                            body={**valid, **unique, **dict.fromkeys(chosen, text)}, media_type=media_type, path_parameters=parameters, query=query,
                        )
            strings = [parameter.name for parameter in operation.query if parameter.definition.get("schema", {}).get("type", "string") == "string"]
            for text in BAD_PARAMETERS:
                body = {"body": valid, "media_type": media_type} if valid is not None else {}
                if strings:
                    yield operation.Case(query={**query, **dict.fromkeys(strings, text)}, path_parameters=parameters, **body)
                if parameters:
                    yield operation.Case(query=query, path_parameters=dict.fromkeys(parameters, text), **body)


def test_bad_text_on_evals_schedules_and_knowledge_is_a_declared_4xx(client, jwt_server, transactional_db, small_bodies, results_folder) -> None:
    from tests.factories import make_eval_run

    alice = auth(token("alice"))
    ids = {
        "eval_run_id": make_eval_run("alice", run_id="alice-eval").pk,
        "schedule_id": client.post("/schedules", data=json.dumps(VALID_BODIES["POST", "/schedules"][0]), content_type="application/json", **alice).json()["id"],
        "content_id": "no-such-content", "knowledge_id": "no-such-base", "source_id": "no-such-source", "run_id": "no-such-run",
    }
    headers = {"Authorization": alice["HTTP_AUTHORIZATION"]}
    count = 0
    for case in _bad_cases(ids):
        response = case.call(headers=headers)
        case.validate_response(response, checks=[not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance])
        count += 1
    assert count > 350  # every family's bodies, queries and paths were reached
