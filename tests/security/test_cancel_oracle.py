"""A cancel tells nobody whether another user's run or session exists: under user isolation,
naming another user's run or session answers what an unknown id answers (``200 {}``, AgentOS's
answer for a run not yet started), for agents, teams and workflows alike, and stops nothing."""
from __future__ import annotations

import pytest

from jobs.models import CancelIntent
from sessions.models import Run
from tests.security.conftest import auth, token

pytestmark = pytest.mark.django_db

FAMILIES = {
    "agents": ("/agents/assistant", "run_id", "session_id"),
    "teams": ("/teams/research-team", "team_run_id", "team_session_id"),
    "workflows": ("/workflows/review-flow", "workflow_run_id", "workflow_session_id"),
}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_another_users_run_or_session_answers_as_an_unknown_id(client, jwt_server, alice_data, family) -> None:
    prefix, run_key, session_key = FAMILIES[family]
    alices_run, alices_session = alice_data[run_key], alice_data[session_key]
    statuses = dict(Run.objects.for_user("alice").values_list("pk", "status"))
    bob = auth(token("bob"))

    def cancel(run_id: str, session_id: str) -> tuple[int, object]:
        response = client.post(f"{prefix}/runs/{run_id}/cancel?session_id={session_id}", **bob)
        return response.status_code, response.json()

    unknown = cancel("no-such-run", "bobs-new-session")
    assert unknown == (200, {})
    # Alice's run named from Bob's own (new) session, and from Alice's session; Alice's session
    # with an unknown run: each answers exactly as the unknown ids do.
    assert cancel(alices_run, "bobs-new-session") == unknown
    assert cancel(alices_run, alices_session) == unknown
    assert cancel("no-such-run", alices_session) == unknown
    # And none of it reached Alice's runs: no intent on them, none stopped.
    assert not CancelIntent.objects.unscoped("the test looks for every user's intents").filter(run_id=alices_run).exists()
    assert dict(Run.objects.for_user("alice").values_list("pk", "status")) == statuses
    # Alice still cancels her own run.
    assert client.post(f"{prefix}/runs/{alices_run}/cancel?session_id={alices_session}", **auth(token("alice"))).json() == {}
    assert CancelIntent.objects.for_user("alice").filter(run_id=alices_run).exists()


def test_the_callers_own_run_in_another_of_their_sessions_is_not_found(client, jwt_server, alice_data) -> None:
    # Not an oracle (the run is the caller's own), and AgentOS's answer: the run is not in the session.
    response = client.post(f"/agents/assistant/runs/{alice_data['run_id']}/cancel?session_id={alice_data['team_session_id']}", **auth(token("alice")))
    assert (response.status_code, response.json()) == (404, {"detail": "Run not found"})
