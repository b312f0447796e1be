"""Team runs and sessions under JWT and user isolation: another user's are not found, and the
``teams`` scopes (family and per team) gate the family as ``agents`` scopes gate agents'."""
from __future__ import annotations

import pytest

from sessions.models import Run
from tests.api.test_teams_api import delegate
from tests.security.conftest import USER_SCOPES, auth, token

pytestmark = pytest.mark.django_db(transaction=True)

TEAM_SCOPES = USER_SCOPES
AGENT_SCOPES = [scope for scope in USER_SCOPES if not scope.startswith("teams:")]


class TestIsolation:
    def test_another_users_team_runs_and_sessions_are_not_found(self, client, jwt_server) -> None:
        alice, bob = auth(token("alice", TEAM_SCOPES)), auth(token("bob", TEAM_SCOPES))
        ran = client.post("/teams/research-team/runs", {"message": delegate("researcher", "secret plans"), "stream": "false", "session_id": "t-a"}, **alice)
        assert ran.status_code == 200, ran.content
        run_id = ran.json()["run_id"]
        assert client.get(f"/teams/research-team/runs/{run_id}", {"session_id": "t-a"}, **bob).json() == {"detail": "Run not found"}
        assert client.get("/teams/research-team/runs", {"session_id": "t-a"}, **bob).json() == {"detail": "Session not found"}
        # Bob cannot write into Alice's team session either.
        refused = client.post("/teams/research-team/runs", {"message": "hi", "stream": "false", "session_id": "t-a"}, **bob)
        assert (refused.status_code, refused.json()) == (404, {"detail": "Session not found"})
        assert Run.objects.unscoped("the test counts every row").filter(session_id="t-a").exclude(user_id="alice").count() == 0

    def test_team_scopes_are_required(self, client, jwt_server) -> None:
        agents_only = auth(token("alice", AGENT_SCOPES))
        listed = client.get("/teams", **agents_only)
        assert (listed.status_code, listed.json()) == (403, {"detail": "Insufficient permissions. Required scope(s): teams:read"})
        refused = client.post("/teams/research-team/runs", {"message": "hi", "stream": "false"}, **agents_only)
        assert refused.status_code == 403
        one_team = auth(token("alice", [*AGENT_SCOPES, "teams:read", "teams:hitl-team:run"]))
        assert [team["id"] for team in client.get("/teams", **one_team).json()] == ["research-team", "hitl-team"]
        assert client.post("/teams/research-team/runs", {"message": "hi", "stream": "false"}, **one_team).status_code == 403
