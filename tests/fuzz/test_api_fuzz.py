"""Schemathesis over our own OpenAPI document, as two users with data of their own.

Every generated request is sent as alice and as bob: no response may be a 5xx, none may
carry the other user's data, and every response must be one the document declares (status
code, content type, body schema). Runs in its own pytest invocation (scripts/test.sh), because the
schemathesis and hypothesis plugins slow down every other run.
"""
from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, settings as hypothesis_settings
from schemathesis.checks import content_type_conformance, not_a_server_error, response_schema_conformance, status_code_conformance

from agno_site.asgi import application
from tests.factories import make_memory, make_run, make_session
from tests.security.conftest import auth, token

# Examples per operation: 15 in the suite; FUZZ_EXAMPLES=200 for a longer hunt.
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "15"))
MARKS = {"alice": "ALICE-PRIVATE-1b2c", "bob": "BOB-PRIVATE-9d8e"}

schema = schemathesis.openapi.from_asgi("/openapi.json", application)


@pytest.fixture
def two_users(jwt_server, transactional_db) -> None:
    for user, mark in MARKS.items():
        session = make_session(user, session_id=f"{user}-sess", component_id="assistant", session_name=f"{mark} plans")
        make_run(user, session=session, run_id=f"{user}-run", status="COMPLETED", input={"input_content": f"{mark} q"}, run_data={"content": f"{mark} a"})
        make_memory(user, memory=f"{mark} likes tea", memory_id=f"{user}-memory")


@schema.parametrize()
@hypothesis_settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_errors_and_no_other_users_data(case, two_users) -> None:
    for user, other in (("alice", "bob"), ("bob", "alice")):
        headers = {"Authorization": auth(token(user))["HTTP_AUTHORIZATION"]}
        response = case.call(headers=headers)
        case.validate_response(response, checks=[not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance])
        assert MARKS[other] not in response.text, (user, case.method, case.path)
