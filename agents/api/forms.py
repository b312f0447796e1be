"""Parsing the form fields of run, continue and resume requests exactly as AgentOS does (a run's
fields: agents.pipeline.run_requests, the builder the scheduler shares)."""
from __future__ import annotations

from typing import Any

from django.core.exceptions import RequestDataTooBig
from rest_framework.exceptions import UnsupportedMediaType

from core.api import params
from core.api.errors import BadRequest
from core.api.parsers import fields_too_large, load_json

from engine import InvalidContinuation
from engine.checkpoints import parse_continue_from
from engine.hitl import supplied_decisions
from ..pipeline.run_requests import bounded_text, object_or_dropped, run_request_build
from ..pipeline.runs import Continuation, RunRequest


def form_data(request) -> Any:
    """The form fields; a JSON (or any non-form) body reads as an empty form, as in AgentOS.
    Fields above Django's ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (kept above the longest message and
    the inline media the upload bounds admit) are a 413 here, before anything is stored."""
    try:
        return request.data
    except UnsupportedMediaType:
        return {}
    except RequestDataTooBig:
        raise fields_too_large() from None


def _file_parts(request) -> list[Any]:
    """The ``files`` parts; none for a body that is not a form (read as an empty form, which is
    then refused for its missing message, as AgentOS refuses it)."""
    try:
        return request.FILES.getlist("files")
    except UnsupportedMediaType:
        return []


def parse_run_form(request) -> tuple[RunRequest, bool]:
    """A RunRequest and the ``background`` flag from ``POST /agents/{id}/runs`` (and the team and
    workflow routes): its form fields and file parts, read by the one builder."""
    return run_request_build(form_data(request), uploads=_file_parts(request))


def parse_tools_field(data: Any) -> list[dict[str, Any]] | None:
    """The human's decisions of a continue form: ``tools`` (ToolExecution objects) and/or
    ``requirements`` (RunRequirement objects, as AgentOSClient's continue_team_run sends them),
    as ToolExecution dicts; None when there are none."""
    tools = _json_objects(data, "tools", "tool execution objects")
    requirements = _json_objects(data, "requirements", "run requirement objects")
    if requirements is None:
        return tools
    try:
        return list(supplied_decisions(tools, requirements).values())
    except InvalidContinuation as exc:
        raise BadRequest(str(exc)) from None


def parse_step_requirements(data: Any) -> list[dict[str, Any]] | None:
    """A workflow continue form's answers to its review: ``step_requirements`` (StepRequirement
    objects, as AgentOSClient's continue_workflow_run sends them); None when there are none."""
    return _json_objects(data, "step_requirements", "step requirement objects")


def parse_continuation(data: Any) -> Continuation:
    """The unified-continue fields of a continue form, with AgentOS's 400s for what conflicts."""
    continue_from = parse_continue_from(data.get("continue_from"))
    fork = params.boolean(data, "fork", False, where="body")
    regenerate = params.boolean(data, "regenerate", False, where="body")
    replace_original = None if data.get("replace_original") in (None, "") else params.boolean(data, "replace_original", True, where="body")
    text = bounded_text(data, "input") or None
    instructions = bounded_text(data, "additional_instructions") or None
    if text is not None and instructions is not None:
        raise BadRequest("Provide either `additional_instructions` or `input`, not both.")
    if replace_original is not None and not regenerate:
        raise BadRequest("`replace_original` only makes sense with `regenerate=True`.")
    if regenerate and fork:
        raise BadRequest("`regenerate=True` derives the destructive/preserving choice from `replace_original`; do not pass `fork=True` directly.")
    return Continuation(
        continue_from=continue_from, fork=fork, regenerate=regenerate, replace_original=replace_original, input=text or instructions,
        factory_input=object_or_dropped(data, "factory_input"),
    )


def _json_objects(data: Any, name: str, what: str) -> list[dict[str, Any]] | None:
    raw = data.get(name)
    if raw in (None, ""):
        return None
    try:
        value = load_json(raw, ["body", name])
    except (TypeError, ValueError):
        raise BadRequest(f"Invalid JSON in {name} field") from None
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise BadRequest(f"Invalid structure or content for {name}: expected a JSON array of {what}")
    return value
