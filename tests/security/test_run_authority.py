"""One authority decides every run (issue 31): whoever or whatever starts it, a principal that may
read a component but not run it is refused, with AgentOS's 403.

Items: 2 (evals run only what the caller may run; a model override is an admin's), 3 (the
``schedules`` toolkit acts with its run's principal; a schedule keeps the rights it was created
under and its fire re-checks them), 6 (a withdrawn credential disables its schedules; a service
account's owner sees and stops them; an admin's ``?user_id=`` filters), 13 (a per-user cap and a
minimum interval), and the authority itself (the pipeline asks it, not only the route gate).
"""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from core.auth import Principal
from core.models import AccessToken
from core.scopes import parse_scopes
from evals.models import EvalRun
from scheduler.models import Schedule, ScheduleRun
from tests.factories import make_schedule
from tests.security.conftest import auth, token
from tests.security.conftest import create_service_account as create_account

READ_ONLY = ["agents:read", "teams:read", "workflows:read", "sessions:read", "sessions:write", "evals:read", "evals:write",
             "schedules:read", "schedules:write", "schedules:delete"]
RUN_ALL = [*READ_ONLY, "agents:run", "teams:run", "workflows:run"]
ADMIN = ["agent_os:admin"]


def jwt_principal(sub: str, granted: list[str]) -> Principal:
    return Principal(user_id=sub, scopes=parse_scopes(granted), isolated=True, via="jwt")


def principal_grant(principal: Principal) -> dict:
    from core.auth import principal_grant as grant

    return grant(principal)


def post_json(client, path: str, body: dict, credential: str):
    return client.post(path, data=json.dumps(body), content_type="application/json", **auth(credential))


# ---- the authority, in the pipeline (not only at the route) --------------------------------------


@pytest.mark.django_db(transaction=True)
class TestThePipelineAsks:
    @pytest.mark.parametrize(("kind", "component_id", "family"), [("agent", "assistant", "agents"), ("team", "research-team", "teams"), ("workflow", "review-flow", "workflows")])
    @pytest.mark.parametrize("background", [False, True])
    def test_a_reader_may_not_start_a_run_whatever_the_surface(self, jwt_server, kind, component_id, family, background) -> None:
        from agents.pipeline.runs import RunForbidden, RunRequest
        from agents.pipeline.submit import submit_run
        from sessions.models import Run

        with pytest.raises(RunForbidden) as refused:
            submit_run(principal=jwt_principal("alice", READ_ONLY), component_id=component_id, kind=kind,
                       request=RunRequest(message="hi", stream=False), background=background)
        assert str(refused.value) == f"Insufficient permissions. Required scope(s): {family}:run"
        assert not Run.objects.unscoped("test").exists()

    def test_a_per_id_run_scope_runs_that_component_only(self, jwt_server) -> None:
        from agents.pipeline.authority import RunForbidden, run_authorize

        principal = jwt_principal("alice", ["agents:planner:run", "agents:assistant:read"])
        with pytest.raises(RunForbidden):
            run_authorize(principal, "agent", "assistant")
        assert run_authorize(jwt_principal("alice", ["agents:assistant:run"]), "agent", "assistant").component_id == "assistant"

    def test_continuing_a_run_asks_too(self, client, jwt_server) -> None:
        from agents.pipeline.continuation import continue_prepare
        from agents.pipeline.runs import RunForbidden
        from tests.factories import make_run, make_session

        session = make_session("alice", session_id="s1", component_id="hitl-agent")
        make_run("alice", session=session, run_id="r1", component_id="hitl-agent", status="PAUSED", run_data={"status": "PAUSED", "agent_id": "hitl-agent"})
        with pytest.raises(RunForbidden):
            continue_prepare(principal=jwt_principal("alice", READ_ONLY), component_id="hitl-agent", run_id="r1", session_id="s1",
                             requested_user_id=None, tools=[], kind="agent")


    def test_a_teams_run_scope_covers_its_members(self, client, jwt_server) -> None:
        """Item 17, as AgentOS: members are part of the authorized team, not runs of their own."""
        scoped = auth(token("alice", ["teams:research-team:run", "sessions:read", "sessions:write"]))
        response = client.post("/teams/research-team/runs", data={"message": "hi", "stream": "false"}, **scoped)
        assert response.status_code == 200, response.content
        assert client.post("/agents/researcher/runs", data={"message": "hi", "stream": "false"}, **scoped).status_code == 403


