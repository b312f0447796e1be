"""The ``schedules`` toolkit: an agent's run schedules for its user, with provenance."""
from __future__ import annotations

import json

import pytest

from engine.context import RunContext as BareContext
from core.auth import Principal
from agents.services.definitions import definition_create
from scheduler.models import Schedule
from scheduler.toolkit import ScheduleTools
from tests.security.conftest import auth, token

pytestmark = pytest.mark.django_db


def RunContext(**fields):  # noqa: N802 (the run context a run of the pipeline gets: its user's principal)
    return BareContext(**fields, principal=Principal(user_id=fields.get("user_id"), isolated=True, via="session"))


def call(tools: ScheduleTools, tool_name: str, ctx: RunContext | None, **args):
    function = next(f for f in tools.functions() if f.name == tool_name)
    assert "run_context" not in {p.name for p in function.params}  # hidden from the model
    return function.execute(args, run_context=ctx)


def test_an_agent_run_creates_lists_updates_and_deletes_its_users_schedules() -> None:
    tools = ScheduleTools("alice")
    ctx = RunContext(run_id="run-1", session_id="sess-1", user_id="alice")
    created = json.loads(call(tools, "create_schedule", ctx, name="standup", cron_expr="0 9 * * 1-5", message="Summarise my tickets", timezone="Europe/Paris"))["created"]
    stored = Schedule.objects.for_user("alice").get(pk=created["id"])
    assert (stored.managed_by, stored.created_by_run_id, stored.created_by_session_id) == ("agent", "run-1", "sess-1")
    assert (stored.endpoint, stored.payload, stored.timezone) == ("/agents/assistant/runs", {"message": "Summarise my tickets"}, "Europe/Paris")
    listed = json.loads(call(tools, "list_schedules", ctx))["schedules"]
    assert [item["name"] for item in listed] == ["standup"]
    later = RunContext(run_id="run-2", session_id="sess-2", user_id="alice")
    updated = json.loads(call(tools, "update_schedule", later, schedule_id=stored.pk, cron_expr="30 8 * * 1-5", enabled=False))["updated"]
    assert (updated["cron_expr"], updated["enabled"]) == ("30 8 * * 1-5", False)
    stored.refresh_from_db()
    assert (stored.updated_by_run_id, stored.updated_by_session_id, stored.created_by_run_id) == ("run-2", "sess-2", "run-1")
    assert json.loads(call(tools, "delete_schedule", later, schedule_id=stored.pk)) == {"deleted": stored.pk}
    assert not Schedule.objects.for_user("alice").exists()


def test_refusals_are_told_to_the_model() -> None:
    tools = ScheduleTools("alice")
    ctx = RunContext(run_id="r", session_id="s", user_id="alice")
    assert call(tools, "create_schedule", ctx, name="x", cron_expr="whenever", message="hi") == (
        "Not scheduled: Invalid cron expression: whenever (5 fields expected: minute hour day-of-month month day-of-week)"
    )
    assert call(tools, "create_schedule", ctx, name="x", cron_expr="* * * * *", message="hi", agent_id="ghost") == "Not scheduled: Invalid endpoint: agent 'ghost' not found"


def test_an_agent_cannot_reach_another_users_schedules() -> None:
    bobs = ScheduleTools("bob")
    created = json.loads(call(bobs, "create_schedule", RunContext(run_id="r", session_id="s", user_id="bob"), name="b", cron_expr="* * * * *", message="hi"))["created"]
    alices = ScheduleTools("alice")
    ctx = RunContext(run_id="r", session_id="s", user_id="alice")
    assert json.loads(call(alices, "list_schedules", ctx)) == {"schedules": []}
    assert call(alices, "delete_schedule", ctx, schedule_id=created["id"]) == "Not deleted: Schedule not found"
    assert call(alices, "update_schedule", ctx, schedule_id=created["id"], name="mine") == "Not updated: Schedule not found"
    # A toolkit built for bob never acts for alice's run.
    assert call(bobs, "delete_schedule", ctx, schedule_id=created["id"]) == "Not deleted: Schedule not found"
    assert Schedule.objects.for_user("bob").get(pk=created["id"]).name == "b"


@pytest.mark.django_db(transaction=True)  # the run reads the agent from its own thread
def test_a_database_agent_with_the_toolkit_schedules_from_its_run(client, jwt_server) -> None:
    definition_create(agent_id="planner", name="Planner", model="offline:demo", tools=["schedules"])
    args = json.dumps({"name": "weekly", "cron_expr": "0 8 * * 1", "message": "Plan my week", "agent_id": "planner"})
    response = client.post("/agents/planner/runs", data={"message": f"/call create_schedule {args}", "stream": "false"}, **auth(token("alice")))
    assert response.status_code == 200, response.content
    run = response.json()
    stored = Schedule.objects.for_user("alice").get(name="weekly")
    assert (stored.managed_by, stored.created_by_run_id, stored.created_by_session_id) == ("agent", run["run_id"], run["session_id"])
    assert (stored.target_type, stored.target_id, stored.user_id) == ("agent", "planner", "alice")
