"""A service account is its own identity (issue 17, item 1): ``sa:<id>``, never a name that
another owner's account can also have; accounts made before keep their data."""
from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from core.models import AccessToken
from sessions.models import Session, UserMemory
from tests.factories import make_access_token, make_memory, make_session
from tests.security.conftest import auth, token
from tests.security.conftest import create_service_account as create_account


@pytest.mark.django_db(transaction=True)
class TestServiceAccountIdentity:
    SCOPES = ["sessions:read", "sessions:write", "memories:read", "memories:write", "service_accounts:write"]

    def test_two_owners_accounts_of_one_name_share_nothing(self, client, jwt_server) -> None:
        alice_bot = create_account(client, token("alice", self.SCOPES), "bot", ["sessions:read", "sessions:write", "memories:read", "memories:write"]).json()
        bob_bot = create_account(client, token("bob", self.SCOPES), "bot", ["sessions:read", "memories:read"]).json()
        assert alice_bot["principal"] == f"sa:{alice_bot['id']}" and bob_bot["principal"] == f"sa:{bob_bot['id']}"
        alice_robot = auth(alice_bot["token"])
        client.post("/sessions", data=json.dumps({"session_id": "alice-bot-sess"}), content_type="application/json", **alice_robot)
        client.post("/memories", data=json.dumps({"memory": "alice's bot remembers"}), content_type="application/json", **alice_robot)
        assert [item["session_id"] for item in client.get("/sessions", **alice_robot).json()["data"]] == ["alice-bot-sess"]
        bob_robot = auth(bob_bot["token"])
        assert client.get("/sessions", **bob_robot).json()["data"] == []
        assert client.get("/memories", **bob_robot).json()["data"] == []
        assert client.get("/sessions/alice-bot-sess", **bob_robot).status_code == 404

    def test_issue_token_mints_a_service_account_token_the_server_accepts(self, client, jwt_server, capsys) -> None:
        call_command("issue_token", "--service-account", "cron", "--owner", "alice", "--scopes", "sessions:read sessions:write")
        secret = capsys.readouterr().out.strip()
        assert secret.startswith("agno_pat_")
        account = AccessToken.all_users.get(name="cron")
        assert (account.kind, account.user_id, account.scopes) == ("service", "alice", ["sessions:read", "sessions:write"])
        robot = auth(secret)
        assert client.post("/sessions", data=json.dumps({"session_id": "cron-sess"}), content_type="application/json", **robot).status_code == 201
        assert Session.all_users.get(pk="cron-sess").user_id == f"sa:{account.pk}"
        assert [item["session_id"] for item in client.get("/sessions", **robot).json()["data"]] == ["cron-sess"]

    def test_issue_token_refuses_a_subject_the_server_would_refuse(self, jwt_server) -> None:
        with pytest.raises(CommandError, match="reserved subject"):
            call_command("issue_token", "--user-id", "sa:cron", "--scopes", "sessions:read")


def _migrate(target: str) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([("core", target)])


@pytest.fixture
def every_migration_applied_after():
    """The test moves core's schema back and forth around 0002; afterwards every migration is
    applied again (0003 and later too), or later tests, and servers started on the test
    database (which refuse an older one), would find it behind the code."""
    yield
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("every_migration_applied_after")
class TestServiceAccountMigration:
    """Accounts made when a service account acted as ``sa:<name>`` keep their data under ``sa:<id>``."""

    def test_rows_move_to_the_account_that_alone_had_the_name(self, client, jwt_server) -> None:
        _migrate("0001_initial")
        try:
            solo = make_access_token("alice", name="solo", kind="service", scopes=["sessions:read", "memories:read"])
            make_access_token("alice", name="bot", kind="service")
            make_access_token("bob", name="bot", kind="service")
            make_session("sa:solo", session_id="solo-sess")
            make_memory("sa:solo", memory="solo remembers", memory_id="solo-mem")
            make_session("sa:bot", session_id="shared-sess")
        finally:
            _migrate("0002_service_accounts_act_as_their_id")
        owners = dict(Session.all_users.values_list("session_id", "user_id"))
        assert owners == {"solo-sess": f"sa:{solo.pk}", "shared-sess": "sa:bot"}
        assert UserMemory.all_users.get(pk="solo-mem").user_id == f"sa:{solo.pk}"

        # Undone, the rows are back under the name the old code acts as.
        _migrate("0001_initial")
        try:
            assert dict(Session.all_users.values_list("session_id", "user_id")) == {"solo-sess": "sa:solo", "shared-sess": "sa:bot"}
        finally:
            _migrate("0002_service_accounts_act_as_their_id")

    def test_rows_of_a_shared_name_are_handed_over_by_an_operator(self, capsys) -> None:
        bot = make_access_token("alice", name="bot", kind="service")
        make_session("sa:bot", session_id="shared-sess")
        make_memory("sa:bot", memory="shared", memory_id="shared-mem")
        call_command("reassign_owner", "--from", "sa:bot", "--to", f"sa:{bot.pk}")
        assert "moved 2 row(s)" in capsys.readouterr().out
        assert Session.all_users.get(pk="shared-sess").user_id == f"sa:{bot.pk}"
        assert UserMemory.all_users.get(pk="shared-mem").user_id == f"sa:{bot.pk}"
