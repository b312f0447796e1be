"""``HumanReview``: every human-in-the-loop setting of a workflow step, in one object (v3).

v2 took these as flat keyword arguments of ``Step``, ``Steps``, ``Loop``, ``Condition`` and
``Router``; v3 refuses them and names ``HumanReview`` in the error (``hitl_max_retries`` became
``max_retries``, ``hitl_timeout`` became ``timeout``).
"""
from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from engine.hitl import is_pending

ON_REJECT = ("skip", "cancel", "else", "retry")
ON_ERROR = ("fail", "skip", "pause")
ON_TIMEOUT = ("cancel", "skip", "approve")

FLAT_REVIEW_KWARGS = {
    "requires_confirmation": "requires_confirmation",
    "confirmation_message": "confirmation_message",
    "on_reject": "on_reject",
    "requires_user_input": "requires_user_input",
    "user_input_message": "user_input_message",
    "user_input_schema": "user_input_schema",
    "allow_multiple_selections": "allow_multiple_selections",
    "requires_output_review": "requires_output_review",
    "output_review_message": "output_review_message",
    "requires_iteration_review": "requires_iteration_review",
    "iteration_review_message": "iteration_review_message",
    "on_error": "on_error",
    "hitl_max_retries": "max_retries",
    "hitl_timeout": "timeout",
    "on_timeout": "on_timeout",
}

# Which review a step type supports (Agno's validate_human_review_for_*).
SUPPORTED_REVIEWS = {
    "Step": {"requires_confirmation", "requires_user_input", "requires_output_review"},
    "Router": {"requires_confirmation", "requires_user_input", "requires_output_review"},
    "Loop": {"requires_confirmation", "requires_iteration_review"},
    "Condition": {"requires_confirmation"},
    "Steps": {"requires_confirmation"},
}
_FLAGS = ("requires_confirmation", "requires_user_input", "requires_output_review", "requires_iteration_review")


def reject_flat_review_kwargs(owner: str, given: Mapping[str, Any]) -> None:
    """A v2 flat HITL keyword raises a TypeError naming ``HumanReview``; anything else is just unknown."""
    for key in given:
        if key in FLAT_REVIEW_KWARGS:
            raise TypeError(
                f"{owner}({key}=...) was removed in v3: pass human_review=HumanReview({FLAT_REVIEW_KWARGS[key]}=...)"
            )
        raise TypeError(f"{owner}() got an unexpected keyword argument {key!r}")


@dataclass
class HumanReview:
    """What a human must do around a step, and what happens when they do not.

    ``requires_confirmation`` pauses before the step (``on_reject``: "skip" the step, "cancel" the
    workflow, "else" run a Condition's else branch, "retry" for an output review);
    ``requires_user_input`` pauses for values of ``user_input_schema`` (a list of
    ``{name, field_type, description, required}``), given to the step as ``additional_data
    ["user_input"]``; ``requires_output_review`` (a bool or ``fn(step_output) -> bool``) pauses
    after the step with its output; ``requires_iteration_review`` pauses a Loop after each
    iteration. ``on_error``: "fail" ends the workflow in ERROR, "skip" goes on without the step,
    "pause" asks a human to retry or skip. ``max_retries`` bounds rejected-and-retried reviews.
    ``timeout`` (seconds): a review answered later follows ``on_timeout`` ("cancel", "skip",
    "approve").
    """

    requires_confirmation: bool = False
    confirmation_message: str | None = None
    requires_user_input: bool = False
    user_input_message: str | None = None
    user_input_schema: list[dict[str, Any]] | None = None
    allow_multiple_selections: bool = False
    requires_output_review: Any = False
    output_review_message: str | None = None
    requires_iteration_review: bool = False
    iteration_review_message: str | None = None
    on_reject: str = "skip"
    on_error: str = "fail"
    max_retries: int = 3
    timeout: int | None = None
    on_timeout: str = "cancel"

    def __post_init__(self) -> None:
        for name, allowed in (("on_reject", ON_REJECT), ("on_error", ON_ERROR), ("on_timeout", ON_TIMEOUT)):
            value = getattr(self, name)
            value = getattr(value, "value", value)  # an Enum member, as Agno's OnReject
            if value not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
            setattr(self, name, value)
        if self.requires_output_review and self.requires_iteration_review:
            raise ValueError("requires_output_review and requires_iteration_review cannot both be set")
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError("timeout must be > 0")

    def validate_for(self, owner: str) -> None:
        supported = SUPPORTED_REVIEWS.get(owner, set())
        for flag in _FLAGS:
            if getattr(self, flag) and flag not in supported:
                raise ValueError(f"{flag} is not supported on {owner}. Supported: {', '.join(sorted(supported)) or 'none'}.")

    def to_dict(self) -> dict[str, Any]:
        return {
            "requires_confirmation": self.requires_confirmation,
            "confirmation_message": self.confirmation_message,
            "requires_user_input": self.requires_user_input,
            "user_input_message": self.user_input_message,
            "user_input_schema": self.user_input_schema,
            "allow_multiple_selections": self.allow_multiple_selections,
            "requires_output_review": self.requires_output_review if isinstance(self.requires_output_review, bool) else True,
            "output_review_message": self.output_review_message,
            "requires_iteration_review": self.requires_iteration_review,
            "iteration_review_message": self.iteration_review_message,
            "on_reject": self.on_reject,
            "on_error": self.on_error,
            "max_retries": self.max_retries,
            "timeout": self.timeout,
            "on_timeout": self.on_timeout,
        }


