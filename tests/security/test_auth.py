"""Auth modes, JWT keys and algorithms, scopes, tokens for people and services, browser login."""
from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from django.core.management import call_command
from django.test import Client

from core.auth import OPERATOR
from core.models import AccessToken
from core.scopes import Scope, allows, parse_scopes
from core.services.tokens import access_token_create
from core.tokens import token_hash
from tests.security.conftest import SECRET, auth, claims, token

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


class TestScopeGrammar:
    @pytest.mark.parametrize(
        ("held", "resource", "action", "resource_id", "expected"),
        [
            ("agents:read", "agents", "read", "web", True),
            ("agents:*:read", "agents", "read", "web", True),
            ("agents:web:read", "agents", "read", "web", True),
            ("agents:web:read", "agents", "read", "other", False),
            ("agents:web:read", "agents", "run", "web", False),
            ("agents:*", "agents", "run", None, True),
            ("system:read", "config", "read", None, True),
            ("system:*", "config", "write", None, True),
            ("config:read", "system", "read", None, True),
            ("sessions:read", "agents", "read", None, False),
            ("agents", "agents", "read", None, False),
            ("a:b:c:d", "a", "d", None, False),
            ("", "agents", "read", None, False),
        ],
    )
    def test_matching(self, held: str, resource: str, action: str, resource_id: str | None, expected: bool) -> None:
        assert allows(parse_scopes([held]), resource, action, resource_id) is expected

    def test_scopes_may_be_a_string(self) -> None:
        assert parse_scopes("agents:read, sessions:write") == (Scope("agents", "*", "read"), Scope("sessions", "*", "write"))


class TestModes:
    def test_open_server(self, client) -> None:
        assert client.get("/info").json()["auth_mode"] == "none"
        assert client.get("/sessions", HTTP_AUTHORIZATION="Bearer whatever").status_code == 200  # ignored, as in AgentOS

    def test_security_key(self, client, settings) -> None:
        settings.OS_SECURITY_KEY = "my-os-key"
        settings.AGENT_OS_AUTH_MODE = "security_key"
        assert client.get("/info").json()["auth_mode"] == "security_key"
        assert client.get("/sessions").json() == {"detail": "Authorization header required"}
        assert client.get("/sessions", HTTP_AUTHORIZATION="Bearer wrong").json() == {"detail": "Invalid authentication token"}
        assert client.get("/sessions", HTTP_AUTHORIZATION="Bearer my-os-key").status_code == 200
        assert client.get("/sessions", HTTP_AUTHORIZATION="my-os-key").status_code == 200  # no "Bearer ", as AgentOS allows
        for public in ("/", "/health", "/info", "/openapi.json", "/docs"):
            assert client.get(public).status_code == 200, public

    def test_jwt_mode_is_reported_with_isolation(self, client, jwt_server) -> None:
        info = client.get("/info").json()
        assert (info["auth_mode"], info["user_isolation"]) == ("jwt", True)

    @pytest.mark.parametrize(
        ("env", "message"),
        [
            ({}, "No authentication configured with DEBUG=false"),
            ({"JWT_ALGORITHMS": "HS256,none", "JWT_VERIFICATION_KEYS": "k"}, "JWT_ALGORITHMS: 'none' is not an allowed signature algorithm"),
            ({"JWT_LEEWAY_SECONDS": "lots", "OS_SECURITY_KEY": "k"}, "JWT_LEEWAY_SECONDS must be an integer"),
        ],
    )
    def test_production_refuses_to_start_open_or_misconfigured(self, tmp_path, env: dict, message: str) -> None:
        environment = {key: value for key, value in __import__("os").environ.items() if not key.startswith(("JWT_", "OS_SECURITY", "ALLOW_UNAUTH"))}
        environment.update({"DJANGO_SETTINGS_MODULE": "agno_site.settings.production", "SECRET_KEY": "x" * 50, "ALLOWED_HOSTS": "example.com", "VAR_DIR": str(tmp_path), "AGNO_SITE_IGNORE_DOTENV": "true", **env})
        result = subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60)
        assert result.returncode != 0 and message in result.stderr
        environment.update({"ALLOW_UNAUTHENTICATED": "true"})
        if not env:
            assert subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, env=environment, capture_output=True, timeout=60).returncode == 0

    def test_agentos_singular_verification_key_turns_jwt_on(self, tmp_path) -> None:
        """AgentOS reads JWT_VERIFICATION_KEY (one key); a deployment moved over as it is starts with JWT on."""
        environment = {key: value for key, value in __import__("os").environ.items() if not key.startswith(("JWT_", "OS_SECURITY", "ALLOW_UNAUTH"))}
        environment.update({"DJANGO_SETTINGS_MODULE": "agno_site.settings.production", "SECRET_KEY": "x" * 50, "ALLOWED_HOSTS": "example.com", "VAR_DIR": str(tmp_path), "AGNO_SITE_IGNORE_DOTENV": "true"})
        environment.update({"JWT_VERIFICATION_KEY": SECRET, "JWT_VERIFICATION_KEYS": "old-secret-0123456789012345678901234567"})
        script = (
            "import django; django.setup()\n"
            "from django.conf import settings\n"
            "import jwt, time\n"
            "from core.tokens import verify_jwt\n"
            "print(settings.AGENT_OS_AUTH_MODE, len(settings.JWT_VERIFICATION_KEYS))\n"
            "now = int(time.time())\n"
            f"signed = jwt.encode({{'sub': 'alice', 'aud': settings.JWT_AUDIENCE, 'iat': now, 'exp': now + 60}}, {SECRET!r}, algorithm='HS256')\n"
            "print(verify_jwt(signed)['sub'])\n"
        )
        result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == ["jwt", "2", "alice"]


