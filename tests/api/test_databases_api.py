"""``POST /databases/all/migrate`` and ``/databases/{db_id}/migrate``: the project's migrations, run
by an admin over the API (AgentOS's ``migrate_database``), answered as AgentOS answers."""
from __future__ import annotations

import httpx
import pytest
from agno.client.os import AgentOSClient
from django.core.management import call_command
from django.db.migrations.loader import MigrationLoader

from core.services.schema import unapplied_migrations
from tests.api.test_agents_conformance import run
from tests.security.conftest import auth, jwt_server, token  # noqa: F401 (jwt_server: a fixture)

pytestmark = pytest.mark.django_db(transaction=True)

DB_ID = "agno-site-db"  # AGENT_OS_ID's database, as /config names it
FORBIDDEN = {"detail": "Insufficient permissions. Required scope(s): config:write"}


@pytest.fixture
def one_migration_unapplied():
    """The evals app's latest migration unapplied (as after an upgrade of the code), and every
    migration applied again after the test whatever it did."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    latest = max(name for app, name in loader.graph.leaf_nodes() if app == "evals")
    parent = max(name for app, name in loader.graph.node_map[("evals", latest)].parents if app == "evals")
    call_command("migrate", "evals", parent, verbosity=0)
    yield f"evals.{latest}"
    call_command("migrate", verbosity=0)


def test_agentos_client_migrates_the_database_and_a_second_call_applies_nothing(live_api, one_migration_unapplied) -> None:
    assert unapplied_migrations() == [one_migration_unapplied]
    client = AgentOSClient(base_url=live_api, timeout=60)
    config = client.get_config()
    assert run(client.migrate_database(config.os_database)) == {"message": "Database migrated successfully to latest version"}
    assert unapplied_migrations() == []
    assert run(client.migrate_database(config.os_database)) == {"message": "Database migrated successfully to latest version"}
    response = httpx.post(f"{live_api}/databases/all/migrate", timeout=60)
    assert (response.status_code, response.json()) == (200, {"message": "All databases migrated successfully to latest version"})


def test_all_databases_are_migrated_by_the_all_route(client, one_migration_unapplied) -> None:
    response = client.post("/databases/all/migrate")
    assert (response.status_code, response.json()) == (200, {"message": "All databases migrated successfully to latest version"})
    assert unapplied_migrations() == []


def test_an_unknown_database_is_a_404_and_a_target_version_a_400(client) -> None:
    response = client.post("/databases/another-db/migrate")
    assert (response.status_code, response.json()) == (404, {"detail": "Database not found"})
    response = client.post(f"/databases/{DB_ID}/migrate?target_version=2.0.0")
    assert response.status_code == 400 and response.json()["detail"].startswith("target_version is not supported")


def test_only_an_admin_migrates(client, jwt_server, one_migration_unapplied) -> None:
    for path in (f"/databases/{DB_ID}/migrate", "/databases/all/migrate", "/databases/another-db/migrate"):
        response = client.post(path, **auth(token("alice")))  # a user's token: no config:write
        assert (response.status_code, response.json()) == (403, FORBIDDEN), path
    assert unapplied_migrations() == [one_migration_unapplied]
    response = client.post(f"/databases/{DB_ID}/migrate", **auth(token("root", scopes=["agent_os:admin"])))
    assert response.status_code == 200 and unapplied_migrations() == []
    response = client.post("/databases/all/migrate", **auth(token("ops", scopes=["config:write"])))  # AgentOS's scope for it
    assert response.status_code == 200


def test_a_guest_and_a_browser_user_may_not_migrate(client, settings, django_user_model) -> None:
    settings.ANONYMOUS_ACCESS = "guests"  # make run's default: anonymous callers are guests
    response = client.post(f"/databases/{DB_ID}/migrate")
    assert (response.status_code, response.json()) == (403, FORBIDDEN)
    django_user_model.objects.create_user(username="ada", password="pw-for-tests-123")
    client.login(username="ada", password="pw-for-tests-123")
    response = client.post("/databases/all/migrate")
    assert (response.status_code, response.json()) == (403, FORBIDDEN)