def pauses(review: HumanReview) -> bool:
    """Whether this review can pause a run (an ``on_error`` of "fail" or "skip" never does)."""
    return any(bool(getattr(review, flag)) for flag in _FLAGS) or review.on_error == "pause"


class WorkflowPause(Exception):
    """Raised inside a run where a human is needed; the run stores ``requirement`` and pauses.

    ``output`` is what the paused step produced already (an output review, a loop iteration),
    kept in the run's ``step_results`` (or, for a nested step, its container's frame) so a
    continue can accept, replace or discard it. ``frames`` is the way back to a nested step: one
    dict per container around it, outermost first, each added by its container on the way out
    (which child paused, what ran before it, the branch, route or iteration it was in).
    """

    def __init__(self, requirement: dict[str, Any], *, error: bool = False, output: Any = None) -> None:
        super().__init__(requirement.get("step_name"))
        self.requirement = requirement
        self.error = error
        self.output = output
        self.frames: list[dict[str, Any]] = []


def _stamp(now: float, timeout: int | None) -> str | None:
    if timeout is None:
        return None
    return datetime.fromtimestamp(now + timeout, tz=timezone.utc).isoformat()


def user_input_fields(review: HumanReview) -> list[dict[str, Any]] | None:
    """``user_input_schema`` as Agno's UserInputField dicts (``value`` empty until answered)."""
    if not review.requires_user_input:
        return None
    fields = []
    for item in review.user_input_schema or []:
        field = {
            "name": item["name"], "field_type": item.get("field_type", "str"), "description": item.get("description"),
            "value": None, "required": item.get("required", True),
        }
        if item.get("allowed_values") is not None:
            field["allowed_values"] = list(item["allowed_values"])
        fields.append(field)
    return fields


def step_requirement(step: Any, index: int, step_input: Any, now: float, **values: Any) -> dict[str, Any]:
    """A StepRequirement dict in Agno's ``to_dict`` shape (what WorkflowPaused and the run carry)."""
    review: HumanReview = step.human_review
    requirement: dict[str, Any] = {
        "step_id": step.step_id,
        "step_name": step.name,
        "step_index": index,
        "step_type": step.step_type,
        "requires_confirmation": bool(review.requires_confirmation),
        "confirmation_message": review.confirmation_message,
        "confirmed": None,
        "on_reject": review.on_reject,
        "requires_user_input": False,
        "user_input_message": None,
        "user_input": None,
        "requires_route_selection": False,
        "available_choices": None,
        "allow_multiple_selections": review.allow_multiple_selections,
        "selected_choices": None,
        "requires_output_review": False,
        "output_review_message": None,
        "is_post_execution": False,
        "rejection_feedback": None,
        "retry_count": 0,
        "max_retries": review.max_retries,
        "timeout_at": _stamp(now, review.timeout),
        "on_timeout": review.on_timeout,
    }
    requirement.update(values)
    requirement["step_input"] = step_input.to_dict()
    return requirement