# ---- item 2: evals ------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
class TestEvalsRunOnlyWhatTheCallerMayRun:
    @pytest.mark.parametrize(("field", "component_id", "family"), [("agent_id", "assistant", "agents"), ("team_id", "research-team", "teams"), ("workflow_id", "review-flow", "workflows")])
    def test_read_and_evals_write_are_not_enough(self, client, jwt_server, field, component_id, family) -> None:
        body = {"eval_type": "performance", "input": "hi", field: component_id, "num_iterations": 5}
        response = post_json(client, "/eval-runs?background=true", body, token("alice", READ_ONLY))
        assert (response.status_code, response.json()) == (403, {"detail": f"Insufficient permissions. Required scope(s): {family}:run"})
        assert not EvalRun.objects.unscoped("test").exists()

    def test_one_id_run_scope_is_not_another(self, client, jwt_server) -> None:
        body = {"eval_type": "performance", "input": "hi", "agent_id": "assistant"}
        response = post_json(client, "/eval-runs?background=true", body, token("alice", [*READ_ONLY, "agents:planner:run"]))
        assert response.status_code == 403

    @pytest.mark.parametrize(("field", "component_id"), [("agent_id", "assistant"), ("team_id", "research-team"), ("workflow_id", "review-flow")])
    def test_a_caller_that_may_run_it_evaluates_it(self, client, jwt_server, field, component_id) -> None:
        body = {"eval_type": "performance", "input": "hi", field: component_id}
        response = post_json(client, "/eval-runs?background=true", body, token("alice", RUN_ALL))
        assert response.status_code == 202, response.content
        assert EvalRun.objects.for_user("alice").get().component_id == component_id

    def test_an_eval_runs_as_its_caller_and_is_checked_again_when_it_runs(self, client, jwt_server, settings) -> None:
        from jobs.models import Job
        from evals import kinds
        from evals.execution import eval_run_execute

        # The test runs the job itself, as a worker whose caller lost the scope would: the
        # embedded worker must not claim it first (it did under load: its run completed the eval
        # over the test's refusal).
        settings.EMBEDDED_WORKER = False
        body = {"eval_type": "performance", "input": "hi", "agent_id": "assistant"}
        accepted = post_json(client, "/eval-runs?background=true", body, token("alice", RUN_ALL)).json()
        job = Job.objects.unscoped("test").get(payload__eval_run_id=accepted["id"])
        assert sorted(job.payload["principal"]["scopes"]) == sorted(RUN_ALL)
        with pytest.raises(kinds.EvalFailed):
            eval_run_execute(run_id=accepted["id"], owner_id="alice", report=lambda **_: None, principal=jwt_principal("alice", READ_ONLY))
        row = EvalRun.objects.for_user("alice").get()
        assert (row.status, row.error) == ("failed", "Insufficient permissions. Required scope(s): agents:run")

    def test_a_model_override_is_an_admins_option(self, client, jwt_server) -> None:
        body = {"eval_type": "performance", "input": "hi", "agent_id": "assistant", "model_id": "demo", "model_provider": "offline"}
        response = post_json(client, "/eval-runs?background=true", body, token("alice", RUN_ALL))
        assert response.status_code == 403
        assert "admin" in response.json()["detail"]
        assert not EvalRun.objects.unscoped("test").exists()
        assert post_json(client, "/eval-runs?background=true", body, token("root", ADMIN)).status_code == 202


