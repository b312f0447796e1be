"""Schemathesis over our own OpenAPI document, as two users with data of their own.

Every generated request is sent as alice and as bob: no response may be a 5xx, none may
carry the other user's data, and every response must be one the document declares (status
code, content type, body schema). Runs in its own pytest invocation (scripts/test.sh), because the
schemathesis and hypothesis plugins slow down every other run.
"""
from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings as hypothesis_settings
from schemathesis.checks import content_type_conformance, not_a_server_error, response_schema_conformance, status_code_conformance

from tests.fuzz.conftest import MARKS, load_schema
from tests.security.conftest import auth, token

# Examples per operation: 15 in the suite; FUZZ_EXAMPLES=200 for a longer hunt.
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "15"))
# Hypothesis's explicit phase comes first: the document's own examples, then schemathesis's coverage
# cases (deterministic: boundary values, and each parameter missing or of a wrong type, operation by
# operation). FUZZ_EXPLICIT_EXAMPLES=0 leaves that phase out (scripts/test.sh
# does on its second database: the same fixed requests as on the first).
PHASES = [phase for phase in Phase if phase is not Phase.explicit or os.environ.get("FUZZ_EXPLICIT_EXAMPLES", "1") != "0"]

schema = load_schema()


@schema.parametrize()
@hypothesis_settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), phases=PHASES)
def test_no_server_errors_and_no_other_users_data(case, two_users) -> None:
    for user, other in (("alice", "bob"), ("bob", "alice")):
        headers = {"Authorization": auth(token(user))["HTTP_AUTHORIZATION"]}
        response = case.call(headers=headers)
        case.validate_response(response, checks=[not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance])
        assert MARKS[other] not in response.text, (user, case.method, case.path)