def before_requirement(step: Any, index: int, step_input: Any, now: float) -> dict[str, Any] | None:
    """The review a step needs before it runs, if any: confirmation, user input (Step) or a route
    choice (Router with ``requires_user_input``)."""
    review: HumanReview = step.human_review
    if step.step_type == "Router" and review.requires_user_input:
        return step_requirement(
            step, index, step_input, now, requires_confirmation=False, requires_route_selection=True,
            available_choices=[c.name for c in step.choices], user_input_message=review.user_input_message,
        )
    if step.step_type == "Step" and review.requires_user_input:
        return step_requirement(
            step, index, step_input, now, requires_user_input=True, user_input_message=review.user_input_message,
            user_input_schema=user_input_fields(review),
        )
    if review.requires_confirmation:
        return step_requirement(step, index, step_input, now)
    return None


def output_requirement(step: Any, index: int, step_input: Any, output: Any, now: float, retry_count: int) -> dict[str, Any] | None:
    """The review of a Step's or Router's output, after it ran (``requires_output_review`` may be
    a predicate of the output)."""
    review: HumanReview = step.human_review
    wanted = review.requires_output_review
    if callable(wanted):
        wanted = wanted(output)
    if not wanted:
        return None
    message = review.output_review_message or f"Review output of step '{step.name}'?"
    return step_requirement(
        step, index, step_input, now, requires_confirmation=True, confirmation_message=message,
        requires_output_review=True, output_review_message=message, is_post_execution=True,
        step_output=output.to_dict(), retry_count=retry_count,
    )


def iteration_requirement(loop: Any, index: int, iteration: int, step_input: Any, output: Any, now: float) -> dict[str, Any]:
    review: HumanReview = loop.human_review
    message = review.iteration_review_message or f"Loop '{loop.name}' completed iteration {iteration}/{loop.max_iterations}. Continue?"
    return step_requirement(
        loop, index, step_input, now, requires_confirmation=True, confirmation_message=message,
        requires_output_review=True, output_review_message=message, is_post_execution=True,
        step_output=output.to_dict(), iteration=iteration,
    )


def executor_requirement(step: Any, index: int, step_input: Any, run_output: Mapping[str, Any], now: float) -> dict[str, Any]:
    """An agent or team step whose tools wait for a human: the run's open RunRequirements, for the
    caller to answer as it would the agent's own (Agno's executor pause)."""
    open_requirements = [
        copy.deepcopy(r) for r in run_output.get("requirements") or [] if is_pending(r.get("tool_execution") or {})
    ]
    return step_requirement(
        step, index, step_input, now, requires_confirmation=False, requires_executor_input=True,
        executor_requirements=open_requirements, executor_id=run_output.get("agent_id") or run_output.get("team_id"),
        executor_name=step.executor_name, executor_run_id=run_output["run_id"], executor_type=step.executor_type,
        executor_session_id=run_output.get("session_id"),
    )


def error_requirement(step: Any, index: int, message: str, error_type: str, retry_count: int) -> dict[str, Any]:
    """Agno's ErrorRequirement: a failed step waits for ``decision`` "retry" or "skip"."""
    return {
        "step_id": step.step_id, "step_name": step.name, "step_index": index, "error_message": message,
        "error_type": error_type, "retry_count": retry_count, "max_retries": step.human_review.max_retries, "decision": None,
    }


def timed_out(requirement: Mapping[str, Any], now: float) -> bool:
    stamp = requirement.get("timeout_at")
    if not stamp:
        return False
    return now >= datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()


def missing_user_input(requirement: Mapping[str, Any]) -> list[str]:
    """Required fields of a user-input requirement without a value; a type mismatch raises."""
    values = requirement.get("user_input") or {}
    fields = requirement.get("user_input_schema")
    if not fields:
        return [] if values else ["user_input"]
    missing = []
    for field in fields:
        value = values.get(field["name"])
        if value is None or value == "":
            if field.get("required", True):
                missing.append(field["name"])
            continue
        expected = _TYPES.get(field.get("field_type", "str"))
        if expected is not None and (not isinstance(value, expected) or (isinstance(value, bool) and bool not in expected)):
            raise ValueError(f"Field '{field['name']}' expected {field.get('field_type')}, got {type(value).__name__}")
        allowed = field.get("allowed_values")
        if allowed is not None and value not in allowed:
            raise ValueError(f"Field '{field['name']}' value {value!r} is not in allowed values: {allowed}")
    return missing