# ---- item 3: the schedules toolkit acts with its run's principal ---------------------------------


@pytest.fixture
def planner(db):
    from agents.services.definitions import definition_create

    definition_create(agent_id="planner", name="Planner", model="offline:demo", tools=["schedules"])


def schedule_by_tool(client, credential: str, agent_id: str, name: str = "every-minute") -> dict:
    args = json.dumps({"name": name, "cron_expr": "* * * * *", "message": "tell me the secret", "agent_id": agent_id})
    response = client.post("/agents/planner/runs", data={"message": f"/call create_schedule {args}", "stream": "false"}, **auth(credential))
    assert response.status_code == 200, response.content
    return response.json()


def tool_result(run: dict) -> str:
    return str(run["tools"][0]["result"])


@pytest.mark.django_db(transaction=True)
class TestTheScheduleToolIsNoDeputy:
    PLANNER_ONLY = ["agents:planner:run", "agents:read", "schedules:read", "schedules:write", "sessions:read", "sessions:write"]

    def test_a_token_that_may_run_only_the_planner_cannot_schedule_another_agent(self, client, jwt_server, planner) -> None:
        run = schedule_by_tool(client, token("alice", self.PLANNER_ONLY), "assistant")
        assert tool_result(run) == "Not scheduled: Insufficient permissions. Required scope(s): agents:run"
        assert not Schedule.objects.unscoped("test").exists()

    def test_without_schedules_write_the_tool_writes_nothing(self, client, jwt_server, planner) -> None:
        run = schedule_by_tool(client, token("alice", ["agents:planner:run", "sessions:read", "sessions:write"]), "planner")
        assert tool_result(run) == "Not scheduled: Insufficient permissions. Required scope(s): schedules:write"
        assert not Schedule.objects.unscoped("test").exists()

    def test_what_it_may_run_it_schedules_keeping_the_runs_rights(self, client, jwt_server, planner) -> None:
        run = schedule_by_tool(client, token("alice", self.PLANNER_ONLY), "planner")
        stored = Schedule.objects.for_user("alice").get()
        assert (stored.target_id, stored.grant["via"], sorted(stored.grant["scopes"])) == ("planner", "jwt", sorted(self.PLANNER_ONLY)), tool_result(run)

    def test_a_background_run_carries_its_principal_to_its_tools(self, client, jwt_server, planner, settings) -> None:
        from jobs.models import Job

        args = json.dumps({"name": "bg", "cron_expr": "* * * * *", "message": "x", "agent_id": "assistant"})
        response = client.post("/agents/planner/runs", data={"message": f"/call create_schedule {args}", "stream": "false", "background": "true"},
                               **auth(token("alice", self.PLANNER_ONLY)))
        assert response.status_code == 202
        job = Job.objects.unscoped("test").get(pk=response.json()["run_id"])
        assert sorted(job.payload["principal"]["scopes"]) == sorted(self.PLANNER_ONLY)


def fire_now(schedule: Schedule) -> ScheduleRun:
    from scheduler.services.firing import fire

    run = fire(schedule.pk, timezone.now(), trigger="trigger")
    assert run is not None
    run.refresh_from_db()
    schedule.refresh_from_db()
    return run


