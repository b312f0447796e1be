"""``HumanReview``: every human-in-the-loop setting of a workflow step, in one object (v3).

v2 took these as flat keyword arguments of ``Step``, ``Steps``, ``Loop``, ``Condition`` and
``Router``; v3 refuses them and names ``HumanReview`` in the error (``hitl_max_retries`` became
``max_retries``, ``hitl_timeout`` became ``timeout``).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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
_SUPPORTED = {
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
        supported = _SUPPORTED.get(owner, set())
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