_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,), "int": (int,), "float": (int, float), "bool": (bool,), "list": (list,), "dict": (dict,),
}


# What a continue may set on a stored requirement (the rest is the run's own record).
DECISION_KEYS = ("confirmed", "user_input", "selected_choices", "rejection_feedback", "edited_output")


@dataclass
class Resume:
    """What a continue does, decided from the stored run alone.

    The run goes on from top-level step ``index``; ``run_step`` runs it without asking again
    (its review was answered). ``step_id`` is the paused step's (a nested one's own); a nested
    step that is not run again (skipped, or its output accepted) has ``skip_step``, with the
    output it keeps in ``kept``. ``extra`` goes into that step's ``additional_data``
    (``user_input``, ``rejection_feedback``, ``previous_output``); ``retry_count`` is carried
    into the step's next review. ``cancel`` or ``error`` end the run instead.
    """

    index: int
    run_step: bool = False
    extra: dict[str, Any] | None = None
    else_branch: bool = False
    selection: list[str] | None = None
    loop_outputs: list[dict[str, Any]] | None = None
    loop_iteration: int = 0
    retry_count: int = 0
    error_retries: int = 0
    cancel: str | None = None
    error: str | None = None
    # An accepted output that asked to stop the workflow: it completes without more steps.
    finish: bool = False
    # A paused executor's answers (RunRequirement dicts), and the continued run of it, prepared
    # by the caller before anything runs (bad answers are refused up front).
    executor_requirements: list[dict[str, Any]] | None = None
    executor_run: Any = None
    step_id: str | None = None
    skip_step: bool = False
    kept: list[Any] | None = None
    # Set once the paused step has been run again (a Loop's next iteration asks afresh).
    consumed: bool = False


def decide(
    output: dict[str, Any],
    step_requirements: list[Mapping[str, Any]] | None,
    error_decisions: list[Mapping[str, Any]] | None,
    now: float,
) -> Resume:
    """Apply the caller's answers to a paused run's stored output (in place) and say how it goes on.

    Raises ``ValueError`` (``InvalidContinuation`` at the caller) for answers that do not fit: an
    unknown step, a review left unanswered, user input that does not match its schema.
    """
    index = output.get("paused_step_index")
    if index is None:
        raise ValueError("Cannot continue run - no paused step index found")
    errors = output.get("error_requirements") or []
    if errors and errors[-1].get("decision") is None:
        return _decide_error(errors[-1], list(error_decisions or []) + list(step_requirements or []), index)
    requirements = output.get("step_requirements") or []
    if not requirements:
        raise ValueError("Cannot continue run - it has no step requirements")
    active = requirements[-1]
    supplied_list = list(step_requirements or [])
    # Agno's clients send the run's whole list back (AgentOSClient.continue_workflow_run with the
    # run's step_requirements): the entries before the last are the resolved history of earlier
    # pauses, and only the last answers the active one, as Agno's continue_run reads it.
    if len(supplied_list) == len(requirements) > 1:
        supplied_list = supplied_list[-1:]
    if active.get("requires_executor_input"):
        return _decide_executor(active, supplied_list, index)
    for supplied in supplied_list:
        if supplied.get("step_id") not in (None, active["step_id"]):
            raise ValueError(f"Unknown step requirement for step {supplied.get('step_id')!r}")
        for key in DECISION_KEYS:
            if key in supplied and supplied[key] is not None:
                active[key] = copy.deepcopy(supplied[key])
    if timed_out(active, now):
        active["timed_out"] = True
        if active["on_timeout"] == "approve":
            active["confirmed"] = True
        else:
            active["confirmed"], active["on_reject"] = False, active["on_timeout"]
    return _decide_step(output, active, index)


def _decide_error(requirement: dict[str, Any], supplied: list[Mapping[str, Any]], index: int) -> Resume:
    for answer in supplied:
        if answer.get("step_id") in (None, requirement["step_id"]) and answer.get("decision") is not None:
            requirement["decision"] = answer["decision"]
    decision = requirement.get("decision")
    if decision not in ("retry", "skip"):
        raise ValueError(f"Cannot continue run - step {requirement['step_name']!r} failed: decide \"retry\" or \"skip\"")
    if decision == "skip":
        return Resume(index=index + 1)
    if requirement["retry_count"] >= requirement["max_retries"]:
        return Resume(index=index, error=f"Max retries ({requirement['max_retries']}) reached for step '{requirement['step_name']}': {requirement['error_message']}")
    return Resume(index=index, run_step=True, error_retries=requirement["retry_count"] + 1)


