"""The ``schedules`` toolkit: an agent creates, lists, updates and deletes its user's schedules.

Every call acts for the run's user only (the toolkit is built for them, and the run's own user id
must be theirs), through the same services as the API, so the same validation holds. It acts with
the run's principal (``RunContext.principal``: whoever started the run, with their scopes), never
with more: creating a schedule needs ``schedules:write`` and the right to run its target (the one
authority, agents.pipeline.authority), and the schedule keeps those rights for its fires. A run
that carries no principal (started outside the pipeline) writes nothing. What an agent writes
carries its provenance: ``managed_by="agent"`` and the run and session that created (or last
updated) the schedule.
"""
from __future__ import annotations

import json
from typing import Any

from engine.tools import tool
from engine.tools.toolkit import Toolkit

from .models import ManagedBy, Schedule
from .services.schedules import (
    Provenance,
    ScheduleConflict,
    ScheduleForbidden,
    ScheduleInvalid,
    ScheduleNotFound,
    check_scope,
    schedule_create,
    schedule_delete,
    schedule_update,
)

REFUSALS = (ScheduleInvalid, ScheduleConflict, ScheduleNotFound, ScheduleForbidden)


def _described(schedule: Schedule) -> dict[str, Any]:
    return {
        "id": schedule.pk, "name": schedule.name, "cron_expr": schedule.cron_expr, "timezone": schedule.timezone,
        "endpoint": schedule.endpoint, "message": (schedule.payload or {}).get("message"), "enabled": schedule.enabled,
        "next_run_at": schedule.next_run_at.isoformat() if schedule.next_run_at else None, "managed_by": schedule.managed_by,
        "disabled_reason": schedule.disabled_reason,
    }


class ScheduleTools(Toolkit):
    id = "schedules"
    name = "schedules"
    instructions = (
        "You can schedule work for the user: a cron expression (5 fields, in the user's time zone) and the message an "
        "agent receives at each fire. Confirm times in the user's time zone."
    )

    def __init__(self, user_id: str | None) -> None:
        self.user_id = user_id
        super().__init__()

    def _owner(self, run_context: Any) -> str | None:
        run_user = getattr(run_context, "user_id", None)
        if run_context is not None and run_user != self.user_id:
            raise ScheduleNotFound()  # a toolkit built for another user never acts for this run
        return self.user_id

    @staticmethod
    def _principal(run_context: Any, action: str) -> Any:
        """The run's principal, holding ``schedules:<action>`` (ScheduleForbidden otherwise)."""
        principal = getattr(run_context, "principal", None)
        if principal is None:
            raise ScheduleForbidden("This run carries no credentials to act on schedules with")
        check_scope(principal, action)
        return principal

    @staticmethod
    def _provenance(run_context: Any) -> Provenance:
        return Provenance(managed_by=ManagedBy.AGENT, run_id=getattr(run_context, "run_id", None), session_id=getattr(run_context, "session_id", None))

    @tool
    def create_schedule(
        self, name: str, cron_expr: str, message: str, agent_id: str = "assistant", timezone: str = "UTC",
        description: str = "", run_context: Any = None,
    ) -> str:
        """Schedule an agent run for the user, repeating on a cron expression.

        Args:
            name: A short name, unique among the user's schedules.
            cron_expr: When it runs: 5-field cron (minute hour day-of-month month day-of-week), e.g. "0 9 * * 1-5".
            message: What the agent is asked at each run.
            agent_id: The agent that runs it.
            timezone: The IANA time zone the cron expression is read in, e.g. "Europe/Paris".
            description: What it is for (optional).
        """
        try:
            schedule = schedule_create(
                owner_id=self._owner(run_context), principal=self._principal(run_context, "write"), name=name, endpoint=f"/agents/{agent_id}/runs", cron_expr=cron_expr,
                payload={"message": message}, timezone_name=timezone, description=description or None,
                provenance=self._provenance(run_context),
            )
        except REFUSALS as exc:
            return f"Not scheduled: {exc}"
        return json.dumps({"created": _described(schedule)})

    @tool
    def list_schedules(self, run_context: Any = None) -> str:
        """List the user's schedules (name, cron, time zone, next run, enabled)."""
        try:
            owner = self._owner(run_context)
            self._principal(run_context, "read")
        except REFUSALS as exc:
            return f"Not listed: {exc}"
        if owner is None:
            return json.dumps({"schedules": []})
        schedules = Schedule.objects.for_user(owner).order_by("name")[:200]
        return json.dumps({"schedules": [_described(schedule) for schedule in schedules]})

    @tool
    def update_schedule(
        self, schedule_id: str, name: str = "", cron_expr: str = "", message: str = "", timezone: str = "",
        enabled: bool | None = None, run_context: Any = None,
    ) -> str:
        """Change one of the user's schedules; leave a field empty to keep it.

        Args:
            schedule_id: The schedule's id (from list_schedules).
            name: A new name.
            cron_expr: A new cron expression.
            message: A new message for the agent.
            timezone: A new time zone.
            enabled: False pauses it, true resumes it.
        """
        changes: dict[str, Any] = {key: value for key, value in (("name", name), ("cron_expr", cron_expr), ("timezone", timezone)) if value}
        if message:
            changes["payload"] = {"message": message}
        if enabled is not None:
            changes["enabled"] = enabled
        try:
            owner = self._owner(run_context)
            if owner is None:
                raise ScheduleNotFound()
            schedule = schedule_update(
                user=owner, schedule_id=schedule_id, changes=changes, principal=self._principal(run_context, "write"),
                provenance=self._provenance(run_context),
            )
        except REFUSALS as exc:
            return f"Not updated: {exc}"
        return json.dumps({"updated": _described(schedule)})

    @tool
    def delete_schedule(self, schedule_id: str, run_context: Any = None) -> str:
        """Delete one of the user's schedules and its history.

        Args:
            schedule_id: The schedule's id (from list_schedules).
        """
        try:
            owner = self._owner(run_context)
            if owner is None:
                raise ScheduleNotFound()
            schedule_delete(user=owner, schedule_id=schedule_id, principal=self._principal(run_context, "delete"))
        except REFUSALS as exc:
            return f"Not deleted: {exc}"
        return json.dumps({"deleted": schedule_id})
