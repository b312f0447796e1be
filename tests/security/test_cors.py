"""CORS as AgentOS answers it (Starlette's CORSMiddleware, configured as AgentOS configures it),
and a login cookie that is a credential only on this site's own pages."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client
from starlette.applications import Starlette
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from tests.factories import make_session

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
AGENTOS_ORIGINS = ["http://localhost:3000", "https://agno.com", "https://www.agno.com", "https://app.agno.com", "https://os-stg.agno.com", "https://os.agno.com"]
CORS_HEADERS = ("access-control-allow-origin", "access-control-allow-credentials", "access-control-allow-methods", "access-control-allow-headers", "access-control-expose-headers", "access-control-max-age")


def agentos_reference() -> TestClient:
    """Starlette's CORSMiddleware with AgentOS's arguments (agno.os.utils.update_cors_middleware)
    in front of a route that answers 200."""

    async def agents(request):
        return JSONResponse([])

    app = Starlette(routes=[Route("/agents", agents, methods=["GET", "POST"])])
    app.add_middleware(CORSMiddleware, allow_origins=AGENTOS_ORIGINS, allow_credentials=True, allow_methods=["*"], allow_headers=["*"], expose_headers=["*"])
    return TestClient(app)


def cors_of(response, status: int, headers) -> tuple:
    return (status, {name: headers.get(name) for name in CORS_HEADERS if headers.get(name) is not None})


@pytest.mark.parametrize(
    ("method", "headers"),
    [
        # agent-ui's preflight for a streamed run, and a client that adds tracing headers.
        ("OPTIONS", {"Origin": "http://localhost:3000", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type,traceparent,x-request-id"}),
        ("OPTIONS", {"Origin": "https://os.agno.com", "Access-Control-Request-Method": "DELETE"}),
        ("OPTIONS", {"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"}),
        ("OPTIONS", {"Origin": "https://app.agno.com", "Access-Control-Request-Method": "GET", "Access-Control-Request-Private-Network": "true"}),
        ("GET", {"Origin": "http://localhost:3000"}),
        ("GET", {"Origin": "https://www.agno.com"}),
        ("GET", {"Origin": "https://evil.example"}),
        ("GET", {}),
    ],
)
def test_answers_as_agentos_with_no_origins_configured(client: Client, method: str, headers: dict[str, str]) -> None:
    theirs = agentos_reference().request(method, "/agents", headers=headers)
    ours = client.generic(method, "/agents", headers=headers)
    assert cors_of(ours, ours.status_code, ours.headers) == cors_of(theirs, theirs.status_code, theirs.headers)
    if method == "OPTIONS":
        assert ours.content == theirs.content  # "OK", "Disallowed CORS origin", …


def test_every_agentos_default_origin_is_allowed(client: Client) -> None:
    for origin in AGENTOS_ORIGINS:
        response = client.get("/agents", HTTP_ORIGIN=origin)
        assert (response["Access-Control-Allow-Origin"], response["Access-Control-Allow-Credentials"], response["Access-Control-Expose-Headers"]) == (origin, "true", "*")
    preflight = client.options("/agents", HTTP_ORIGIN="https://evil.example", HTTP_ACCESS_CONTROL_REQUEST_METHOD="GET")
    assert (preflight.status_code, preflight.content) == (400, b"Disallowed CORS origin")


def test_configured_origins_extend_the_defaults(tmp_path) -> None:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("CORS_")}
    environment.update({"CORS_ALLOWED_ORIGINS": "https://ui.example.com,http://localhost:3000", "AGNO_SITE_IGNORE_DOTENV": "true", "VAR_DIR": str(tmp_path)})
    script = "import django; django.setup()\nfrom django.conf import settings\nprint(' '.join(settings.CORS_ALLOWED_ORIGINS))\nprint(' '.join(settings.CORS_CONFIGURED_ORIGINS))"
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    allowed, configured = result.stdout.splitlines()
    assert allowed.split() == ["https://ui.example.com", *AGENTOS_ORIGINS]
    assert configured.split() == ["https://ui.example.com", "http://localhost:3000"]


def test_the_browsers_pages_are_not_shared(client: Client) -> None:
    for path in ("/chat/", "/admin/login/"):
        response = client.get(path, HTTP_ORIGIN="http://localhost:3000")
        assert "Access-Control-Allow-Origin" not in response, path


def test_a_login_cookie_is_no_credential_from_another_origin(client: Client, jwt_server, django_user_model) -> None:
    """Credentials are allowed (as AgentOS allows them), but a page of an allowed origin, e.g.
    anything served on localhost:3000 (the same site as a local server, so the cookie goes with
    it), reads nothing of the signed-in user's: only its bearer token counts."""
    make_session("bob", session_id="bobs")
    browser = Client()
    browser.force_login(django_user_model.objects.create_user("bob", password="pw"))
    assert [row["session_id"] for row in browser.get("/sessions").json()["data"]] == ["bobs"]
    assert browser.get("/sessions", HTTP_ORIGIN="http://testserver").status_code == 200  # this site's own page
    for origin in ("http://localhost:3000", "https://os.agno.com", "https://evil.example"):
        response = browser.get("/sessions", HTTP_ORIGIN=origin)
        assert (response.status_code, response.json()) == (401, {"detail": "Authorization header missing"}), origin
