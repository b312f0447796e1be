"""An operator's answers to a paused workflow run: resume it with their decision, or cancel it.

Both act as the run's owner would (``owner_principal``), through the one submit and cancel paths
the API uses: the resume is a continue with the answered step requirement, as a durable
background job (``adopt``: a run that paused inline gets a job of its own), and a bad answer is
refused before anything is queued.
"""
from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any

from django.db import transaction

from engine import InvalidContinuation
from jobs.services.jobs import job_cancel_paused
from agents.pipeline.runs import ComponentNotFound, RunNotContinuable, RunNotFound, cancel_for_caller
from agents.pipeline.submit import Accepted, submit_continue
from approvals.gate import AdminApprovalRequired
from approvals.services import owner_principal
from core.auth import OPERATOR
from sessions.models import Run, RunStatus, SessionType

from .workflows import paused_requirement

logger = logging.getLogger("agno_site.runs")

DECISIONS = {"step": ("confirm", "reject"), "error": ("retry", "skip")}
_CASTS = {"int": int, "float": float, "bool": lambda value: value.lower() in ("1", "true", "yes", "on")}


class NotResumable(Exception):
    """Said to the operator: why this run cannot be resumed (or cancelled) from the admin."""


def _paused_run(run_id: str) -> Run:
    run = Run.objects.unscoped("operator action: a paused workflow run of any user").filter(pk=run_id).first()
    if run is None or run.run_type != SessionType.WORKFLOW:
        raise NotResumable("The workflow run does not exist any more.")
    if run.status != RunStatus.PAUSED:
        raise NotResumable(f"Only a paused workflow run can be resumed or cancelled here; this one is {run.status}.")
    return run


def _user_input(fields: list[dict[str, Any]], values: Mapping[str, str]) -> dict[str, Any]:
    """The form's strings as the schema's types (a required field left empty stays missing, for
    the continue to refuse by name)."""
    answers: dict[str, Any] = {}
    for spec in fields:
        raw = (values.get(spec["name"]) or "").strip()
        if not raw:
            continue
        cast = _CASTS.get(spec.get("field_type", "str"), str)
        try:
            answers[spec["name"]] = cast(raw)
        except ValueError as exc:
            raise NotResumable(f"Field {spec['name']!r} expects {spec.get('field_type')}: {raw!r}") from exc
    return answers


def answered_requirement(requirement: dict[str, Any], *, decision: str, values: Mapping[str, str], choices: list[str], feedback: str) -> dict[str, Any]:
    """The paused requirement with the operator's answer, as a ``step_requirements`` item."""
    kind = requirement["kind"]
    if kind not in DECISIONS:
        raise NotResumable("This step waits on its agent's or team's own review; answer it through the API.")
    if decision not in DECISIONS[kind]:
        raise NotResumable(f"Choose one of: {', '.join(DECISIONS[kind])}.")
    answer = {key: copy.deepcopy(value) for key, value in requirement.items() if key != "kind"}
    if kind == "error":
        answer["decision"] = decision
        return answer
    answer["confirmed"] = decision == "confirm"
    if decision == "reject":
        if feedback:
            answer["rejection_feedback"] = feedback
        return answer
    if answer.get("requires_user_input"):
        answer["user_input"] = _user_input(answer.get("user_input_schema") or [], values)
    if answer.get("requires_route_selection"):
        answer["selected_choices"] = choices
    return answer


def workflow_run_resume(*, run_id: str, decision: str, values: Mapping[str, str], choices: list[str], feedback: str = "") -> Accepted:
    """Continue a paused workflow run with the operator's answer, as its owner, in the background."""
    run = _paused_run(run_id)
    requirement = paused_requirement(run)
    if requirement is None:
        raise NotResumable("The run is paused but waits on nothing this page can answer.")
    answer = answered_requirement(requirement, decision=decision, values=values, choices=choices, feedback=feedback)
    try:
        with transaction.atomic():
            accepted = submit_continue(
                principal=owner_principal(run.user_id), component_id=run.component_id, kind=SessionType.WORKFLOW, run_id=run.pk,
                session_id=run.session_id, tools=[answer], stream=False, background=True, adopt=True,
            )
    except (ComponentNotFound, RunNotFound, RunNotContinuable, InvalidContinuation, AdminApprovalRequired, ValueError) as exc:
        raise NotResumable(f"The run was not resumed: {exc}") from exc
    assert isinstance(accepted, Accepted)
    logger.info("operator resumed workflow run %s (%s)", run.pk, decision)
    return accepted


def workflow_run_cancel(*, run_id: str) -> None:
    """Cancel a paused workflow run: the API's cancel, as an operator, and then the paused run
    ends CANCELLED at once (one that paused inline has no job for that cancel to end)."""
    run = _paused_run(run_id)
    cancel_for_caller(principal=OPERATOR, run_id=run.pk, session_id=run.session_id)
    job_cancel_paused(run_id=run.pk, reason="cancelled by an operator")
    logger.info("operator cancelled paused workflow run %s", run.pk)
