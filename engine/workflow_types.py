"""What flows between workflow steps: ``StepInput`` and ``StepOutput`` (Agno's shapes).

A step gets a ``StepInput``: the workflow's input, the content of the step before it, every earlier
step's output by name, the caller's additional data, and the workflow's session state (the live
dict: a function step that changes it changes the workflow's). It gives back a ``StepOutput``;
``stop=True`` ends the workflow after it (as COMPLETED). Both round-trip through dicts, because a
paused workflow resumes from its stored output alone.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.output import json_copy


@dataclass
class StepOutput:
    content: Any = None
    step_name: str | None = None
    step_id: str | None = None
    step_type: str | None = None
    executor_type: str | None = None
    executor_name: str | None = None
    step_run_id: str | None = None
    metrics: dict[str, Any] | None = None
    success: bool = True
    error: str | None = None
    stop: bool = False
    # A container's (Parallel, Loop, Condition, Router, Steps) inner outputs, in order.
    steps: list[StepOutput] | None = None

    def deepest_content(self) -> Any:
        """The content of the last leaf step: what a container hands on to an agent step and what
        ends up as the workflow's content (Agno's ``_get_deepest_content_from_step_output``)."""
        current = self
        while current.steps:
            current = current.steps[-1]
        return current.content

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "content": json_copy(self.content),
            "step_name": self.step_name,
            "step_id": self.step_id,
            "step_type": self.step_type,
            "executor_type": self.executor_type,
            "executor_name": self.executor_name,
            "step_run_id": self.step_run_id,
            "metrics": json_copy(self.metrics),
            "success": self.success,
            "error": self.error,
            "stop": self.stop,
        }
        if self.steps:
            data["steps"] = [s.to_dict() for s in self.steps]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StepOutput:
        return cls(
            content=json_copy(data.get("content")),
            step_name=data.get("step_name"),
            step_id=data.get("step_id"),
            step_type=data.get("step_type"),
            executor_type=data.get("executor_type"),
            executor_name=data.get("executor_name"),
            step_run_id=data.get("step_run_id"),
            metrics=json_copy(data.get("metrics")),
            success=data.get("success", True),
            error=data.get("error"),
            stop=data.get("stop", False),
            steps=[cls.from_dict(s) for s in data["steps"]] if data.get("steps") else None,
        )


@dataclass
class StepInput:
    input: Any = None
    previous_step_content: Any = None
    previous_step_outputs: dict[str, StepOutput] = field(default_factory=dict)
    additional_data: dict[str, Any] | None = None
    session_state: dict[str, Any] = field(default_factory=dict)

    def get_input_as_string(self) -> str | None:
        return _as_text(self.input)

    def get_step_output(self, step_name: str) -> StepOutput | None:
        """An earlier step's output by name, searched through containers' inner steps too."""
        direct = self.previous_step_outputs.get(step_name)
        if direct is not None:
            return direct
        for output in self.previous_step_outputs.values():
            found = _find(output, step_name)
            if found is not None:
                return found
        return None

    def get_step_content(self, step_name: str) -> Any:
        """A named step's content; for a Parallel, ``{branch name: content}``; for another container,
        its last leaf's content."""
        output = self.get_step_output(step_name)
        if output is None:
            return None
        if output.step_type == "Parallel" and output.steps:
            return {s.step_name: s.deepest_content() for s in output.steps if s.step_name}
        return output.deepest_content()

    def get_last_step_content(self) -> Any:
        if not self.previous_step_outputs:
            return None
        return list(self.previous_step_outputs.values())[-1].deepest_content()

    def get_all_previous_content(self) -> str:
        return "\n\n".join(
            f"=== {name} ===\n{_as_text(out.content)}" for name, out in self.previous_step_outputs.items() if out.content
        )

    def to_dict(self) -> dict[str, Any]:
        """Agno's ``StepInput.to_dict`` (the session state is the workflow's, stored beside it)."""
        previous = self.previous_step_content
        return {
            "input": json_copy(self.input),
            "previous_step_outputs": {name: out.to_dict() for name, out in self.previous_step_outputs.items()},
            "previous_step_content": _as_text(previous) if previous not in (None, "") else None,
            "additional_data": json_copy(self.additional_data),
        }


def _find(output: StepOutput, step_name: str) -> StepOutput | None:
    for inner in output.steps or []:
        if inner.step_name == step_name:
            return inner
        found = _find(inner, step_name)
        if found is not None:
            return found
    return None


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return json.dumps(value, indent=2, default=str, ensure_ascii=False)
    return str(value)


def content_type_of(content: Any) -> str:
    """The ``content_type`` of a step's or workflow's content: ``str``, else the value's type."""
    return "str" if content is None or isinstance(content, str) else type(content).__name__
