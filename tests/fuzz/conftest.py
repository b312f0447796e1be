from __future__ import annotations

import pytest
import schemathesis
from django.test import Client

from agno_site.asgi import application
from tests.factories import make_memory, make_run, make_session
from tests.security.conftest import jwt_server  # noqa: F401  (the JWT-mode server fixture)

MARKS = {"alice": "ALICE-PRIVATE-1b2c", "bob": "BOB-PRIVATE-9d8e"}


@pytest.fixture(scope="session", autouse=True)
def embedder_loaded() -> None:
    """The default embedder, loaded before the first request: loading it (several seconds under
    load) inside the first ``/knowledge/search`` case could outlast the client's read timeout."""
    from knowledge.embedders import embedder_get

    embedder_get("minilm").embed(["warm"])


@pytest.fixture
def two_users(jwt_server, transactional_db) -> None:  # noqa: F811
    """alice and bob, each with a session, a run and a memory carrying a marker string."""
    for user, mark in MARKS.items():
        session = make_session(user, session_id=f"{user}-sess", component_id="assistant", session_name=f"{mark} plans")
        make_run(user, session=session, run_id=f"{user}-run", status="COMPLETED", input={"input_content": f"{mark} q"}, run_data={"content": f"{mark} a"})
        make_memory(user, memory=f"{mark} likes tea", memory_id=f"{user}-memory")


def load_schema():
    """Our OpenAPI document, its requests sent to the ASGI app.

    Read with Django's test client, not ``from_asgi``: that runs the ASGI lifespan at collection,
    which starts the embedded worker, whose reaper then fails (no database outside tests) and
    logs tracebacks while hypothesis parses sources. Python 3.11 shares the AST constructor's
    recursion counter between threads, so the two collide (``SystemError: AST constructor
    recursion depth mismatch``). The lifespan now starts with the first request, inside a test.
    """
    schema = schemathesis.openapi.from_dict(Client().get("/openapi.json").json())
    schema.app = application
    return schema