@pytest.mark.django_db(transaction=True)
class TestAFireReChecksItsRights:
    def test_a_schedule_created_under_a_narrow_token_fires_with_that_token_only(self, jwt_server) -> None:
        # Its stored rights run the planner only: a row pointing it at another agent is refused at the fire.
        schedule = make_schedule("alice", grant=principal_grant(jwt_principal("alice", ["agents:planner:run"])))
        run = fire_now(schedule)
        assert (run.status, run.status_code, run.run_id) == ("failed", 403, None)
        assert run.error == "forbidden: Insufficient permissions. Required scope(s): agents:run"
        assert schedule.enabled is False and schedule.disabled_reason.startswith("forbidden: Insufficient permissions")

    def test_a_schedule_whose_rights_still_hold_fires(self, jwt_server) -> None:
        schedule = make_schedule("alice", grant=principal_grant(jwt_principal("alice", ["agents:run"])))
        run = fire_now(schedule)
        assert (run.status, schedule.enabled) == ("running", True)

    @pytest.fixture
    def robot(self, client, jwt_server):
        """alice's service account that may run agents and write schedules, and its schedule."""
        account = create_account(client, token("alice", [*RUN_ALL, "service_accounts:write", "service_accounts:delete"]), "cron-bot",
                                  ["agents:run", "schedules:write", "schedules:read"]).json()
        response = post_json(client, "/schedules", {"name": "nightly", "endpoint": "/agents/assistant/runs", "cron_expr": "0 3 * * *",
                                                    "payload": {"message": "report"}}, account["token"])
        assert response.status_code == 201, response.content
        return account, Schedule.objects.for_user(account["principal"]).get()

    def test_narrowed_scopes_refuse_the_fire_and_disable_the_schedule(self, robot) -> None:
        account, schedule = robot
        AccessToken.objects.unscoped("test").filter(pk=account["id"]).update(scopes=["schedules:read", "schedules:write"])
        run = fire_now(schedule)
        assert (run.status, run.status_code) == ("failed", 403)
        assert run.error == "scopes_narrowed: the service token 'cron-bot' it was created with no longer holds agents:run"
        assert schedule.enabled is False and schedule.disabled_reason.startswith("scopes_narrowed:")

    def test_an_expired_account_refuses_the_fire(self, robot) -> None:
        account, schedule = robot
        AccessToken.objects.unscoped("test").filter(pk=account["id"]).update(expires_at=timezone.now() - timedelta(minutes=1))
        run = fire_now(schedule)
        assert run.status == "failed" and run.error.startswith("credential_expired:")
        assert schedule.enabled is False and schedule.disabled_reason.startswith("credential_expired:")

    # ---- item 6 ----

    def test_revoking_the_account_disables_its_schedules_with_a_reason(self, client, robot) -> None:
        account, schedule = robot
        owner = token("alice", [*RUN_ALL, "service_accounts:delete"])
        assert client.delete(f"/service-accounts/{account['id']}", **auth(owner)).status_code == 204
        schedule.refresh_from_db()
        assert schedule.enabled is False and schedule.disabled_reason.startswith("credential_revoked: the service token 'cron-bot'")
        # Triggered all the same (an admin's trigger fires a disabled schedule): refused, recorded.
        run = fire_now(schedule)
        assert run.status == "failed" and run.error.startswith("credential_revoked:")

    def test_the_accounts_owner_sees_and_stops_its_schedules_and_nobody_else_does(self, client, robot) -> None:
        account, schedule = robot
        principal = account["principal"]
        alice = auth(token("alice", RUN_ALL))
        listed = client.get(f"/schedules?user_id={principal}", **alice).json()["data"]
        assert [item["id"] for item in listed] == [schedule.pk]
        assert client.get(f"/schedules/{schedule.pk}/runs?user_id={principal}", **alice).status_code == 200
        assert client.post(f"/schedules/{schedule.pk}/disable?user_id={principal}", **alice).json()["enabled"] is False
        # Seeing is not acting as it: no enabling, editing or triggering through the owner's view.
        assert client.post(f"/schedules/{schedule.pk}/enable?user_id={principal}", **alice).status_code == 404
        # bob, who does not own the account, sees none of it.
        bob = auth(token("bob", RUN_ALL))
        assert client.get(f"/schedules?user_id={principal}", **bob).json()["data"] == []
        assert client.delete(f"/schedules/{schedule.pk}?user_id={principal}", **bob).status_code == 404
        assert client.delete(f"/schedules/{schedule.pk}?user_id={principal}", **alice).status_code == 204
        assert not Schedule.objects.unscoped("test").exists()

    def test_deleting_a_user_disables_their_schedules(self, db, jwt_server) -> None:
        from django.contrib.auth import get_user_model

        user = get_user_model().objects.create_user("carol", password="pw-0123456789")
        schedule = make_schedule("carol", grant=principal_grant(Principal(user_id="carol", isolated=True, via="session")))
        other = make_schedule("dave")
        user.delete()
        schedule.refresh_from_db()
        other.refresh_from_db()
        assert schedule.enabled is False and schedule.disabled_reason.startswith("owner_deleted: the account 'carol'")
        assert other.enabled is True
        run = fire_now(schedule)
        assert run.status == "failed" and run.error.startswith("owner_deleted:")

    def test_an_admins_user_id_filter_is_honoured(self, client, jwt_server) -> None:
        make_schedule("alice", name="alices")
        make_schedule("bob", name="bobs")
        admin = auth(token("root", ADMIN))
        assert [item["name"] for item in client.get("/schedules?user_id=bob", **admin).json()["data"]] == ["bobs"]
        assert sorted(item["name"] for item in client.get("/schedules", **admin).json()["data"]) == ["alices", "bobs"]
        # A user's own ?user_id= of someone else is still only their own.
        assert [item["name"] for item in client.get("/schedules?user_id=bob", **auth(token("alice", RUN_ALL))).json()["data"]] == ["alices"]


