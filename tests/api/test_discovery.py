"""Discovery routes, the docs switch, unknown paths and families not built yet."""
from __future__ import annotations

import re
from datetime import datetime

import pytest
from django.test import Client, override_settings
from django.urls import clear_url_caches

pytestmark = pytest.mark.django_db


def test_landing_json_and_browser_redirect(client) -> None:
    assert client.get("/").json() == {"name": "Agno Site", "health": "/health", "info": "/info", "docs": "/docs"}
    browser = client.get("/", HTTP_ACCEPT="text/html,application/xhtml+xml")
    assert (browser.status_code, browser["Location"]) == (302, "/chat/")


def test_info_is_the_lightweight_public_metadata(client) -> None:
    assert client.get("/info").json() == {
        "os_id": "agno-site", "name": "Agno Site", "os_version": "1.0.0", "agno_version": "3.1.10",
        "agent_count": 3, "team_count": 2, "workflow_count": 2,
        "mcp": {"enabled": True, "path": "/mcp", "oauth": None, "tool_run_endpoint": False},
        "auth_mode": "none", "user_isolation": False,
    }


def test_config_answers_the_clients_required_keys(client) -> None:
    body = client.get("/config/").json()
    assert {"os_id", "databases", "agents", "teams", "workflows", "interfaces"} <= set(body)
    assert body["session"] == {"dbs": [{"db_id": "agno-site-db", "domain_config": {"display_name": "agno-site-db"}, "tables": ["agno_sessions"]}]}


def test_config_has_the_learning_domain_workflow_objects_and_a_durable_queue(client) -> None:
    body = client.get("/config").json()
    assert body["learning"] == {"dbs": [{"db_id": "agno-site-db", "domain_config": {"display_name": "agno-site-db"}, "tables": ["agno_learnings"]}]}
    assert body["queue"] == {"durable": True, "queue_per_session": True}
    assert body["workflows"][0] == {
        "id": "draft-flow", "name": "Draft Flow", "description": body["workflows"][0]["description"], "db_id": "agno-site-db",
        "is_factory": False, "is_component": False, "sandboxed": False,
    }


@pytest.mark.django_db(transaction=True)
def test_agentos_client_reads_the_config_sections(live_api) -> None:
    from agno.client.os import AgentOSClient
    from agno.os.schema import QueueCapabilities, WorkflowSummaryResponse

    config = AgentOSClient(base_url=live_api, timeout=30).get_config()
    assert [(db.db_id, db.domain_config.display_name, db.tables) for db in config.learning.dbs] == [(config.os_database, config.os_database, ["agno_learnings"])]
    assert config.queue == QueueCapabilities(durable=True, queue_per_session=True)
    assert all(isinstance(workflow, WorkflowSummaryResponse) for workflow in config.workflows)
    assert [(workflow.id, workflow.db_id, workflow.is_component) for workflow in config.workflows] == [
        ("draft-flow", config.os_database, False), ("review-flow", config.os_database, False),
    ]


def test_openapi_document_and_docs_pages(client) -> None:
    document = client.get("/openapi.json").json()
    assert document["openapi"].startswith("3.")
    assert "/agents/{agent_id}/runs" in document["paths"]
    for page in ("/docs", "/redoc"):
        html = client.get(page).content.decode()
        # Served by the site itself, never from a CDN: every script and stylesheet is local.
        # (Not a substring test for "cdn": the page's random CSRF token may contain one.)
        assets = re.findall(r"""(?:src|href)=["']([^"']+)["']""", html)
        # (Redoc's script is the sidecar's bundle served from /redoc?script: core/api/docs.py.)
        assert any(asset.startswith(("/static/drf_spectacular_sidecar/", f"{page}?script")) for asset in assets)
        assert [asset for asset in assets if "//" in asset] == []


def test_the_document_describes_the_public_discovery_routes(client) -> None:
    document = client.get("/openapi.json").json()
    health = document["paths"]["/health"]["get"]
    assert health["operationId"] == "health_check" and health["security"] == [{}]
    schema = document["components"]["schemas"]["HealthResponse"]
    body = client.get("/health").json()
    assert set(body) == set(schema["properties"]) == set(schema["required"])
    assert datetime.strptime(body["instantiated_at"], "%Y-%m-%dT%H:%M:%S.%fZ")  # format: date-time
    # /info answers without credentials and with them: both are documented.
    assert {} in document["paths"]["/info"]["get"]["security"]
    assert {"bearer": []} in document["paths"]["/info"]["get"]["security"]