def _decide_executor(active: dict[str, Any], supplied: list[Mapping[str, Any]], index: int) -> Resume:
    answers = [r for item in supplied if item.get("step_id") in (None, active["step_id"]) for r in item.get("executor_requirements") or []]
    if not answers:
        raise ValueError(f"Cannot continue run - step {active['step_name']!r} waits on its executor: answer its executor_requirements")
    active["executor_requirements"] = copy.deepcopy(answers)
    return Resume(index=index, run_step=True, executor_requirements=copy.deepcopy(answers))


def _decide_step(output: dict[str, Any], active: dict[str, Any], index: int) -> Resume:
    name = active["step_name"]
    confirmed = active.get("confirmed")
    post = active.get("is_post_execution")
    results: list[dict[str, Any]] = output.setdefault("step_results", [])
    if confirmed is False:
        return _rejected(active, results, index)
    if active.get("requires_route_selection"):
        choices = active.get("selected_choices") or []
        if not choices:
            raise ValueError(f"Cannot continue run - unresolved step requirements: [{name!r}] needs selected_choices")
        unknown = [c for c in choices if c not in (active.get("available_choices") or [])]
        if unknown or (len(choices) > 1 and not active.get("allow_multiple_selections")):
            raise ValueError(f"Invalid selected_choices {choices} for router {name!r}: choose from {active.get('available_choices')}")
        return Resume(index=index, run_step=True, selection=list(choices))
    if active.get("requires_user_input"):
        missing = missing_user_input(active)
        if missing:
            raise ValueError(f"Cannot continue run - step {name!r} needs user input: {missing}")
        if active.get("requires_confirmation") and confirmed is None:
            raise ValueError(f"Cannot continue run - unresolved step requirements: [{name!r}]")
        for field in active.get("user_input_schema") or []:
            field["value"] = active["user_input"].get(field["name"])
        return Resume(index=index, run_step=True, extra={"user_input": dict(active["user_input"])})
    if confirmed is None:
        raise ValueError(f"Cannot continue run - unresolved step requirements: [{name!r}]")
    if not post:
        return Resume(index=index, run_step=True)
    # An output (or loop iteration) a human accepted: keep it, edited if they edited it.
    if active.get("edited_output") is not None and results:
        results[-1]["content"] = active["edited_output"]
        active["step_output"]["content"] = active["edited_output"]
    if results and results[-1].get("stop"):
        return Resume(index=index + 1, finish=True)
    return Resume(index=index + 1)


def _rejected(active: dict[str, Any], results: list[dict[str, Any]], index: int) -> Resume:
    name, kind, post = active["step_name"], active["step_type"], active.get("is_post_execution")
    on_reject = active.get("on_reject", "skip")
    if on_reject == "cancel":
        return Resume(index=index, cancel=f"Workflow cancelled: Step '{name}' was rejected")
    if on_reject == "retry":
        if active.get("retry_count", 0) >= (active.get("max_retries") or 0):
            return Resume(index=index, cancel=f"Max retries ({active.get('max_retries')}) reached for step '{name}'")
        feedback = {"rejection_feedback": active["rejection_feedback"]} if active.get("rejection_feedback") else {}
        retry = active.get("retry_count", 0) + 1
        if not post:
            return Resume(index=index, retry_count=retry)
        rejected = results.pop() if results else {}
        if kind == "Loop":
            return Resume(
                index=index, run_step=True, extra=feedback or None,
                loop_outputs=list(rejected.get("steps") or []), loop_iteration=int(active.get("iteration") or 0),
            )
        previous = {"previous_output": _text(rejected.get("content"))} if rejected.get("content") is not None else {}
        return Resume(index=index, run_step=True, extra={**feedback, **previous} or None, retry_count=retry)
    if on_reject == "else" and kind == "Condition" and not post:
        return Resume(index=index, run_step=True, else_branch=True)
    # "skip" (and "else" anywhere but a Condition's confirmation): go on without the step.
    if post and results:
        results.pop()
    return Resume(index=index + 1)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
