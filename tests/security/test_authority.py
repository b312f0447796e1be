"""Authority (issue 17, items 2, 4 and 11): a token carries only what its creator holds, the
admin scope means one thing on every credential, and claims of the wrong type are a 401."""
from __future__ import annotations

import jwt
import pytest

from tests.factories import make_session
from tests.security.conftest import SECRET, auth, claims, snapshot, token
from tests.security.conftest import create_service_account as create_account

# ---- 2. delegation is limited to what the delegator holds ----------------------------------------


class TestDelegationGrammar:
    @pytest.mark.parametrize(
        ("held", "wanted", "refused"),
        [
            (["agents:*:run"], ["agents:web:run"], []),
            (["agents:run"], ["agents:web:run", "agents:*:run"], []),
            (["agents:*"], ["agents:run", "agents:web:read", "agents:*"], []),
            (["system:read"], ["config:read"], []),
            (["agents:web:run"], ["agents:run"], ["agents:run"]),
            (["agents:web:run"], ["agents:*:run"], ["agents:*:run"]),
            (["agents:web:run"], ["agents:web:*"], ["agents:web:*"]),
            (["agents:read"], ["agents:run", "sessions:delete"], ["agents:run", "sessions:delete"]),
            (["agent_os:*"], ["agent_os:admin"], ["agent_os:admin"]),
            (["agents:read"], ["agent_os:*:admin"], ["agent_os:*:admin"]),
            (["agent_os:admin"], ["config:write", "agent_os:admin"], []),
            (["agent_os:*:admin"], ["config:write"], []),
        ],
    )
    def test_only_held_scopes_may_be_delegated(self, held: list[str], wanted: list[str], refused: list[str], settings) -> None:
        from core.scopes import parse_scopes, scopes_not_held

        assert scopes_not_held(parse_scopes(held), wanted) == refused


@pytest.mark.django_db(transaction=True)
class TestDelegationOverTheApi:
    def test_a_service_account_may_not_hold_more_than_its_creator(self, client, jwt_server) -> None:
        before = snapshot()
        response = create_account(client, token("alice", ["service_accounts:write", "sessions:read"]), "greedy",
                                  ["sessions:read", "agents:run", "sessions:delete", "config:*"])
        assert (response.status_code, response.json()) == (
            403, {"detail": "Insufficient permissions to grant scope(s) you do not hold: agents:run, config:*, sessions:delete"},
        )
        assert snapshot() == before

    def test_wildcards_delegate_what_they_cover_and_no_more(self, client, jwt_server) -> None:
        wide = token("alice", ["service_accounts:write", "agents:*:run"])
        assert create_account(client, wide, "one-agent", ["agents:web:run"]).status_code == 201
        narrow = token("bob", ["service_accounts:write", "agents:web:run"])
        response = create_account(client, narrow, "every-agent", ["agents:run"])
        assert (response.status_code, response.json()) == (403, {"detail": "Insufficient permissions to grant scope(s) you do not hold: agents:run"})
        # An admin may delegate anything.
        response = create_account(client, token("root", ["agent_os:*:admin"]), "ops", ["config:write", "sessions:delete", "agent_os:admin"], allow_privileged_scopes=True)
        assert response.status_code == 201
        assert [scope["raw"] for scope in response.json()["scopes"]] == ["agent_os:admin", "config:write", "sessions:delete"]

# ---- 4. one meaning of the admin scope on every credential ---------------------------------------


@pytest.mark.django_db(transaction=True)
class TestAdminAliases:
    def test_the_admin_alias_is_admin_on_a_jwt_a_service_account_and_an_access_token(self, client, jwt_server) -> None:
        admin_scope = "agent_os:*:admin"
        make_session("alice", session_id="alice-sess")
        jwt_admin = auth(token("root", [admin_scope]))
        assert [item["session_id"] for item in client.get("/sessions", **jwt_admin).json()["data"]] == ["alice-sess"]
        account = create_account(client, token("root", [admin_scope]), "ops", [admin_scope], allow_privileged_scopes=True).json()
        assert [item["session_id"] for item in client.get("/sessions", **auth(account["token"])).json()["data"]] == ["alice-sess"]
        from core.auth import OPERATOR
        from core.services.tokens import access_token_create

        _row, secret = access_token_create(name="laptop", user_id="root", scopes=[admin_scope], granted_by=OPERATOR)
        assert [item["session_id"] for item in client.get("/sessions", **auth(secret)).json()["data"]] == ["alice-sess"]

    def test_a_wildcard_action_on_the_admin_family_is_not_admin(self, client, jwt_server) -> None:

        make_session("alice", session_id="alice-sess")
        assert client.get("/sessions", **auth(token("mallory", ["agent_os:*", "sessions:read"]))).json()["data"] == []
        refused = create_account(client, token("mallory", ["agent_os:*", "service_accounts:write"]), "sneaky", ["agent_os:*:admin"], allow_privileged_scopes=True)
        assert (refused.status_code, refused.json()) == (403, {"detail": "Insufficient permissions to grant scope(s) you do not hold: agent_os:*:admin"})


# ---- 11. claims of the wrong type are a 401, never a 500 -----------------------------------------


@pytest.mark.django_db(transaction=True)
class TestOddClaims:
    @pytest.mark.parametrize(
        ("extra", "detail"),
        [
            ({"scopes": 7}, "Invalid token: the scopes claim must be a list of strings or a string"),
            ({"scopes": {"sessions:read": True}}, "Invalid token: the scopes claim must be a list of strings or a string"),
            ({"scopes": ["sessions:read", 7]}, "Invalid token: the scopes claim must be a list of strings or a string"),
            ({"scopes": True}, "Invalid token: the scopes claim must be a list of strings or a string"),
            ({"session_id": 42}, "Invalid token: the session_id claim must be a non-empty string"),
            ({"session_id": {"id": "s"}}, "Invalid token: the session_id claim must be a non-empty string"),
            ({"session_id": "   "}, "Invalid token: the session_id claim must be a non-empty string"),
        ],
    )
    def test_a_signed_token_with_a_claim_of_the_wrong_type_is_a_401(self, client, jwt_server, extra, detail) -> None:
        body = claims("alice", ["sessions:read"])
        body.update(extra)
        response = client.get("/sessions", **auth(jwt.encode(body, SECRET, algorithm="HS256")))
        assert (response.status_code, response.json()) == (401, {"detail": detail})