def test_docs_can_be_hidden() -> None:
    from importlib import reload

    import agno_site.urls
    import core.api.urls
    from django.test import Client

    try:
        with override_settings(DOCS_ENABLED=False):
            reload(core.api.urls)
            reload(agno_site.urls)
            clear_url_caches()
            hidden = Client()
            assert hidden.get("/openapi.json").status_code == 404
            assert hidden.get("/docs").status_code == 404
            assert "docs" not in hidden.get("/").json()
    finally:
        reload(core.api.urls)
        reload(agno_site.urls)
        clear_url_caches()


def test_unknown_paths_and_methods_are_json(client) -> None:
    assert (client.get("/nope").status_code, client.get("/nope").json()) == (404, {"detail": "Not Found"})
    response = client.delete("/agents")
    assert (response.status_code, response.json()) == (405, {"detail": "Method Not Allowed"})


def test_unknown_paths_are_json_in_development_too(client, settings) -> None:
    """`make run` serves with DEBUG on: an API client still gets AgentOS's JSON 404, whatever the
    method, credentials or cookies; the browser's pages keep Django's debug page."""
    settings.DEBUG = True
    for method in ("get", "post", "patch", "delete", "options"):
        response = getattr(client, method)("/agents/web/nope/deeper")
        assert (response.status_code, response["Content-Type"], response.json()) == (404, "application/json", {"detail": "Not Found"}), method
    client.cookies["csrftoken"] = "x" * 32
    client.cookies["sessionid"] = "stale"
    response = client.post("/nope", data={"a": "b"})
    assert (response.status_code, response.json()) == (404, {"detail": "Not Found"})
    assert client.get("/").status_code == 200  # the real routes are untouched
    assert client.get("/chat/nope").status_code == 404 and "text/html" in client.get("/chat/nope")["Content-Type"]


@pytest.mark.parametrize("path", ["/filesystem/files"])
def test_families_not_built_yet_answer_503(client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 503
    assert response.json()["detail"].endswith("this Agno Site release does not serve this feature yet.")


def test_teams_and_workflows_are_listed(client) -> None:
    assert [team["id"] for team in client.get("/teams").json()] == ["research-team", "hitl-team"]
    assert [workflow["id"] for workflow in client.get("/workflows/").json()] == ["draft-flow", "review-flow"]
    assert client.get("/teams/crew").json() == {"detail": "Team not found"}
    assert client.post("/workflows/flow/runs", {"message": "x"}).json() == {"detail": "Workflow not found"}


@pytest.mark.parametrize(("method", "path", "status", "detail"), [
    ("get", "/teams/crew", 404, "Team not found"),
    ("post", "/teams/crew/runs/r1/cancel", 404, "Team not found"),
    ("post", "/teams/crew/sessions/s1/fork", 404, "Team not found"),
    ("get", "/teams/crew/runs/r1/checkpoints/2", 404, "Team not found"),
    ("get", "/workflows/flow", 404, "Workflow not found"),
    ("post", "/workflows/flow/runs/r1/cancel", 404, "Workflow not found"),
    ("post", "/teams", 405, "Method Not Allowed"),
    ("delete", "/workflows/flow", 405, "Method Not Allowed"),
    ("put", "/teams/crew/runs", 405, "Method Not Allowed"),
    ("post", "/health", 405, "Method Not Allowed"),
    ("post", "/", 405, "Method Not Allowed"),
])
def test_plain_api_routes_answer_json_to_a_client_without_a_csrf_token(method: str, path: str, status: int, detail: str) -> None:
    # An API client (AgentOSClient, curl) has no CSRF cookie: Django's middleware must not answer
    # it with its HTML "CSRF verification failed" page.
    response = getattr(Client(enforce_csrf_checks=True), method)(path)
    assert (response.status_code, response["Content-Type"], response.json()) == (status, "application/json", {"detail": detail})