def _rsa_pair():
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, pem


class TestJwtKeys:
    def test_rotation_any_configured_key_validates(self, client, jwt_server) -> None:
        jwt_server.JWT_VERIFICATION_KEYS = ["old-secret-0123456789012345678901234567", SECRET]
        assert client.get("/sessions", **auth(token("alice"))).status_code == 200
        assert client.get("/sessions", **auth(token("alice", key="old-secret-0123456789012345678901234567"))).status_code == 200

    def test_rs256_from_a_jwks_file_chosen_by_kid(self, client, jwt_server, tmp_path) -> None:
        private, _pem = _rsa_pair()
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(private.public_key()))
        jwks = tmp_path / "jwks.json"
        jwks.write_text(json.dumps({"keys": [{**jwk, "kid": "k1", "alg": "RS256", "use": "sig"}]}))
        jwt_server.JWT_JWKS_FILE = str(jwks)
        good = jwt.encode(claims("alice"), private, algorithm="RS256", headers={"kid": "k1"})
        assert client.get("/sessions", **auth(good)).status_code == 200
        other, _ = _rsa_pair()
        forged = jwt.encode(claims("alice"), other, algorithm="RS256", headers={"kid": "k1"})
        assert client.get("/sessions", **auth(forged)).status_code == 401

    def test_es256_public_key_in_pem(self, client, jwt_server) -> None:
        private = ec.generate_private_key(ec.SECP256R1())
        pem = private.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
        jwt_server.JWT_VERIFICATION_KEYS = [pem]
        assert client.get("/sessions", **auth(jwt.encode(claims("alice"), private, algorithm="ES256"))).status_code == 200

    def test_no_hs_rs_confusion(self, client, jwt_server) -> None:
        # An attacker signs an HS256 token with our *public* key as the HMAC secret.
        _private, pem = _rsa_pair()
        jwt_server.JWT_VERIFICATION_KEYS = [pem]
        header = jwt.utils.base64url_encode(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        payload = jwt.utils.base64url_encode(json.dumps(claims("alice")).encode())
        import hashlib
        import hmac

        signature = jwt.utils.base64url_encode(hmac.new(pem.encode(), header + b"." + payload, hashlib.sha256).digest())
        forged = (header + b"." + payload + b"." + signature).decode()
        response = client.get("/sessions", **auth(forged))
        assert response.status_code == 401

    def test_algorithm_not_on_the_allow_list(self, client, jwt_server) -> None:
        key = "k" * 64  # HS512's minimum (RFC 7518, 3.2)
        jwt_server.JWT_VERIFICATION_KEYS = [key]
        jwt_server.JWT_ALGORITHMS = ["HS512"]
        assert client.get("/sessions", **auth(token("alice", key=key))).json() == {"detail": "Invalid token: The specified alg value is not allowed"}
        assert client.get("/sessions", **auth(token("alice", key=key, algorithm="HS512"))).status_code == 200

    def test_small_leeway_on_expiry_and_issued_at(self, client, jwt_server) -> None:
        now = int(time.time())
        assert client.get("/sessions", **auth(token("alice", exp=now - 3))).status_code == 200  # within the 10 s leeway
        assert client.get("/sessions", **auth(token("alice", exp=now - 60))).status_code == 401
        assert client.get("/sessions", **auth(token("alice", iat=now + 3600))).status_code == 401

    def test_audience_can_be_turned_off_and_issuer_checked(self, client, jwt_server) -> None:
        jwt_server.JWT_VERIFY_AUDIENCE = False
        assert client.get("/sessions", **auth(token("alice", aud="anything"))).status_code == 200
        jwt_server.JWT_ISSUER = "https://idp.example.com"
        assert client.get("/sessions", **auth(token("alice"))).status_code == 401
        assert client.get("/sessions", **auth(token("alice", iss="https://idp.example.com"))).status_code == 200

    def test_claim_names_are_configurable(self, client, jwt_server) -> None:
        jwt_server.JWT_USER_ID_CLAIM = "email"
        jwt_server.JWT_SCOPES_CLAIM = "permissions"
        custom = jwt.encode({**claims(None, scopes=[]), "email": "alice@example.com", "permissions": ["sessions:read"]}, SECRET, algorithm="HS256")
        response = client.post("/sessions", data="{}", content_type="application/json", **auth(custom))
        assert response.status_code == 403  # has sessions:read only
        body = client.get("/sessions", **auth(custom))
        assert body.status_code == 200

    @pytest.mark.django_db(transaction=True)
    def test_a_session_claim_binds_the_token_to_one_session(self, client, jwt_server) -> None:
        from sessions.models import Run

        bound = token("alice", session_id="only-this-one")
        response = client.post("/agents/assistant/runs", {"message": "hi", "stream": "false", "session_id": "another"}, **auth(bound))
        assert response.json()["session_id"] == "only-this-one"
        assert Run.objects.for_user("alice").get().session_id == "only-this-one"


class TestPerResourceScopes:
    def test_lists_show_only_readable_agents_and_runs_check_the_agent(self, client, jwt_server) -> None:
        narrow = auth(token("alice", ["agents:assistant:read", "agents:assistant:run", "system:read"]))
        assert [agent["id"] for agent in client.get("/agents", **narrow).json()] == ["assistant"]
        assert [agent["id"] for agent in client.get("/config", **narrow).json()["agents"]] == ["assistant"]
        assert client.get("/agents/hitl-agent", **narrow).status_code == 403
        assert client.post("/agents/hitl-agent/runs", {"message": "x", "stream": "false"}, **narrow).json() == {"detail": "Insufficient permissions. Required scope(s): agents:run"}
        # The teams family has scopes of its own: agent scopes read no team.
        assert client.get("/teams", **narrow).json() == {"detail": "Insufficient permissions. Required scope(s): teams:read"}
        assert client.get("/config", **narrow).json()["teams"] == []
        no_agents = auth(token("alice", ["sessions:read"]))
        assert client.get("/agents", **no_agents).json() == {"detail": "Insufficient permissions. Required scope(s): agents:read"}


@pytest.mark.django_db(transaction=True)
class TestAccessTokens:
    def test_personal_token_is_stored_as_a_hash_and_acts_as_its_owner(self, client) -> None:
        row, secret = access_token_create(name="laptop", user_id="alice", scopes="agents:read agents:run sessions:read", granted_by=OPERATOR)
        assert secret.startswith("agno_pat_") and row.token_hash == token_hash(secret)
        assert not AccessToken.all_users.filter(token_hash=secret).exists() and secret not in repr(AccessToken.all_users.values_list())
        response = client.post("/agents/assistant/runs", {"message": "hi", "stream": "false", "user_id": "mallory"}, **auth(secret))
        assert response.json()["user_id"] == "alice"
        assert client.get("/memories", **auth(secret)).json() == {"detail": "Insufficient permissions. Required scope(s): memories:read"}
        assert AccessToken.all_users.get(pk=row.pk).last_used_at is not None

    def test_revoked_and_expired_tokens_are_refused(self, client) -> None:
        from django.utils import timezone

        row, secret = access_token_create(name="old", user_id="alice", scopes="sessions:read", granted_by=OPERATOR)
        assert client.get("/sessions", **auth(secret)).status_code == 200
        AccessToken.all_users.filter(pk=row.pk).update(expires_at=timezone.now())
        assert client.get("/sessions", **auth(secret)).json() == {"detail": "Invalid authentication token"}
        row2, secret2 = access_token_create(name="other", user_id="alice", scopes="sessions:read", granted_by=OPERATOR)
        AccessToken.all_users.filter(pk=row2.pk).update(revoked_at=timezone.now())
        assert client.get("/sessions", **auth(secret2)).status_code == 401

    def test_service_accounts_through_the_api(self, client, jwt_server) -> None:
        created = client.post("/service-accounts", data=json.dumps({"name": "ci-bot", "scopes": [{"scope": "sessions:read"}, {"scope": "sessions:write"}]}), content_type="application/json", **auth(token("alice"))).json()
        assert created["principal"] == f"sa:{created['id']}" and created["token"].startswith("agno_pat_")
        assert [scope["raw"] for scope in created["scopes"]] == ["sessions:read", "sessions:write"]
        robot = auth(created["token"])
        client.post("/sessions", data=json.dumps({"session_id": "robot-sess"}), content_type="application/json", **robot)
        assert [item["session_id"] for item in client.get("/sessions", **robot).json()["data"]] == ["robot-sess"]
        listed = client.get("/service-accounts", **auth(token("alice"))).json()
        assert [item["name"] for item in listed["data"]] == ["ci-bot"] and "token" not in listed["data"][0]
        assert client.get("/service-accounts", **auth(token("bob"))).json()["data"] == []
        refused = client.delete(f"/service-accounts/{created['id']}", **auth(token("bob")))
        assert (refused.status_code, refused.json()) == (404, {"detail": f"Service account '{created['id']}' not found"})
        assert client.delete(f"/service-accounts/{created['id']}", **auth(token("alice"))).status_code == 204
        assert client.get("/sessions", **robot).status_code == 401
        # Revoking is idempotent and keeps the first revocation time.
        revoked_at = client.get("/service-accounts", **auth(token("alice"))).json()["data"][0]["revoked_at"]
        assert client.delete(f"/service-accounts/{created['id']}", **auth(token("alice"))).status_code == 204
        assert client.get("/service-accounts", **auth(token("alice"))).json()["data"][0]["revoked_at"] == revoked_at

    def test_service_accounts_list_pages_sorts_and_filters(self, client, jwt_server) -> None:
        alice = auth(token("alice"))
        ids = {}
        for name in ("b-bot", "a-bot", "c-bot"):
            ids[name] = client.post("/service-accounts", data=json.dumps({"name": name}), content_type="application/json", **alice).json()["id"]
        client.delete(f"/service-accounts/{ids['a-bot']}", **alice)

        def names(query: str) -> list[str]:
            return [item["name"] for item in client.get(f"/service-accounts?{query}", **alice).json()["data"]]

        assert names("") == ["c-bot", "a-bot", "b-bot"]  # newest first
        assert names("sort_by=name&sort_order=asc") == ["a-bot", "b-bot", "c-bot"]
        assert names("sort_by=no_such_column&sort_order=asc") == ["b-bot", "a-bot", "c-bot"]  # created_at
        assert names("include_revoked=false&sort_by=name&sort_order=asc") == ["b-bot", "c-bot"]
        second = client.get("/service-accounts?limit=2&page=2&sort_by=name&sort_order=asc", **alice).json()
        assert [item["name"] for item in second["data"]] == ["c-bot"]
        assert second["meta"] == {"page": 2, "limit": 2, "total_pages": 2, "total_count": 3, "search_time_ms": 0.0}
        for query, where in [("limit=101", "limit"), ("limit=0", "limit"), ("page=0&limit=5", "page"), ("page=2", "limit"),
                             ("sort_order=up", "sort_order"), ("include_revoked=maybe", "include_revoked")]:
            response = client.get(f"/service-accounts?{query}", **alice)
            assert response.status_code == 422, query
            assert response.json()["detail"][0]["loc"] == ["query", where], query

    def test_admin_scope_needs_an_admin_caller(self, client, jwt_server) -> None:
        body = json.dumps({"name": "root-bot", "scopes": [{"scope": "agent_os:admin"}], "allow_privileged_scopes": True})
        refused = client.post("/service-accounts", data=body, content_type="application/json", **auth(token("alice")))
        assert (refused.status_code, refused.json()) == (403, {"detail": "Insufficient permissions to grant scope(s) you do not hold: agent_os:admin"})
        without_flag = json.dumps({"name": "root-bot", "scopes": [{"scope": "agent_os:admin"}]})
        assert client.post("/service-accounts", data=without_flag, content_type="application/json", **auth(token("root", ["agent_os:admin"]))).status_code == 422
        admin = auth(token("root", ["agent_os:admin"]))
        assert client.post("/service-accounts", data=body, content_type="application/json", **admin).status_code == 201

    def test_minting_needs_a_jwt_caller(self, client) -> None:
        response = client.post("/service-accounts", data=json.dumps({"name": "x"}), content_type="application/json")
        assert response.json() == {"detail": "JWT authentication is required to mint a service account."}

    def test_issue_token_command(self, client, jwt_server, capsys) -> None:
        call_command("issue_token", "--user-id", "carol", "--scopes", "sessions:read agents:read", "--ttl", "60")
        minted = capsys.readouterr().out.strip()
        decoded = jwt.decode(minted, SECRET, algorithms=["HS256"], audience="agno-site")
        assert (decoded["sub"], decoded["scopes"], decoded["exp"] - decoded["iat"]) == ("carol", ["sessions:read", "agents:read"], 60)
        assert client.get("/sessions", **auth(minted)).status_code == 200

    def test_tokens_in_the_admin_are_shown_once(self, client, django_user_model) -> None:
        client.force_login(django_user_model.objects.create_superuser("op", password="pw"))
        django_user_model.objects.create_user("alice", password="pw")  # the form picks the owner from the accounts
        response = client.post("/admin/core/accesstoken/add/", {"name": "svc", "kind": "service", "user_id": "alice", "scopes_text": "agents:read", "ttl_days": "30"}, follow=True)
        messages = [str(m) for m in response.context["messages"]]
        secret = next(m.split(": ")[-1] for m in messages if "not shown again" in m)
        row = AccessToken.all_users.get(name="svc")
        assert row.token_hash == token_hash(secret) and row.scopes == ["agents:read"] and row.created_by == "op"
        page = client.get(f"/admin/core/accesstoken/{row.pk}/change/").content.decode()
        assert secret not in page


@pytest.mark.django_db(transaction=True)
class TestBrowserLogin:
    def test_a_logged_in_user_is_bound_to_their_own_data_and_writes_need_csrf(self, django_user_model) -> None:
        from tests.factories import make_session

        make_session("alice", session_id="alices")
        make_session("bob", session_id="bobs")
        django_user_model.objects.create_user("bob", password="pw")
        browser = Client(enforce_csrf_checks=True)
        assert browser.login(username="bob", password="pw")
        assert [item["session_id"] for item in browser.get("/sessions").json()["data"]] == ["bobs"]
        assert browser.get("/sessions/alices").status_code == 404
        refused = browser.post("/sessions", data=json.dumps({"session_id": "x"}), content_type="application/json")
        assert refused.status_code == 403 and "CSRF" in refused.json()["detail"]
        browser.get("/admin/login/")  # sets the csrftoken cookie
        csrf = browser.cookies["csrftoken"].value
        made = browser.post("/sessions", data=json.dumps({"session_id": "x", "user_id": "alice"}), content_type="application/json", HTTP_X_CSRFTOKEN=csrf)
        assert made.status_code == 201 and made.json()["user_id"] == "bob"


class TestHardening:
    def test_cors_allow_list(self, client, settings) -> None:
        settings.CORS_ALLOWED_ORIGINS = ["https://os.agno.com"]
        allowed = client.get("/agents", HTTP_ORIGIN="https://os.agno.com")
        assert allowed["Access-Control-Allow-Origin"] == "https://os.agno.com"
        assert allowed["Access-Control-Allow-Credentials"] == "true"
        assert "Access-Control-Allow-Origin" not in client.get("/agents", HTTP_ORIGIN="https://evil.example")
        preflight = client.options("/agents/assistant/runs", HTTP_ORIGIN="https://os.agno.com", HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST", HTTP_ACCESS_CONTROL_REQUEST_HEADERS="authorization")
        assert preflight.status_code == 200 and "authorization" in preflight["Access-Control-Allow-Headers"]

    def test_error_responses_carry_cors_headers(self, client, jwt_server) -> None:
        jwt_server.CORS_ALLOWED_ORIGINS = ["https://os.agno.com"]
        refused = client.get("/sessions", HTTP_ORIGIN="https://os.agno.com")
        assert refused.status_code == 401 and refused["Access-Control-Allow-Origin"] == "https://os.agno.com"

    def test_security_headers(self, client) -> None:
        response = client.get("/agents")
        assert response["X-Content-Type-Options"] == "nosniff"
        assert response["Referrer-Policy"] == "same-origin"
        assert response["X-Frame-Options"] == "DENY"

    def test_rate_limit_per_user_answers_429_with_retry_after(self, client, jwt_server) -> None:
        jwt_server.RATE_LIMIT_USER = "3/minute"
        # Users of their own: the limits outlive a test (in the process, or in Redis).
        suffix = uuid.uuid4().hex
        alice, bob = auth(token(f"alice-{suffix}")), auth(token(f"bob-{suffix}"))
        assert [client.get("/sessions", **alice).status_code for _ in range(3)] == [200, 200, 200]
        limited = client.get("/sessions", **alice)
        assert limited.status_code == 429 and int(limited["Retry-After"]) > 0
        assert limited.json() == {"detail": "Too many requests"}
        assert client.get("/sessions", **bob).status_code == 200  # a separate bucket

    def test_credentials_never_reach_the_logs(self, client, jwt_server, caplog) -> None:
        secret_token = token("alice", key="not-the-server-key-0123456789-abcdefgh")
        with caplog.at_level("DEBUG"):
            client.get("/sessions", **auth(secret_token))
            client.get("/sessions", HTTP_AUTHORIZATION=f"Bearer agno_pat_{'x' * 40}")
        assert secret_token not in caplog.text and "agno_pat_xxxx" not in caplog.text

    def test_error_reports_hide_the_authorization_header(self, rf) -> None:
        from core.logging import CredentialFilter

        request = rf.get("/sessions", HTTP_AUTHORIZATION="Bearer top-secret")
        meta = CredentialFilter().get_safe_request_meta(request)
        assert meta["HTTP_AUTHORIZATION"] != "Bearer top-secret"