# ---- item 13: a cap and a minimum interval ---------------------------------------------------


@pytest.mark.django_db(transaction=True)
class TestScheduleLimits:
    def body(self, name: str, cron: str = "0 * * * *") -> dict:
        return {"name": name, "endpoint": "/agents/assistant/runs", "cron_expr": cron, "payload": {"message": "x"}}

    def test_a_user_holds_at_most_the_cap(self, client, jwt_server, settings) -> None:
        settings.SCHEDULES_MAX_PER_USER = 2
        alice = token("alice", RUN_ALL)
        assert [post_json(client, "/schedules", self.body(name), alice).status_code for name in ("a", "b")] == [201, 201]
        response = post_json(client, "/schedules", self.body("c"), alice)
        assert (response.status_code, response.json()) == (
            409, {"detail": "Schedule limit reached: at most 2 schedules per user (SCHEDULES_MAX_PER_USER); delete one first"},
        )
        # The cap is per user: bob is not counted against alice.
        assert post_json(client, "/schedules", self.body("c"), token("bob", RUN_ALL)).status_code == 201

    def test_ticks_closer_than_the_minimum_interval_are_refused(self, client, jwt_server, settings) -> None:
        settings.SCHEDULE_MIN_INTERVAL_SECONDS = 3600
        alice = token("alice", RUN_ALL)
        response = post_json(client, "/schedules", self.body("often", "*/5 * * * *"), alice)
        assert (response.status_code, response.json()) == (
            422, {"detail": "Invalid cron expression: it fires every 300 seconds; schedules fire at most every 3600 seconds (SCHEDULE_MIN_INTERVAL_SECONDS)"},
        )
        assert post_json(client, "/schedules", self.body("hourly"), alice).status_code == 201
        schedule_id = Schedule.objects.for_user("alice").get().pk
        patched = client.patch(f"/schedules/{schedule_id}", data=json.dumps({"cron_expr": "0,30 9 * * *"}), content_type="application/json", **auth(alice))
        assert patched.status_code == 422

    def test_the_default_minimum_allows_every_minute_and_the_cap_is_one_hundred(self, settings) -> None:
        from scheduler.cron import min_interval_seconds

        assert (settings.SCHEDULE_MIN_INTERVAL_SECONDS, settings.SCHEDULES_MAX_PER_USER) == (60, 100)
        assert [min_interval_seconds(expr) for expr in ("* * * * *", "0 9 * * *", "0,1 9 1 1 *", "")] == [60, 86400, 60, None]
